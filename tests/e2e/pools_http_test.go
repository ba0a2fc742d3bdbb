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
