package http

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
)

// poolPayableABI is a contract with a payable method, for direct sends.
const poolPayableABI = `[{"type":"function","name":"deposit","stateMutability":"payable","inputs":[],"outputs":[]}]`

// TestSendThroughPool: on all three send routes, "pool" makes the
// transaction the engine's member's (from, account), carries the pool,
// the orderingKey and what it needs of the member (a transfer's token and
// amount, else ETH and the value) to Submit; a member that cannot cover it
// makes it wait for it, unless the request waits for something itself.
// GET /transactions?pool= hands the pool to the store's filter.
func TestSendThroughPool(t *testing.T) {
	env := newTestEnv(t)
	p := env.createPool(env.aliceToken, `{"name":"payouts","network":"dev","size":2}`)
	member := p.Members[1]
	env.engine.mu.Lock()
	env.engine.assign = func(pl *engine.Pool, need engine.PoolNeed) (engine.PoolAssignment, error) {
		if pl.ID != p.ID {
			t.Errorf("assign asked for pool %s", pl.ID)
		}
		return engine.PoolAssignment{Member: pl.Members[1], Wait: need.OrderingKey == "short"}, nil
	}
	env.engine.mu.Unlock()
	to := env.bobAcct.Address.Hex()
	token := env.aliceToken20.Address.Hex()
	direct := "/contracts/network/dev/address/" + common.HexToAddress("0xd0").Hex() + "/send/deposit"

	for i, c := range []struct {
		name, path, body string
		asset, value     string
		key              string
		waitFor          string // asset:value the transaction waits for
	}{
		{"transfer", "/tokens/" + env.aliceToken20.ID + "/transfers", `{"to":"` + to + `","value":"5","pool":"` + p.ID + `","orderingKey":"customer-7"}`,
			token, "5", "customer-7", token + ":5"}, // a token transfer always waits for the member's tokens
		{"send", "/contracts/" + env.aliceToken20.ID + "/send/transfer", `{"arg":["` + to + `","2"],"pool":"` + p.ID + `"}`,
			engine.AssetETH, "0", "", ""},
		{"direct send that waits", direct, `{"abi":` + poolPayableABI + `,"value":"9","pool":"` + p.ID + `","orderingKey":"short"}`,
			engine.AssetETH, "9", "short", "ETH:9"},
		{"transfer that waits", "/tokens/" + env.aliceToken20.ID + "/transfers", `{"to":"` + to + `","value":"6","pool":"` + p.ID + `","orderingKey":"short"}`,
			token, "6", "short", token + ":6"},
		{"transfer that waits for its own", "/tokens/" + env.aliceToken20.ID + "/transfers",
			`{"to":"` + to + `","value":"6","pool":"` + p.ID + `","orderingKey":"short","waitForAsset":"ETH","waitForValue":"100"}`,
			token, "6", "short", "ETH:100"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := env.do("POST", c.path, env.aliceToken, c.body)
			wantStatus(t, rec, http.StatusAccepted)
			var v engine.TransactionView
			decodeData(t, rec, &v)
			if v.From != member.Address || v.Pool != p.ID || v.OrderingKey != c.key {
				t.Errorf("view from %s pool %s key %q", v.From, v.Pool, v.OrderingKey)
			}
			subs := env.engine.submissions()
			if len(subs) != i+1 {
				t.Fatalf("%d submissions", len(subs))
			}
			tx := subs[i]
			if tx.AccountID != member.Account || tx.From.Hex() != member.Address || tx.PoolID != p.ID || tx.OrderingKey != c.key ||
				tx.PoolAsset != c.asset || tx.PoolValue == nil || tx.PoolValue.String() != c.value {
				t.Errorf("submitted account %s from %s pool %s key %q need %s %v", tx.AccountID, tx.From.Hex(), tx.PoolID, tx.OrderingKey, tx.PoolAsset, tx.PoolValue)
			}
			waitFor := ""
			if tx.WaitForAsset != "" {
				waitFor = tx.WaitForAsset + ":" + tx.WaitForValue.String()
			}
			if waitFor != c.waitFor || (waitFor != "" && v.WaitForAsset+":"+v.WaitForValue != c.waitFor) {
				t.Errorf("waits for %q (view %s:%s), want %q", waitFor, v.WaitForAsset, v.WaitForValue, c.waitFor)
			}
			env.engine.mu.Lock()
			need := env.engine.needs[len(env.engine.needs)-1]
			env.engine.mu.Unlock()
			if need.Asset != c.asset || need.Value.String() != c.value || need.OrderingKey != c.key {
				t.Errorf("need %+v", need)
			}
		})
	}

	// GET /transactions?pool=: the pool's, not the alice's others.
	wantStatus(t, env.do("POST", "/tokens/"+env.aliceToken20.ID+"/transfers", env.aliceToken, `{"to":"`+to+`","value":"1"}`), http.StatusAccepted)
	other := env.createPool(env.aliceToken, `{"name":"other","network":"dev","size":1}`)
	var listed []engine.TransactionView
	decodeData(t, env.do("GET", "/transactions?pool="+strings.ToUpper(p.ID), env.aliceToken, ""), &listed)
	if len(listed) != 5 {
		t.Errorf("listed %d through the pool, want 5", len(listed))
	}
	for _, v := range listed {
		if v.Pool != p.ID || v.From != member.Address {
			t.Errorf("listed %+v", v)
		}
	}
	decodeData(t, env.do("GET", "/transactions?pool="+other.ID, env.aliceToken, ""), &listed)
	if len(listed) != 0 {
		t.Errorf("listed %d through another pool", len(listed))
	}
	decodeData(t, env.do("GET", "/transactions?pool="+p.ID, env.bobToken, ""), &listed)
	if len(listed) != 0 {
		t.Errorf("bob lists %d of alice's pool", len(listed))
	}
}

