package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// The fault tests (make test-faults runs them alone): the node or the
// database goes away in the middle of a burst of transfers and comes back;
// nothing accepted is lost or sent twice, /readyz reports the outage, and
// the service recovers without a restart.

// faultClient bounds one request of a fault test: a request that hangs
// during an outage is a failure too, and must not hang the test.
// Its timeout outlasts an outage of the database: a request whose commit
// was under way when PostgreSQL went away has an unknown outcome, and the
// service answers it only once it could read back whether its row is
// stored (202) or not (503), never by guessing.
var faultClient = &http.Client{Timeout: 90 * time.Second}

// try sends one request without failing the test (it may run on any
// goroutine): the response, or the transport error.
func (s *service) try(method, path, token string, body any) (response, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return response{}, fmt.Errorf("encode the body: %w", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		return response{}, fmt.Errorf("new request: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := faultClient.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: read the body: %w", method, path, err)
	}
	r := response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	_ = json.Unmarshal(raw, &r.Body)
	return r, nil
}

// transfer is one transfer of a burst: value to a fresh address.
type transfer struct {
	id, to string
	value  int
	status int // the status of the POST
}

// burst sends transfers of token to n fresh addresses from clients
// concurrent clients, values from first on, and returns them with the
// status of each POST (0 when the request itself failed).
func burst(t *testing.T, s *service, token string, first, n, clients int) []transfer {
	t.Helper()
	out := make([]transfer, n)
	for i := range out {
		b := make([]byte, 20)
		_, _ = rand.Read(b)
		out[i] = transfer{to: strings.ToLower(common.BytesToAddress(b).Hex()), value: first + i}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for i := range work {
				tr := &out[i]
				r, err := s.try("POST", "/tokens/"+token+"/transfers", s.Token, map[string]any{"to": tr.to, "value": fmt.Sprint(tr.value)})
				if err != nil {
					// No answer: the outcome is unknown to the client;
					// checkExactlyOnce holds it to at most once.
					t.Logf("transfer %d: no answer (%v): outcome unknown", tr.value, err)
					continue
				}
				tr.status = r.Status
				if r.Status == 202 {
					tr.id, _ = r.Body["data"].(map[string]any)["id"].(string)
				} else if r.Status != 503 {
					t.Errorf("transfer %d: %d %s, want 202 or 503", tr.value, r.Status, r.Raw)
				}
			}
		})
	}
	for i := range out {
		work <- i
	}
	close(work)
	wg.Wait()
	return out
}

// ready is one answer of /readyz.
type ready struct {
	status  int
	message string
	checks  map[string]string
}

func (s *service) ready(t *testing.T) ready {
	t.Helper()
	r, err := s.try("GET", "/readyz", "", nil)
	if err != nil {
		t.Fatalf("/readyz: %v", err)
	}
	out := ready{status: r.Status, checks: map[string]string{}}
	if e, ok := r.Body["error"].(map[string]any); ok {
		out.message, _ = e["message"].(string)
	}
	if c, ok := r.Body["checks"].(map[string]any); ok {
		for k, v := range c {
			out.checks[k], _ = v.(string)
		}
	}
	return out
}

// checkExactlyOnce waits until every transfer that got a 202 is terminal
// and checks that each completed, that their nonces are unique and
// contiguous, and that each recipient holds exactly its value. Transfers
// refused with 503 must have left their recipient empty: a refusal stored
// nothing. It returns the number of transfers lost and duplicated (the test
// has failed when either is not 0).
func checkExactlyOnce(t *testing.T, s *service, token string, all []transfer, timeout time.Duration) (lost, duplicated int) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	nonces := map[int]string{}
	accepted := 0
	for _, tr := range all {
		if tr.status != 202 {
			continue
		}
		accepted++
		tx := s.waitTerminal(tr.id, s.Token, time.Until(deadline))
		if tx["status"] != "completed" {
			lost++
			t.Errorf("transfer %s (%d) ended %v: %v", tr.id, tr.value, tx["status"], tx["error"])
			continue
		}
		n := int(tx["nonce"].(float64))
		if other, dup := nonces[n]; dup {
			duplicated++
			t.Errorf("transfers %s and %s share nonce %d", other, tr.id, n)
		}
		nonces[n] = tr.id
	}
	sorted := make([]int, 0, len(nonces))
	for n := range nonces {
		sorted = append(sorted, n)
	}
	sort.Ints(sorted)
	gaps := 0
	for i := 1; i < len(sorted); i++ {
		gaps += sorted[i] - sorted[i-1] - 1
	}
	// A request left without an answer (its commit was cut by the outage,
	// and the service could not read back its outcome before the
	// connection's deadline) is unknown to the client: it may be stored.
	// It must then complete once, and it holds a nonce among the accepted.
	storedUnanswered := 0
	for _, tr := range all {
		got := s.must(200, "GET", "/tokens/"+token+"/balances/"+tr.to, s.Token, nil)
		want := "0"
		if tr.status == 202 {
			want = fmt.Sprint(tr.value)
		}
		if tr.status == 0 && got == fmt.Sprint(tr.value) {
			storedUnanswered++
			continue
		}
		if got == want {
			continue
		}
		t.Errorf("%s holds %v, want exactly %s (POST status %d)", tr.to, got, want, tr.status)
		if got == "0" {
			lost++
		} else {
			duplicated++
		}
	}
	if gaps > storedUnanswered {
		t.Errorf("nonces of the accepted transfers leave %d gaps, more than the %d unanswered transfers that were stored: %v", gaps, storedUnanswered, sorted)
	}
	if len(sorted) > 0 {
		t.Logf("%d accepted transfers completed exactly once, nonces %d..%d", accepted, sorted[0], sorted[len(sorted)-1])
	}
	return lost, duplicated
}

