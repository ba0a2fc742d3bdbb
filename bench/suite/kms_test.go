package suite

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"encoding/hex"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/internal/kmstest"
)

// TestBenchKMS measures a burst of TXENGINE_BENCH_KMS_N transfers (10,000
// by default) from one account on geth --dev (1 s blocks, 60M gas), the
// embedded store, drained with its key sealed locally, in KMS (local-kms),
// and in KMS with TXENGINE_BENCH_KMS_DELAY (15ms) added to every KMS call
// by a delaying proxy: drain (first request to last completed) beside the
// chain bound, and the service's CPU per completed transfer. Each run has
// its own geth and service; ratios are within one run of the test. Run
// with `make bench-kms` (TXENGINE_BENCH=kms).
func TestBenchKMS(t *testing.T) {
	if os.Getenv("TXENGINE_BENCH") != "kms" {
		t.Skip("runs with TXENGINE_BENCH=kms (make bench-kms)")
	}
	n := envInt(t, "TXENGINE_BENCH_KMS_N", 10000)
	delay := envDuration(t, "TXENGINE_BENCH_KMS_DELAY", 15*time.Millisecond)
	b := build(t)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }
	srv := kmstest.Start(t)
	calls := new(atomic.Int64)
	slow := httptest.NewServer(delayingProxy(t, srv.Endpoint, delay, calls))
	t.Cleanup(slow.Close)
	type run struct {
		name     string
		endpoint string // "" : local key
	}
	var lines []string
	for _, r := range []run{{"local key", ""}, {"KMS", srv.Endpoint}, {fmt.Sprintf("KMS + %s a call", delay), slow.URL}} {
		if only := os.Getenv("TXENGINE_BENCH_KMS_ONLY"); only != "" && !strings.Contains(r.name, only) {
			continue
		}
		drain, bound, cpuPer, check := kmsBurst(t, b, n, r.endpoint, srv, logf)
		if r.endpoint == slow.URL {
			logf("%d KMS calls through the delaying proxy for %d transfers", calls.Load(), n)
		}
		line := fmt.Sprintf("| %s | %d | %.1f s | %.0f s | %.2f× | %.2f ms | %s |", r.name, n, drain, bound, drain/bound, cpuPer, check)
		logf("%s", line)
		lines = append(lines, line)
	}
	fmt.Printf("\n%s, %s\n| signer | transfers | drain | chain bound | drain / bound | service CPU per transfer | check |\n|---|---|---|---|---|---|---|\n%s\n",
		machine(), time.Now().UTC().Format("2006-01-02 15:04 UTC"), strings.Join(lines, "\n"))
}

// delayingProxy forwards every request to target after sleeping delay,
// counting them in calls.
func delayingProxy(t *testing.T, target string, delay time.Duration, calls *atomic.Int64) http.Handler {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	p.Transport = delayed{delay: delay, next: tr}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		p.ServeHTTP(w, r)
	})
}

// delayed is a RoundTripper that waits before each request.
type delayed struct {
	delay time.Duration
	next  http.RoundTripper
}

