package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestPoolRoutesOnTheBinary: the pool routes of the real binary, every
// response checked against the OpenAPI document: a pool with the
// operator's default account as treasury, its live state, a token
// transfer through it (its member sends it once the treasury has topped
// the member up), the pool filter, a resize and the delete.
func TestPoolRoutesOnTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	s := startService(t, t.TempDir())
	op := s.Token
	treasury := s.must(200, "GET", "/accounts/default", op, nil).(map[string]any)["id"].(string)
	tok := demoToken(t, s)["id"].(string)
	to := s.must(201, "POST", "/accounts", op, map[string]any{}).(map[string]any)["address"].(string)

	p := s.must(201, "POST", "/pools", op, map[string]any{"name": "payouts", "network": "dev", "size": 2, "treasury": treasury}).(map[string]any)
	id := p["id"].(string)
	members := map[string]bool{}
	for _, m := range p["members"].([]any) {
		members[strings.ToLower(m.(map[string]any)["address"].(string))] = true
	}
	if p["treasury"] != treasury || len(members) != 2 {
		t.Fatalf("pool %v", p)
	}
	s.must(200, "GET", "/pools", op, nil)
	s.must(200, "GET", "/pools/"+id, op, nil)

	tx := s.must(202, "POST", "/tokens/"+tok+"/transfers", op,
		map[string]any{"to": to, "value": "7", "pool": id, "orderingKey": "customer-7"}).(map[string]any)
	if !members[strings.ToLower(tx["from"].(string))] || tx["pool"] != id || tx["orderingKey"] != "customer-7" {
		t.Fatalf("transfer through the pool: %v", tx)
	}
	done := s.waitTerminal(tx["id"].(string), op, 90*time.Second)
	if done["status"] != "completed" {
		t.Fatalf("transfer through the pool ended %v: %v", done["status"], done["error"])
	}
	listed := s.must(200, "GET", "/transactions?pool="+id+"&limit=1000", op, nil).([]any)
	found := false
	for _, it := range listed {
		v := it.(map[string]any)
		found = found || v["id"] == tx["id"]
		if v["pool"] != id {
			t.Errorf("listed through the pool: %v", v)
		}
	}
	if !found {
		t.Errorf("the transfer is not listed through its pool: %v", listed)
	}
	status := s.must(200, "GET", "/pools/"+id, op, nil).(map[string]any)
	if n, _ := status["topUps"].(float64); n < 1 {
		t.Errorf("no top-up counted: %v", status)
	}

	if r := s.must(200, "PATCH", "/pools/"+id, op, map[string]any{"size": 3}).(map[string]any); len(r["members"].([]any)) != 3 {
		t.Errorf("resized %v", r)
	}
	s.must(200, "DELETE", "/pools/"+id, op, nil)
	s.must(404, "GET", "/pools/"+id, op, nil)
}

// TestPoolWaitReasonOnTheBinary: a token transfer through a pool without
// a treasury (its member holds no token, nothing refills it) stays
// waiting, and its view says why (waitReason names the missing treasury),
// as does the pool's short; once the member is given the token by hand the
// transfer completes and its view has no waitReason any more. Every
// response is checked against the OpenAPI document.
func TestPoolWaitReasonOnTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	s := startService(t, t.TempDir())
	op := s.Token
	tok := demoToken(t, s)["id"].(string)
	to := s.must(201, "POST", "/accounts", op, map[string]any{}).(map[string]any)["address"].(string)
	p := s.must(201, "POST", "/pools", op, map[string]any{"name": "dry", "network": "dev", "size": 1}).(map[string]any)
	id := p["id"].(string)
	member := p["members"].([]any)[0].(map[string]any)["address"].(string)

	tx := s.must(202, "POST", "/tokens/"+tok+"/transfers", op, map[string]any{"to": to, "value": "7", "pool": id}).(map[string]any)
	txID := tx["id"].(string)
	if _, has := tx["waitReason"]; has {
		t.Errorf("the 202 answer has a waitReason: %v", tx)
	}
	var view map[string]any
	deadline := time.Now().Add(60 * time.Second)
	for {
		view = s.must(200, "GET", "/transactions/"+txID, op, nil).(map[string]any)
		reason, _ := view["waitReason"].(string)
		if view["status"] == "waiting" && strings.Contains(reason, "no treasury") {
			break
		}
		if view["status"] != "new" && view["status"] != "waiting" || time.Now().After(deadline) {
			t.Fatalf("transfer through a pool without a treasury: %v, want waiting with a reason naming the missing treasury", view)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if reason := view["waitReason"].(string); !strings.Contains(reason, "pool member "+member+" holds 7 of token") {
		t.Errorf("waitReason %q does not name the member and what it awaits", reason)
	}
	listed := s.must(200, "GET", "/transactions?pool="+id+"&status=waiting", op, nil).([]any)
	if len(listed) != 1 || listed[0].(map[string]any)["waitReason"] != view["waitReason"] {
		t.Errorf("listed through the pool: %v, want the transfer with its waitReason", listed)
	}
	for short := ""; !strings.HasPrefix(short, "no treasury"); { // the keeper looks within a second or so
		if time.Now().After(deadline) {
			t.Fatalf("the pool's short is %q, want no treasury", short)
		}
		time.Sleep(200 * time.Millisecond)
		short, _ = s.must(200, "GET", "/pools/"+id, op, nil).(map[string]any)["short"].(string)
	}

	// The member is given the token by hand: the transfer goes, its
	// reason goes.
	fund := s.must(202, "POST", "/tokens/"+tok+"/transfers", op, map[string]any{"to": member, "value": "7"}).(map[string]any)
	if done := s.waitTerminal(fund["id"].(string), op, 60*time.Second); done["status"] != "completed" {
		t.Fatalf("funding the member ended %v", done["status"])
	}
	done := s.waitTerminal(txID, op, 60*time.Second)
	if done["status"] != "completed" {
		t.Fatalf("the transfer ended %v: %v", done["status"], done["error"])
	}
	if r, has := done["waitReason"]; has {
		t.Errorf("a completed transfer has waitReason %q", r)
	}
}