// count returns how many transfers got status.
func count(all []transfer, status int) int {
	n := 0
	for _, tr := range all {
		if tr.status == status {
			n++
		}
	}
	return n
}

// TestFaultNodeDownMidBurst: geth stops (cleanly) while a burst of
// transfers is being accepted and sent, stays down for 30 s while more
// transfers are accepted (acceptance does not need the node), and comes
// back on the same data dir and ports. /readyz names the network while it
// is down and recovers after; every accepted transfer completes exactly
// once (unique, contiguous nonces; each recipient holds exactly its value).
func TestFaultNodeDownMidBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and geth")
	}
	const outage = 30 * time.Second
	node := gethtest.Start(t)
	env := gethEnv(node)
	dir := t.TempDir()
	deployToken(t, dir, env, "geth", "Test Token", "TT", "1000000000000000000000000")
	s := startService(t, dir, env...)
	id := operatorToken(t, s, "geth")["id"].(string)
	if r := s.ready(t); r.status != 200 {
		t.Fatalf("/readyz before the fault: %d %s %v", r.status, r.message, r.checks)
	}

	// The burst starts; the node goes away while it is being sent and a
	// second wave is still arriving.
	first, second, down := burstWithFault(t, s, id, 1500, 150, node.Stop)
	all := append(first, second...)
	if n := count(second, 202); n != len(second) {
		t.Fatalf("%d of %d transfers of the second wave accepted, want all (acceptance does not need the node)", n, len(second))
	}
	pending := 0
	for _, tr := range first {
		if st := s.must(200, "GET", "/transactions/"+tr.id, s.Token, nil).(map[string]any)["status"]; st != "completed" {
			pending++
		}
	}
	t.Logf("fault 1: geth stopped mid-burst: %d of the first wave's %d transfers not yet completed, second wave of %d accepted meanwhile", pending, len(first), len(second))

	// During the outage: acceptance works, /readyz names the network.
	during := burst(t, s, id, 2000, 100, 8)
	if n := count(during, 202); n != len(during) {
		t.Fatalf("during the outage %d of %d transfers were accepted, want all (acceptance does not need the node)", n, len(during))
	}
	all = append(all, during...)
	r := s.ready(t)
	if r.status != 503 || r.checks["network:geth"] == "ok" || !strings.Contains(r.message, "network:geth") || r.checks["database"] != "ok" {
		t.Fatalf("/readyz during the node outage: %d %q %v, want 503 naming network:geth only", r.status, r.message, r.checks)
	}
	t.Logf("/readyz during the outage: %d %q", r.status, r.message)
	time.Sleep(time.Until(down.Add(outage)))

	node.Restart()
	back := time.Now()
	t.Logf("geth down for %s", back.Sub(down).Round(time.Millisecond))
	eventually(t, 30*time.Second, "/readyz recovers", func() bool { return s.ready(t).status == 200 })
	t.Logf("/readyz ready %s after geth was back", time.Since(back).Round(time.Millisecond))

	after := burst(t, s, id, 3000, 50, 8)
	if n := count(after, 202); n != len(after) {
		t.Fatalf("after the outage %d of %d transfers were accepted, want all", n, len(after))
	}
	all = append(all, after...)
	lost, dup := checkExactlyOnce(t, s, id, all, 3*time.Minute)
	t.Logf("faults injected: 1 (geth stopped %s mid-burst); transfers: %d sent, %d accepted, %d lost, %d duplicated; all done %s after geth was back",
		outage, len(all), count(all, 202), lost, dup, time.Since(back).Round(time.Millisecond))
}

