package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// sentTransfer is a transfer of a burst the service accepted.
type sentTransfer struct {
	id, to string
	value  int
}

// sendBurst sends n transfers of token tok at once, each to a fresh
// address with value 1000+i, with the fields of extra added to each body
// (e.g. "from"); it fails t on any answer but 202 and returns the accepted
// ones.
func sendBurst(t *testing.T, s *service, tok string, n int, extra map[string]any) []sentTransfer {
	t.Helper()
	var (
		mu       sync.Mutex
		accepted []sentTransfer
		wg       sync.WaitGroup
	)
	for i := range n {
		to, value := randomAddress(), 1000+i
		body := map[string]any{"to": to, "value": fmt.Sprint(value)}
		for k, v := range extra {
			body[k] = v
		}
		wg.Go(func() {
			r := s.call("POST", "/tokens/"+tok+"/transfers", s.Token, body)
			if r.Status != 202 {
				t.Errorf("transfer %d: %d %s", value, r.Status, r.Raw)
				return
			}
			mu.Lock()
			accepted = append(accepted, sentTransfer{id: r.Body["data"].(map[string]any)["id"].(string), to: to, value: value})
			mu.Unlock()
		})
	}
	wg.Wait()
	return accepted
}

// checkBurstCompletedOnce waits for every transfer of accepted to end and
// fails t unless each completed, their nonces are exactly 0..len-1 (none
// shared, none missing) and every recipient holds exactly its amount of
// tok: nothing lost, nothing sent twice.
func checkBurstCompletedOnce(t *testing.T, s *service, tok string, accepted []sentTransfer, timeout time.Duration) {
	t.Helper()
	nonces := map[float64]string{}
	for _, a := range accepted {
		tx := s.waitTerminal(a.id, s.Token, timeout)
		if tx["status"] != "completed" {
			t.Fatalf("transfer %s ended %v: %v", a.id, tx["status"], tx["error"])
		}
		nonce := tx["nonce"].(float64)
		if other, dup := nonces[nonce]; dup {
			t.Fatalf("transfers %s and %s share nonce %v", other, a.id, nonce)
		}
		nonces[nonce] = a.id
	}
	for i := range len(accepted) {
		if _, ok := nonces[float64(i)]; !ok {
			t.Fatalf("nonces are not 0..%d: %d missing", len(accepted)-1, i)
		}
	}
	for _, a := range accepted {
		got := s.must(200, "GET", "/tokens/"+tok+"/balances/"+strings.ToLower(a.to), s.Token, nil)
		if got != fmt.Sprint(a.value) {
			t.Fatalf("%s holds %v, want exactly %d", a.to, got, a.value)
		}
	}
}
