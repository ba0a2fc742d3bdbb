package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestCancelWaitingAndDependents: a transfer waiting for a balance the
// sender will never have is cancelled through the API (200, failed with
// cancelled, no nonce), a transfer depending on it fails with
// dependency_failed, and a second cancel is 409.
func TestCancelWaitingAndDependents(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its chain")
	}
	for _, b := range apiBackends() {
		t.Run(b.name, func(t *testing.T) {
			dir := t.TempDir()
			s := b.setup(t, dir).start(t, dir)
			id := operatorToken(t, s, b.network)["id"].(string)
			to := "0x00000000000000000000000000000000000000a1"

			held := s.must(202, "POST", "/tokens/"+id+"/transfers", s.Token, map[string]any{
				"to": to, "value": "1", "waitForAsset": "ETH", "waitForValue": strings.Repeat("9", 40),
			}).(map[string]any)
			dep := s.must(202, "POST", "/tokens/"+id+"/transfers", s.Token, map[string]any{
				"to": to, "value": "1", "dependsOn": []string{held["id"].(string)},
			}).(map[string]any)
			eventually(t, 30*time.Second, "the first transfer waits", func() bool {
				tx := s.must(200, "GET", "/transactions/"+held["id"].(string), s.Token, nil).(map[string]any)
				return tx["status"] == "waiting"
			})

			cancelled := s.must(200, "DELETE", "/transactions/"+held["id"].(string), s.Token, nil).(map[string]any)
			e, _ := cancelled["error"].(map[string]any)
			if cancelled["status"] != "failed" || e["code"] != "cancelled" || cancelled["nonce"] != nil {
				t.Fatalf("cancelled: %v", cancelled)
			}
			wantErr(t, s.call("DELETE", "/transactions/"+held["id"].(string), s.Token, nil), 409, "conflict", "")

			got := s.waitTerminal(dep["id"].(string), s.Token, 30*time.Second)
			if e, _ := got["error"].(map[string]any); got["status"] != "failed" || e["code"] != "dependency_failed" || got["nonce"] != nil {
				t.Fatalf("dependent: %v", got)
			}
		})
	}
}
