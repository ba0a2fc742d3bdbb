package suite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	_ "github.com/lib/pq" // the soak reads the service's PostgreSQL

	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// soakSample is what the soak reads every interval.
type soakSample struct {
	At                                    time.Duration
	RSSMB, Goroutines, OpenFDs, DBConns   float64
	Pending, OutboxPending, Transactions  float64
	Attempts, TransfersIndexed, Delivered float64
}

// TestSoak is make soak: steady load over many accounts on PostgreSQL and
// geth --dev, with a callback on every transfer and the node restarted
// half way. Every interval it samples the service's RSS, goroutines and
// open files (from /proc and its metrics), the database's connections and
// the rows that must stay bounded (transactions not ended, callbacks not
// delivered) and those that grow with the work done. It fails if anything
// is lost or duplicated (txload's check: one row per 202, gapless nonces,
// balances), if a callback is missing, or if a bounded quantity grows
// without bound: a least-squares slope over the second half of the run
// above its tolerance.
//
// TXENGINE_SOAK=1 runs it; TXENGINE_SOAK_DURATION (1h), _ACCOUNTS (1000),
// _RATE (transfers per second, 20) and _EVERY (5m) change its shape.
func TestSoak(t *testing.T) {
	if os.Getenv("TXENGINE_SOAK") != "1" {
		t.Skip("the soak runs with TXENGINE_SOAK=1 (make soak; SOAK_DURATION=10m shortens it)")
	}
	dur := envDuration(t, "TXENGINE_SOAK_DURATION", time.Hour)
	every := envDuration(t, "TXENGINE_SOAK_EVERY", 5*time.Minute)
	accounts := envInt(t, "TXENGINE_SOAK_ACCOUNTS", 1000)
	rate := envInt(t, "TXENGINE_SOAK_RATE", 20)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "soak: "+format+"\n", args...) }

	b := build(t)
	node := gethtest.Start(t, gethtest.Period(1))
	pg := pgtest.StartDurableCluster(t)
	db, err := sql.Open("postgres", pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	var cbMu sync.Mutex
	delivered := map[string]int{}
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Transaction struct {
				ID string `json:"id"`
			} `json:"transaction"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err == nil && body.Transaction.ID != "" {
			cbMu.Lock()
			delivered[body.Transaction.ID]++
			cbMu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer cb.Close()

	dir := t.TempDir()
	env := []string{
		"TXENGINE_DATABASE_URL=" + pg.URL(),
		"TXENGINE_NETWORK_NAME=geth", "TXENGINE_NETWORK_CHAIN_ID=1337",
		"TXENGINE_NETWORK_HTTP_URL=" + node.HTTPURL, "TXENGINE_NETWORK_WS_URL=" + node.WSURL,
		"TXENGINE_NETWORK_FAUCET_KEY=" + hex.EncodeToString(crypto.FromECDSA(node.FaucetKey)),
		"TXENGINE_CALLBACKS_ALLOW_PRIVATE=true",
	}
	deployToken(t, b.txengine, dir, "Soak Token", "SOAK", env)
	svc := startService(t, b.txengine, dir, env...)
	defer svc.stop()

	start := time.Now()
	var samples []soakSample
	sample := func() {
		s := soakSample{At: time.Since(start), RSSMB: vmRSS(t, svc.PID())}
		if m, err := scrapeGauges(svc.url, "go_goroutines", "process_open_fds"); err == nil {
			s.Goroutines, s.OpenFDs = m["go_goroutines"], m["process_open_fds"]
		}
		q := func(query string) float64 {
			var n sql.NullFloat64
			if err := db.QueryRow(query).Scan(&n); err != nil {
				logf("%s: %v", query, err)
				return math.NaN()
			}
			return n.Float64
		}
		s.DBConns = q(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
		s.Pending = q(`SELECT count(*) FROM transactions WHERE status IN ('new', 'waiting', 'submitted')`)
		s.OutboxPending = q(`SELECT count(*) FROM callback_outbox WHERE status = 'pending'`)
		s.Transactions = q(`SELECT count(*) FROM transactions`)
		s.Attempts = q(`SELECT count(*) FROM tx_attempts`)
		s.TransfersIndexed = q(`SELECT count(*) FROM token_transfers`)
		cbMu.Lock()
		s.Delivered = float64(len(delivered))
		cbMu.Unlock()
		samples = append(samples, s)
		logf("%6s rss %.0f MB, goroutines %.0f, fds %.0f, db conns %.0f, pending %.0f, outbox %.0f, rows %.0f, attempts %.0f, indexed %.0f, callbacks %.0f",
			s.At.Round(time.Second), s.RSSMB, s.Goroutines, s.OpenFDs, s.DBConns, s.Pending, s.OutboxPending, s.Transactions, s.Attempts, s.TransfersIndexed, s.Delivered)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { // samples until the load ends
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				sample()
			}
		}
	})
	wg.Go(func() { // the node restarts half way
		select {
		case <-ctx.Done():
		case <-time.After(dur / 2):
			logf("restarting geth")
			node.Restart()
			logf("geth is back")
		}
	})
	sample()
	n := rate * int(dur/time.Second)
	r := runLoad(t, b.txload, svc.url, svc.token, "--n", itoa(n), "--rate", itoa(rate), "--accounts", itoa(accounts),
		"--concurrency", "64", "--callback", cb.URL, "--timeout", "15m")
	cancel()
	wg.Wait()
	// Callbacks go out after completion: give the outbox a moment.
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		cbMu.Lock()
		got := len(delivered)
		cbMu.Unlock()
		if got >= r.Accepted {
			break
		}
		time.Sleep(time.Second)
	}
	// The last sample is taken after the load (txload's checks read every
	// balance): it tells what is left, not how the steady state grows.
	during := samples
	sample()
	final := samples[len(samples)-1]

	logf("load: %d accepted (%.1f/s), completed %.1f/s, check %s, errors %v", r.Accepted, r.AcceptedPerSec, r.CompletedPerSec, verdict(r), r.Errors)
	if r.Check == nil || !r.Check.OK {
		t.Errorf("exactly-once check failed: %s %v", verdict(r), r.Check)
	}
	cbMu.Lock()
	dupCallbacks := 0
	for _, c := range delivered {
		if c > 1 {
			dupCallbacks++
		}
	}
	if len(delivered) < r.Accepted {
		t.Errorf("callbacks: %d transactions called back, %d accepted", len(delivered), r.Accepted)
	}
	cbMu.Unlock()
	logf("callbacks: %d transactions, %d delivered more than once (at least once is the contract)", len(delivered), dupCallbacks)

	// Bounded quantities: slope per hour over the second half, against a
	// tolerance (a leak grows by far more; a steady state wobbles).
	half := during[len(during)/2:]
	// A short run's few samples make a steep slope out of noise: a
	// quantity fails only when it also grew by more than minGrowth over the
	// window the slope was fitted on.
	window := 0.0
	if len(half) > 1 {
		window = (half[len(half)-1].At - half[0].At).Hours()
	}
	for _, c := range []struct {
		name                 string
		get                  func(soakSample) float64
		tolerance, minGrowth float64 // per hour; over the window
	}{
		{"RSS MB", func(s soakSample) float64 { return s.RSSMB }, 50, 20},
		{"goroutines", func(s soakSample) float64 { return s.Goroutines }, 100, 50},
		{"open files", func(s soakSample) float64 { return s.OpenFDs }, 20, 10},
		{"database connections", func(s soakSample) float64 { return s.DBConns }, 5, 3},
		{"transactions not ended", func(s soakSample) float64 { return s.Pending }, float64(rate) * 60, float64(rate) * 10},
		{"callbacks not delivered", func(s soakSample) float64 { return s.OutboxPending }, float64(rate) * 60, float64(rate) * 10},
	} {
		slope := slopePerHour(half, c.get)
		logf("slope %-24s %+.1f per hour over the second half (%.0f min; tolerance %.0f, or growth under %.0f)", c.name, slope, window*60, c.tolerance, c.minGrowth)
		if len(half) >= 3 && slope > c.tolerance && slope*window > c.minGrowth {
			t.Errorf("%s grows %.1f per hour over the second half (tolerance %.0f)", c.name, slope, c.tolerance)
		}
	}
	if final.Pending != 0 {
		t.Errorf("%.0f transactions not ended at the end", final.Pending)
	}
}

// slopePerHour is the least-squares slope of get over samples, per hour.
func slopePerHour(samples []soakSample, get func(soakSample) float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, s := range samples {
		x, y := s.At.Hours(), get(s)
		if math.IsNaN(y) {
			continue
		}
		n++
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	if n < 2 || n*sxx-sx*sx == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

// scrapeGauges reads the unlabelled series names from url's /metrics.
func scrapeGauges(url string, names ...string) (map[string]float64, error) {
	res, err := http.Get(url + "/metrics")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s/metrics: %w", url, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		for _, name := range names {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				out[name], _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			}
		}
	}
	return out, nil
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
