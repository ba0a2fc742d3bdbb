package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// TestKillWhileRequestsOpen kills the service on its embedded default with
// SIGKILL at random points of bursts of transfers (30 clients, requests
// still open), restarts it on the same data dir each time and checks, after
// the last restart, that every transfer that got a 202 ends, completed or
// failed with a code, none stays submitted; a completed transfer's recipient
// holds exactly its amount (sent once) and no two completed transfers share
// a nonce. The embedded chain may lose its newest blocks in a kill but must
// come back consistent (blocks, receipts and state together).
func TestKillWhileRequestsOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	rounds := 4
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := mrand.New(mrand.NewPCG(seed, seed>>1))

	dir := t.TempDir()
	d := demoDeployment
	s := d.start(t, dir)
	token := demoToken(t, s)["id"].(string)

	type sent struct {
		id, to string
		value  int
	}
	var accepted []sent
	for round := range rounds {
		const n, clients = 2000, 30 // more than a kill lets through
		delay := time.Duration(300+rng.IntN(2500)) * time.Millisecond
		var (
			mu   sync.Mutex
			next int
			cut  int // requests the kill left without an answer
			wg   sync.WaitGroup
		)
		for range clients {
			wg.Go(func() {
				for {
					mu.Lock()
					i := next
					next++
					mu.Unlock()
					if i >= n {
						return
					}
					b := make([]byte, 20)
					_, _ = rand.Read(b)
					to := common.BytesToAddress(b).Hex()
					value := 1000 + round*n + i
					status, body, err := tryCall(s, "POST", "/tokens/"+token+"/transfers", map[string]any{"to": to, "value": fmt.Sprint(value)})
					if err != nil { // the kill
						mu.Lock()
						cut++
						mu.Unlock()
						return
					}
					if status != 202 {
						continue // refused: nothing stored
					}
					id, _ := body["data"].(map[string]any)["id"].(string)
					mu.Lock()
					accepted = append(accepted, sent{id: id, to: to, value: value})
					mu.Unlock()
				}
			})
		}
		time.Sleep(delay)
		s.kill()
		wg.Wait()
		t.Logf("round %d: killed after %s with %d requests open, %d accepted so far", round, delay, cut, len(accepted))
		if cut == 0 {
			t.Fatalf("round %d: the kill came after the burst, not while requests were open", round)
		}
		s = d.start(t, dir)
	}

	nonces := map[float64]string{}
	for _, a := range accepted {
		tx := s.waitTerminal(a.id, s.Token, 120*time.Second)
		switch tx["status"] {
		case "completed":
			nonce := tx["nonce"].(float64)
			if other, dup := nonces[nonce]; dup {
				t.Fatalf("transfers %s and %s share nonce %v", other, a.id, nonce)
			}
			nonces[nonce] = a.id
			got := s.must(200, "GET", "/tokens/"+token+"/balances/"+strings.ToLower(a.to), s.Token, nil)
			if got != fmt.Sprint(a.value) {
				t.Fatalf("%s holds %v, want exactly %d", a.to, got, a.value)
			}
		case "failed":
			e, _ := tx["error"].(map[string]any)
			if code, _ := e["code"].(string); code == "" {
				t.Fatalf("transfer %s failed without a code: %v", a.id, tx["error"])
			}
			t.Logf("transfer %s failed: %v", a.id, tx["error"])
		}
	}
	t.Logf("%d accepted transfers ended, %d completed", len(accepted), len(nonces))
}

// tryCall is service.call for requests a kill may cut: it returns the
// transport error instead of failing the test.
func tryCall(s *service, method, path string, body any) (int, map[string]any, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(raw))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, err
	}
	var r map[string]any
	_ = json.Unmarshal(out, &r)
	return res.StatusCode, r, nil
}
