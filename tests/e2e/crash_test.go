package e2e

import (
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// TestKillDuringBurstLosesAndDuplicatesNothing fires a burst of transfers,
// each to its own fresh address, kills the process with SIGKILL while the
// burst is being mined, restarts it on the same data dir, and checks that
// every transfer that got a 202 completes and that every address holds
// exactly its amount: nothing accepted is lost, nothing is sent twice (the
// embedded chain may also lose its newest blocks in the kill; the engine
// must notice and send their transactions again).
func TestKillDuringBurstLosesAndDuplicatesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	for _, b := range backends() {
		if b.network != "dev" {
			continue // the kill takes the embedded chain down with the service
		}
		t.Run(b.name, func(t *testing.T) { testKillDuringBurst(t, b) })
	}
}

func testKillDuringBurst(t *testing.T, b backend) {
	dir := t.TempDir()
	d := b.setup(t, dir)
	s := d.start(t, dir)
	id := demoToken(t, s)["id"].(string)

	const n = 60
	type sent struct {
		id, to string
		value  int
	}
	var (
		mu       sync.Mutex
		accepted []sent
		wg       sync.WaitGroup
	)
	for i := 0; i < n; i++ {
		b := make([]byte, 20)
		_, _ = rand.Read(b)
		to := common.BytesToAddress(b).Hex()
		value := 1000 + i
		wg.Go(func() {
			r := s.call("POST", "/tokens/"+id+"/transfers", s.Token, map[string]any{"to": to, "value": fmt.Sprint(value)})
			if r.Status != 202 {
				t.Errorf("transfer %d: %d %s", value, r.Status, r.Raw)
				return
			}
			mu.Lock()
			accepted = append(accepted, sent{id: r.Body["data"].(map[string]any)["id"].(string), to: to, value: value})
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Let part of the burst reach the chain, then kill.
	deadline := time.Now().Add(30 * time.Second)
	for {
		tx := s.must(200, "GET", "/transactions/"+accepted[0].id, s.Token, nil).(map[string]any)
		if tx["status"] != "new" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1200 * time.Millisecond)
	s.kill()

	s2 := d.start(t, dir)
	nonces := map[float64]string{}
	for _, a := range accepted {
		tx := s2.waitTerminal(a.id, s2.Token, 90*time.Second)
		if tx["status"] != "completed" {
			t.Fatalf("transfer %s ended %v: %v", a.id, tx["status"], tx["error"])
		}
		nonce := tx["nonce"].(float64)
		if other, dup := nonces[nonce]; dup {
			t.Fatalf("transfers %s and %s share nonce %v", other, a.id, nonce)
		}
		nonces[nonce] = a.id
	}
	for i := 0; i < len(accepted); i++ {
		if _, ok := nonces[float64(i)]; !ok {
			t.Fatalf("nonces are not 0..%d: %v missing", len(accepted)-1, i)
		}
	}
	for _, a := range accepted {
		got := s2.must(200, "GET", "/tokens/"+id+"/balances/"+strings.ToLower(a.to), s2.Token, nil)
		if got != fmt.Sprint(a.value) {
			t.Fatalf("%s holds %v, want exactly %d", a.to, got, a.value)
		}
	}
}
