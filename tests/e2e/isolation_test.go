package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestIsolationMatrix has two other users, one owned by the operator and
// one ownerless, try every endpoint on the accounts, transactions,
// contracts, tokens and user of a first user: ids in paths, ids and
// addresses in bodies (from, dependsOn, waitForAsset, contractId of batch
// calls, PUT /accounts/default) and the user endpoints. Each gets 404 (403
// for rate limits, operator only), lists show nothing of the first user,
// and nothing of the first user changes.
func TestIsolationMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	dir := t.TempDir()
	s := startService(t, dir)
	op := s.Token
	opID := s.must(200, "GET", "/users/me", op, nil).(map[string]any)["id"].(string)
	tokAddr := ""
	for _, c := range s.must(200, "GET", "/contracts", op, nil).([]any) {
		if c := c.(map[string]any); c["bwtype"] == "erc20" {
			tokAddr = c["address"].(string)
		}
	}

	// The first user A and its objects.
	a := s.must(201, "POST", "/users", op, map[string]any{"auth": true, "account": true}).(map[string]any)
	aID, aTok := a["id"].(string), a["token"].(string)
	aAcct := a["account"].(map[string]any)
	aAcctID, aAddr := aAcct["id"].(string), aAcct["address"].(string)
	aAcct2 := s.must(201, "POST", "/accounts", aTok, nil).(map[string]any)["id"].(string)
	aName := "A-only-" + uuid.NewString()[:8]
	aCt := s.must(201, "PUT", "/contracts", aTok, map[string]any{"name": aName, "network": "dev", "address": tokAddr, "type": "erc20"}).(map[string]any)["id"].(string)
	eventually(t, 30*time.Second, "faucet funds A", func() bool {
		return s.must(200, "GET", "/accounts/default/balance", aTok, nil).(string) != "0"
	})
	aTx := s.must(202, "POST", "/tokens/"+aCt+"/transfers", aTok, map[string]any{"to": aAddr, "value": "0"}).(map[string]any)["id"].(string)
	s.waitTerminal(aTx, aTok, 60*time.Second)
	aWait := s.must(202, "POST", "/tokens/"+aCt+"/transfers", aTok, map[string]any{
		"to": aAddr, "value": "0", "waitForAsset": "ETH", "waitForValue": strings.Repeat("9", 30), "waitTimeout": 3600,
	}).(map[string]any)["id"].(string)
	// A pool without a treasury: nothing of A moves on its own.
	aPool := s.must(201, "POST", "/pools", aTok, map[string]any{"name": aName, "network": "dev", "size": 1}).(map[string]any)["id"].(string)
	before := userState(t, s, aTok)

	intruders := map[string]map[string]any{
		"owned":     s.must(201, "POST", "/users", op, map[string]any{"auth": true, "account": true}).(map[string]any),
		"ownerless": s.must(201, "POST", "/users", op, map[string]any{"auth": true, "account": true, "ownerless": true}).(map[string]any),
	}
	tried := 0
	for name, u := range intruders {
		t.Run(name, func(t *testing.T) {
			tok := u["token"].(string)
			own := s.must(201, "PUT", "/contracts", tok, map[string]any{"name": "mine", "network": "dev", "address": tokAddr, "type": "erc20"}).(map[string]any)["id"].(string)
			ownAddr := u["account"].(map[string]any)["address"].(string)
			xfer := func(extra string) string { return `{"to":"` + ownAddr + `","value":"0"` + extra + `}` }
			type attempt struct {
				method, path string
				body         any
				status       int
				code, field  string
			}
			attempts := []attempt{
				{"GET", "/accounts/" + aAcctID, nil, 404, "not_found", ""},
				{"GET", "/accounts/" + aAcct2, nil, 404, "not_found", ""},
				{"GET", "/accounts/" + aAcctID + "/balance", nil, 404, "not_found", ""},
				{"PUT", "/accounts/default", `{"account":"` + aAcct2 + `"}`, 404, "not_found", "account"},
				{"GET", "/transactions/" + aTx, nil, 404, "not_found", ""},
				{"GET", "/transactions/" + aWait, nil, 404, "not_found", ""},
				{"DELETE", "/transactions/" + aWait, nil, 404, "not_found", ""},
				{"GET", "/contracts/" + aCt, nil, 404, "not_found", ""},
				{"POST", "/contracts/" + aCt + "/send/transfer", `{"arg":["` + ownAddr + `","0"]}`, 404, "not_found", ""},
				{"POST", "/contracts/" + aCt + "/call/balanceOf", `{"arg":"` + aAddr + `"}`, 404, "not_found", ""},
				{"GET", "/contracts/" + aCt + "/events", nil, 404, "not_found", ""},
				{"GET", "/tokens/" + aCt, nil, 404, "not_found", ""},
				{"GET", "/tokens/" + aCt + "/balances/default", nil, 404, "not_found", ""},
				{"GET", "/tokens/" + aCt + "/balances/" + aAddr, nil, 404, "not_found", ""},
				{"GET", "/tokens/" + aCt + "/transfers", nil, 404, "not_found", ""},
				{"POST", "/tokens/" + aCt + "/transfers", xfer(""), 404, "not_found", ""},
				{"POST", "/tokens/" + own + "/transfers", xfer(`,"from":"` + aAcctID + `"`), 404, "not_found", "from"},
				{"POST", "/tokens/" + own + "/transfers", xfer(`,"from":"` + aAddr + `"`), 404, "not_found", "from"},
				{"POST", "/tokens/" + own + "/transfers", xfer(`,"dependsOn":["` + aTx + `"]`), 404, "not_found", "dependsOn"},
				{"POST", "/tokens/" + own + "/transfers", xfer(`,"waitForAsset":"` + aCt + `","waitForValue":"1"`), 404, "not_found", "waitForAsset"},
				{"POST", "/contracts/" + own + "/send/transfer", `{"arg":["` + ownAddr + `","0"],"from":"` + aAcct2 + `"}`, 404, "not_found", "from"},
				{"POST", "/contracts/network/dev/address/" + tokAddr + "/send/transfer", `{"type":"erc20","arg":["` + ownAddr + `","0"],"from":"` + aAddr + `"}`, 404, "not_found", "from"},
				{"POST", "/contracts/" + own + "/call/balanceOf", `{"arg":"` + aAddr + `","from":"` + aAcctID + `"}`, 404, "not_found", "from"},
				{"POST", "/users/" + aID + "/tokens", nil, 404, "not_found", ""},
				{"POST", "/users/" + opID + "/tokens", nil, 404, "not_found", ""},
				{"PUT", "/users/" + aID + "/limits", `{"perSecond":1,"perHour":1}`, 403, "forbidden", ""},
				{"GET", "/pools/" + aPool, nil, 404, "not_found", ""},
				{"PATCH", "/pools/" + aPool, `{"size":2}`, 404, "not_found", ""},
				{"DELETE", "/pools/" + aPool, nil, 404, "not_found", ""},
				{"POST", "/pools", `{"name":"mine","network":"dev","size":1,"treasury":"` + aAcctID + `"}`, 404, "not_found", "treasury"},
				{"POST", "/tokens/" + own + "/transfers", xfer(`,"pool":"` + aPool + `"`), 404, "not_found", "pool"},
				{"POST", "/contracts/" + own + "/send/transfer", `{"arg":["` + ownAddr + `","0"],"pool":"` + aPool + `"}`, 404, "not_found", "pool"},
				{"POST", "/contracts/network/dev/address/" + tokAddr + "/send/transfer", `{"type":"erc20","arg":["` + ownAddr + `","0"],"pool":"` + aPool + `"}`, 404, "not_found", "pool"},
			}
			for _, at := range attempts {
				r := s.call(at.method, at.path, tok, at.body)
				e, _ := r.Body["error"].(map[string]any)
				field, _ := e["field"].(string)
				if r.Status != at.status || e == nil || e["code"] != at.code || field != at.field {
					t.Errorf("%s %s: got %d %.300s; want %d %s field %q", at.method, at.path, r.Status, r.Raw, at.status, at.code, at.field)
				}
				// Echoing what the request said is no leak; anything else of A is.
				sent := at.path + " " + fmt.Sprint(at.body)
				if (strings.Contains(string(r.Raw), aAddr) && !strings.Contains(sent, aAddr)) || strings.Contains(string(r.Raw), aName) {
					t.Errorf("%s %s: the answer shows A's data: %.300s", at.method, at.path, r.Raw)
				}
			}
			tried += len(attempts)

			// Batch calls: A's contract and A's account fail that call alone.
			res := s.must(200, "POST", "/contracts/call", tok, map[string]any{"calls": []any{
				map[string]any{"contractId": aCt, "method": "decimals"},
				map[string]any{"contractId": own, "method": "balanceOf", "arg": aAddr, "from": aAcctID},
				map[string]any{"contractId": own, "method": "decimals"},
			}}).([]any)
			for i, want := range []string{"contractId", "from"} {
				e, _ := res[i].(map[string]any)["error"].(map[string]any)
				if e == nil || e["code"] != "not_found" || e["field"] != want {
					t.Errorf("batch call %d: %v, want not_found on %s", i, res[i], want)
				}
			}
			if res[2].(map[string]any)["result"] != "18" {
				t.Errorf("batch call on the intruder's own contract: %v", res[2])
			}
			// Lists and filters show nothing of A.
			for _, path := range []string{
				"/transactions?contractId=" + aCt, "/transactions?from=" + aAddr, "/contracts?text=" + aName,
				"/tokens?name=" + aName, "/transactions?pool=" + aPool, "/pools",
			} {
				if n := s.listLen(path, tok); n != 0 {
					t.Errorf("GET %s lists %d of A's objects", path, n)
				}
			}
			tried += 9
		})
	}

	after := userState(t, s, aTok)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("A's %s changed:\n before %s\n after  %s", k, v, after[k])
		}
	}
	if st := s.must(200, "GET", "/transactions/"+aWait, aTok, nil).(map[string]any)["status"]; st != "new" && st != "waiting" {
		t.Errorf("A's waiting transaction is %v", st)
	}
	t.Logf("isolation: %d attempts by 2 other users on A's objects", tried)
}

// userState is what a user sees of itself, by endpoint; transactions by id
// and status class (a waiting transaction may move from new to waiting).
func userState(t *testing.T, s *service, tok string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range []string{"/accounts", "/accounts/default", "/contracts", "/tokens", "/users/me", "/pools"} {
		raw, err := json.Marshal(s.must(200, "GET", p, tok, nil))
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(raw)
	}
	var txs []string
	for _, tx := range s.must(200, "GET", "/transactions?limit=1000", tok, nil).([]any) {
		tx := tx.(map[string]any)
		st := tx["status"].(string)
		if st == "new" || st == "waiting" {
			st = "pending"
		}
		txs = append(txs, tx["id"].(string)+":"+st)
	}
	out["/transactions"] = strings.Join(txs, ",")
	return out
}