// TestFaultDatabaseDownMidBurst: the PostgreSQL server (a cluster of this
// test's own) stops while a burst of transfers on the embedded chain is
// being accepted and sent, and starts again. While it is down, requests
// are refused with 503 unavailable (never 500) and /readyz reports the
// database; once it is back the same process serves again without a
// restart, and every transfer that got a 202 completes exactly once.
func TestFaultDatabaseDownMidBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary, its dev chain and PostgreSQL")
	}
	const outage = 10 * time.Second
	cluster := pgtest.StartCluster(t)
	dir := t.TempDir()
	s := startService(t, dir, "TXENGINE_DATABASE_URL="+cluster.URL())
	id := demoToken(t, s)["id"].(string)
	if r := s.ready(t); r.status != 200 {
		t.Fatalf("/readyz before the fault: %d %s %v", r.status, r.message, r.checks)
	}

	// A second wave is still arriving when the database stops: each of its
	// transfers is either accepted (and must complete) or refused with 503.
	first, second, down := burstWithFault(t, s, id, 2000, 200, cluster.Stop)
	all := append(first, second...)
	t.Logf("fault 1: PostgreSQL stopped; second wave: %d accepted, %d refused with 503", count(second, 202), count(second, 503))

	// During the outage: 503 unavailable, not 500; /readyz names the database.
	during := burst(t, s, id, 4000, 20, 4)
	if n := count(during, 503); n != len(during) {
		t.Errorf("during the outage %d of %d transfers were refused with 503, want all", n, len(during))
	}
	all = append(all, during...)
	statuses := map[string]int{}
	for _, path := range []string{"/transactions/" + first[0].id, "/transactions?limit=5", "/tokens", "/tokens/" + id + "/balances/" + first[0].to} {
		r, err := s.try("GET", path, s.Token, nil)
		if err != nil {
			t.Fatalf("GET %s during the outage: %v", path, err)
		}
		statuses[path] = r.Status
		if r.Status == 500 {
			t.Errorf("GET %s during the outage: 500 %s, want 503 (or an answer from a cache)", path, r.Raw)
		}
		if r.Status == 503 && !strings.Contains(string(r.Raw), `"unavailable"`) {
			t.Errorf("GET %s during the outage: 503 without code unavailable: %s", path, r.Raw)
		}
	}
	t.Logf("reads during the outage: %v", statuses)
	r := s.ready(t)
	if r.status != 503 || r.checks["database"] == "ok" || !strings.Contains(r.message, "database") {
		t.Fatalf("/readyz during the database outage: %d %q %v, want 503 naming the database", r.status, r.message, r.checks)
	}
	t.Logf("/readyz during the outage: %d %q", r.status, r.message)
	if strings.Contains(s.Logs(), `"code":"internal"`) || strings.Contains(s.Logs(), "code=internal") {
		t.Errorf("the service logged internal errors during the outage")
	}
	time.Sleep(time.Until(down.Add(outage)))

	cluster.Start()
	back := time.Now()
	t.Logf("PostgreSQL down for %s", back.Sub(down).Round(time.Millisecond))
	eventually(t, 30*time.Second, "/readyz recovers", func() bool { return s.ready(t).status == 200 })
	t.Logf("/readyz ready %s after PostgreSQL was back", time.Since(back).Round(time.Millisecond))

	// The same process serves again: every new transfer is accepted.
	after := burst(t, s, id, 5000, 100, 16)
	if n := count(after, 202); n != len(after) {
		t.Errorf("after the outage %d of %d transfers were accepted, want all", n, len(after))
	}
	all = append(all, after...)
	lost, dup := checkExactlyOnce(t, s, id, all, 3*time.Minute)
	if got := strings.Count(s.Logs(), "account pump failed; retrying"); got > 0 {
		t.Logf("the account's pump failed and retried %d times during the outage", got)
	}
	t.Logf("faults injected: 1 (PostgreSQL stopped %s mid-burst); transfers: %d sent, %d accepted, %d refused with 503, %d unanswered, %d lost, %d duplicated; all done %s after PostgreSQL was back",
		outage, len(all), count(all, 202), count(all, 503), count(all, 0), lost, dup, time.Since(back).Round(time.Millisecond))
}

// burstWithFault sends a first wave of 100 transfers (all must be accepted),
// starts a second wave of n (amounts from base) and, once the first wave is
// being sent, injects fault while the second is still arriving. It returns
// both waves and when the fault struck.
func burstWithFault(t *testing.T, s *service, id string, base, n int, fault func()) (first, second []transfer, at time.Time) {
	t.Helper()
	first = burst(t, s, id, 1000, 100, 16)
	if got := count(first, 202); got != len(first) {
		t.Fatalf("%d of %d transfers accepted before the fault", got, len(first))
	}
	wave := make(chan []transfer)
	go func() { wave <- burst(t, s, id, base, n, 16) }()
	eventually(t, 30*time.Second, "the first wave is being sent", func() bool {
		tx := s.must(200, "GET", "/transactions/"+first[0].id, s.Token, nil).(map[string]any)
		return tx["status"] != "new"
	})
	fault()
	at = time.Now()
	return first, <-wave, at
}
