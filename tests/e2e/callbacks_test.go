package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// hook is one callback request a receiver got.
type hook struct {
	at     time.Time
	path   string
	header http.Header
	body   []byte
}

// hookReceiver is a callback receiver: it records every request and
// answers with the status that answer returns for the n-th request to a
// path (from 1).
type hookReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	hooks []hook
}

func newHookReceiver(t *testing.T, answer func(path string, n int) int) *hookReceiver {
	t.Helper()
	h := &hookReceiver{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		n := 1
		for _, k := range h.hooks {
			if k.path == r.URL.Path {
				n++
			}
		}
		h.hooks = append(h.hooks, hook{at: time.Now(), path: r.URL.Path, header: r.Header.Clone(), body: body})
		h.mu.Unlock()
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.WriteHeader(answer(r.URL.Path, n))
	}))
	t.Cleanup(h.Close)
	return h
}

// at returns the requests to path so far.
func (h *hookReceiver) at(path string) []hook {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hook
	for _, k := range h.hooks {
		if k.path == path {
			out = append(out, k)
		}
	}
	return out
}

// verifySignature checks X-Callback-Signature as an integrator would, from
// docs/api-decisions.md#callbacks alone: t=<unix>,v1=<hex HMAC-SHA256(callbackSecret, t + "." + body)>
// keyed with the callbackSecret string of GET /users/me.
func verifySignature(t *testing.T, secret string, k hook) {
	t.Helper()
	sig := k.header.Get("X-Callback-Signature")
	ts, mac, ok := strings.Cut(sig, ",")
	ts, ok1 := strings.CutPrefix(ts, "t=")
	mac, ok2 := strings.CutPrefix(mac, "v1=")
	if !ok || !ok1 || !ok2 {
		t.Fatalf("X-Callback-Signature %q is not t=<unix>,v1=<hex>", sig)
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(unix, 0)).Abs() > time.Minute {
		t.Fatalf("signature timestamp %q is not the time of sending", ts)
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "." + string(k.body)))
	if want := hex.EncodeToString(m.Sum(nil)); mac != want {
		t.Fatalf("signature v1 = %s, want %s", mac, want)
	}
}

// wantCallback checks one callback request: method and headers, a valid
// signature, and a body {"transaction": ...} equal to what GET
// /transactions/{id} returns now. It returns the transaction.
func wantCallback(t *testing.T, s *service, secret, id string, k hook) map[string]any {
	t.Helper()
	if ct := k.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if ua := k.header.Get("User-Agent"); !strings.HasPrefix(ua, "txengine/") {
		t.Errorf("User-Agent = %q", ua)
	}
	if k.header.Get("X-Callback-Id") == "" {
		t.Errorf("no X-Callback-Id")
	}
	verifySignature(t, secret, k)
	var payload map[string]any
	if err := json.Unmarshal(k.body, &payload); err != nil {
		t.Fatalf("callback body %s: %v", k.body, err)
	}
	if len(payload) != 1 || payload["transaction"] == nil {
		t.Fatalf("callback body has fields %v, want only transaction", payload)
	}
	tx := payload["transaction"].(map[string]any)
	if tx["id"] != id {
		t.Fatalf("callback of transaction %v, want %s", tx["id"], id)
	}
	if got := s.must(200, "GET", "/transactions/"+id, s.Token, nil); !reflect.DeepEqual(tx, got) {
		t.Errorf("callback transaction\n%v\nis not GET /transactions/%s\n%v", tx, id, got)
	}
	return tx
}

// TestCallbacks: on the embedded default and on geth, a completed transfer
// and a failed one call their callback URLs with the signed transaction; a
// receiver that fails gets the same callback again.
func TestCallbacks(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	for _, b := range apiBackends() {
		t.Run(b.name, func(t *testing.T) { testCallbacks(t, b) })
	}
}