// TestSendThroughPoolBadInput: bad pool and orderingKey fields are 4xx on
// their field on every send route; nothing is stored, submitted, or asked
// of the engine's balancer.
func TestSendThroughPoolBadInput(t *testing.T) {
	env := newTestEnv(t)
	p := env.createPool(env.aliceToken, `{"name":"mine","network":"dev","size":1}`)
	bobs := env.createPool(env.bobToken, `{"name":"bob's","network":"dev","size":1}`)
	elsewhere := &engine.Pool{ID: uuid.NewString(), Owner: env.alice.ID, Name: "main", Network: "main", Size: 1, Created: testNow}
	member, err := env.server.newAccount(env.alice.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.store.CreatePool(t.Context(), elsewhere, []*engine.Account{member}); err != nil {
		t.Fatal(err)
	}
	rows := env.store.rows(t)
	to := env.bobAcct.Address.Hex()
	routes := []struct{ path, base string }{
		{"/tokens/" + env.aliceToken20.ID + "/transfers", `"to":"` + to + `","value":"5"`},
		{"/contracts/" + env.aliceToken20.ID + "/send/transfer", `"arg":["` + to + `","2"]`},
		{"/contracts/network/dev/address/" + common.HexToAddress("0xd0").Hex() + "/send/deposit", `"abi":` + poolPayableABI + `,"value":"1"`},
	}
	for _, c := range []struct {
		name, fields string
		status       int
		code         engine.Code
		field, text  string
	}{
		{"pool with from", `"pool":"` + p.ID + `","from":"` + env.aliceAcct.ID + `"`, 400, engine.CodeInvalidArgument, "pool", "pool and from"},
		{"bob's pool", `"pool":"` + bobs.ID + `"`, 404, engine.CodeNotFound, "pool", ""},
		{"unknown pool", `"pool":"` + uuid.NewString() + `"`, 404, engine.CodeNotFound, "pool", ""},
		{"pool not an id", `"pool":"mine"`, 400, engine.CodeInvalidArgument, "pool", ""},
		{"pool as number", `"pool":1`, 400, engine.CodeInvalidArgument, "pool", ""},
		{"pool on another network", `"pool":"` + elsewhere.ID + `"`, 400, engine.CodeInvalidArgument, "pool", "network main"},
		{"orderingKey without pool", `"orderingKey":"k"`, 400, engine.CodeInvalidArgument, "orderingKey", "pool"},
		{"orderingKey with from", `"from":"` + env.aliceAcct.ID + `","orderingKey":"k"`, 400, engine.CodeInvalidArgument, "orderingKey", ""},
		{"empty orderingKey", `"pool":"` + p.ID + `","orderingKey":""`, 400, engine.CodeInvalidArgument, "orderingKey", ""},
		{"long orderingKey", `"pool":"` + p.ID + `","orderingKey":"` + strings.Repeat("k", 201) + `"`, 400, engine.CodeInvalidArgument, "orderingKey", ""},
		{"top-up orderingKey", `"pool":"` + p.ID + `","orderingKey":"` + engine.TopUpKeyPrefix + `x"`, 400, engine.CodeInvalidArgument, "orderingKey", ""},
	} {
		for _, r := range routes {
			t.Run(c.name+" "+r.path, func(t *testing.T) {
				rec := env.do("POST", r.path, env.aliceToken, `{`+r.base+`,`+c.fields+`}`)
				wantError(t, rec, c.status, c.code, c.field)
				if !strings.Contains(rec.Body.String(), c.text) {
					t.Errorf("message lacks %q: %s", c.text, rec.Body.String())
				}
			})
		}
	}
	if r := env.store.rows(t); r != rows {
		t.Errorf("rows %d → %d", rows, r)
	}
	env.engine.mu.Lock()
	defer env.engine.mu.Unlock()
	if len(env.engine.submitted) != 0 || len(env.engine.needs) != 0 {
		t.Errorf("submitted %d, assigned %d", len(env.engine.submitted), len(env.engine.needs))
	}
}