func (d delayed) RoundTrip(r *http.Request) (*http.Response, error) {
	t := time.NewTimer(d.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return d.next.RoundTrip(r)
}

// kmsBurst runs one burst of n transfers from the operator's default
// account on a fresh geth and service: an account in KMS behind endpoint
// (made the default, given the tokens and ETH), or the local default
// account when endpoint is empty. It returns the drain and chain bound in
// seconds, the service's CPU ms per completed transfer and txload's check.
func kmsBurst(t *testing.T, b bins, n int, endpoint string, srv *kmstest.Server, logf func(string, ...any)) (drain, bound, cpuPer float64, check string) {
	node := gethtest.Start(t, gethtest.Period(1))
	dir := t.TempDir()
	env := []string{
		"TXENGINE_NETWORK_NAME=geth", "TXENGINE_NETWORK_CHAIN_ID=1337",
		"TXENGINE_NETWORK_HTTP_URL=" + node.HTTPURL, "TXENGINE_NETWORK_WS_URL=" + node.WSURL,
		"TXENGINE_NETWORK_FAUCET_KEY=" + hex.EncodeToString(crypto.FromECDSA(node.FaucetKey)),
		"TXENGINE_IN_FLIGHT=" + p2InFlight,
	}
	if endpoint != "" {
		env = append(append(env, srv.Env()...), "TXENGINE_KMS_ENABLED=true", "TXENGINE_KMS_ENDPOINT="+endpoint, "TXENGINE_KMS_REGION="+kmstest.Region)
	}
	deployToken(t, b.txengine, dir, "Bench Token", "BT", env)
	svc := startService(t, b.txengine, dir, env...)
	defer svc.stop()
	ec, err := ethclient.Dial(node.WSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	hc := &http.Client{Timeout: 30 * time.Second}
	var def struct {
		ID, Address string
	}
	if err := apiCall(hc, "GET", svc.url+"/accounts/default", svc.token, "", &def); err != nil {
		t.Fatalf("default account: %v", err)
	}
	sender := def.Address
	if endpoint != "" {
		sender = kmsDefault(t, hc, svc)
	}
	fundETH(t, ec, node, common.HexToAddress(sender), 100)

	cpu := processCPU(t, svc.PID())
	before := scrape(t, svc.url)
	r := runLoad(t, b.txload, svc.url, svc.token, "--n", itoa(n), "--concurrency", itoa(p1Clients), "--timeout", "10m", "--rpc", node.HTTPURL)
	after := scrape(t, svc.url)
	cpuPer = 1000 * (processCPU(t, svc.PID()) - cpu) / (after.completed - before.completed)
	bound, perBlock, err := chainBound(ec, n, r.GasUsedMedian, 1)
	if err != nil {
		t.Fatalf("chain bound: %v", err)
	}
	logf("sender %s: drained %d in %.1fs (bound %.0fs, %d a block), accepted in %.1fs, check %s", sender, n, r.LastCompletedSeconds, bound, perBlock, r.AcceptSeconds, verdict(r))
	if math.IsNaN(bound) || r.Check == nil || !r.Check.OK {
		t.Errorf("run from %s: bound %v, check %s", sender, bound, verdict(r))
	}
	return r.LastCompletedSeconds, bound, cpuPer, verdict(r)
}

// kmsDefault makes a new account whose key is in KMS the operator's
// default account, with 100,000 of the operator's tokens, and returns its
// address.
func kmsDefault(t *testing.T, hc *http.Client, svc *service) string {
	var acct struct {
		ID, Address string
	}
	if err := apiCall(hc, "POST", svc.url+"/accounts", svc.token, `{"custody":{"type":"kms"}}`, &acct); err != nil {
		t.Fatalf("KMS account: %v", err)
	}
	var tokens []struct{ ID string }
	if err := apiCall(hc, "GET", svc.url+"/tokens", svc.token, "", &tokens); err != nil || len(tokens) != 1 {
		t.Fatalf("tokens: %v %v", tokens, err)
	}
	var tr struct{ ID string }
	body := fmt.Sprintf(`{"to":%q,"value":"100000000000000000000000"}`, acct.Address)
	if err := apiCall(hc, "POST", svc.url+"/tokens/"+tokens[0].ID+"/transfers", svc.token, body, &tr); err != nil {
		t.Fatalf("fund the KMS account: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var tx struct{ Status string }
		if err := apiCall(hc, "GET", svc.url+"/transactions/"+tr.ID, svc.token, "", &tx); err == nil && tx.Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the KMS account's tokens did not arrive")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := apiCall(hc, "PUT", svc.url+"/accounts/default", svc.token, fmt.Sprintf(`{"account":%q}`, acct.ID), nil); err != nil {
		t.Fatalf("make the KMS account the default: %v", err)
	}
	return acct.Address
}