// flakyOnce answers 503 to the first request to /flaky, 200 otherwise.
func flakyOnce(path string, n int) int {
	if path == "/flaky" && n == 1 {
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}

// hooked is a service of a backend whose callbacks go to a receiver on
// loopback.
type hooked struct {
	*service
	rc *hookReceiver
	// secret is the operator's callbackSecret.
	secret string
	// restart starts the service again on its data dir (after a kill or
	// a stop).
	restart func() *service
}

// startHooked starts the service of b with a receiver answering answer.
// The receiver listens on loopback, which only the embedded default
// accepts without TXENGINE_CALLBACKS_ALLOW_PRIVATE (configured networks
// refuse private callback URLs unless allowed).
func startHooked(t *testing.T, b backend, answer func(path string, n int) int) hooked {
	t.Helper()
	rc := newHookReceiver(t, answer)
	dir := t.TempDir()
	d := b.setup(t, dir)
	d.env = append(d.env, "TXENGINE_CALLBACKS_ALLOW_PRIVATE=true")
	s := d.start(t, dir)
	secret := s.must(200, "GET", "/users/me", s.Token, nil).(map[string]any)["callbackSecret"].(string)
	return hooked{service: s, rc: rc, secret: secret, restart: func() *service { return d.start(t, dir) }}
}

func testCallbacks(t *testing.T, b backend) {
	h := startHooked(t, b, flakyOnce)
	s, rc, secret := h.service, h.rc, h.secret
	tok := operatorToken(t, s, b.network)
	to := s.must(201, "POST", "/accounts", s.Token, nil).(map[string]any)["address"].(string)

	start := time.Now()
	created := s.must(202, "POST", "/tokens/"+tok["id"].(string)+"/transfers", s.Token, map[string]any{
		"to": to, "value": "1000", "callbacks": []string{rc.URL + "/done", rc.URL + "/flaky"},
	}).(map[string]any)
	id := created["id"].(string)
	// More than the operator holds: fails at estimation (reverted).
	supply := bigOf(t, tok["parameters"].(map[string]any)["supply"])
	tooMuch := new(big.Int).Add(supply, big.NewInt(1)).String()
	failed := s.must(202, "POST", "/tokens/"+tok["id"].(string)+"/transfers", s.Token, map[string]any{
		"to": to, "value": tooMuch, "callbacks": []string{rc.URL + "/failed"},
	}).(map[string]any)
	failedID := failed["id"].(string)

	eventually(t, 60*time.Second, "callback of the completed transfer", func() bool { return len(rc.at("/done")) > 0 })
	t.Logf("completed callback %s after the request", rc.at("/done")[0].at.Sub(start))
	tx := wantCallback(t, s, secret, id, rc.at("/done")[0])
	if tx["status"] != "completed" {
		t.Fatalf("callback status = %v, want completed", tx["status"])
	}
	if h, _ := tx["transactionHash"].(string); len(h) != 66 {
		t.Errorf("transactionHash = %v", tx["transactionHash"])
	}
	if evs, _ := tx["events"].([]any); len(evs) != 1 || evs[0].(map[string]any)["event"] != "Transfer" {
		t.Errorf("events = %v", tx["events"])
	}

	eventually(t, 30*time.Second, "callback of the failed transfer", func() bool { return len(rc.at("/failed")) > 0 })
	ftx := wantCallback(t, s, secret, failedID, rc.at("/failed")[0])
	if errObj, _ := ftx["error"].(map[string]any); ftx["status"] != "failed" || errObj["code"] != "reverted" {
		t.Fatalf("failed callback: status %v, error %v; want failed, reverted", ftx["status"], ftx["error"])
	}

	// The flaky receiver answered 503 once: the callback comes again with
	// the same X-Callback-Id after the first backoff (about 1 s).
	eventually(t, 30*time.Second, "retry of the flaky callback", func() bool { return len(rc.at("/flaky")) >= 2 })
	flaky := rc.at("/flaky")
	for _, k := range flaky[:2] {
		wantCallback(t, s, secret, id, k)
	}
	if a, b := flaky[0].header.Get("X-Callback-Id"), flaky[1].header.Get("X-Callback-Id"); a != b {
		t.Errorf("X-Callback-Id changed on retry: %s then %s", a, b)
	}
	if a, b := flaky[0].header.Get("X-Callback-Id"), rc.at("/done")[0].header.Get("X-Callback-Id"); a == b {
		t.Errorf("two URLs share X-Callback-Id %s", a)
	}
	if gap := flaky[1].at.Sub(flaky[0].at); gap < 800*time.Millisecond || gap > 5*time.Second {
		t.Errorf("retry came %s after the first attempt, want about 1s", gap)
	}
	// Delivered callbacks are not sent again.
	time.Sleep(1500 * time.Millisecond)
	if n, m, f := len(rc.at("/done")), len(rc.at("/flaky")), len(rc.at("/failed")); n != 1 || m != 2 || f != 1 {
		t.Errorf("requests per URL: done %d, flaky %d, failed %d; want 1, 2, 1", n, m, f)
	}
	s.stop()
}
