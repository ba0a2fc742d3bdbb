package suite

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/bench/benchtable"
	"github.com/txengine/txengine/internal/freeport"
	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/internal/rpcproxy"
	"github.com/txengine/txengine/internal/servicetest"
)

// subCounts are the numbers of subscriptions of the subscription rows
// (issue 19): none (the baseline), 1, 100 and 10,000 on one network.
var subCounts = []int{0, 1, 100, 10000}

// subProbes is how many probe transfers each row times.
const subProbes = 15

// TestBenchSubscriptions measures what event subscriptions cost and how
// fast they deliver, with 0, 1, 100 and 10,000 subscriptions on one network:
//
//	TXENGINE_BENCH=subscriptions go test -count=1 -v -run TestBenchSubscriptions -timeout 30m ./bench/suite/
//
// The service runs with its defaults on PostgreSQL (fsync on) and geth
// --dev (1 s blocks) reached through a counting JSON-RPC proxy. Every
// subscription is on the token's Transfer with a filter on its own
// recipient; one (the probe) has a callback. For each count, subProbes
// transfers to the probe's recipient are sent one at a time; a row gives
// the JSON-RPC round trips (HTTP requests, a batch is one) and eth_getLogs
// calls per block over that window, and the delay from the moment the
// block arrived as a new head (the benchmark's own subscription to geth)
// to the moment its delivery reached the callback, median and p95.
//
// With TXENGINE_PROFILE=<dir> the service is a profiling build and a CPU
// profile of the probe window of the largest count is written to
// <dir>/subscriptions-cpu.pprof.
func TestBenchSubscriptions(t *testing.T) {
	if os.Getenv("TXENGINE_BENCH") != "subscriptions" {
		t.Skip("the subscription rows run alone with TXENGINE_BENCH=subscriptions")
	}
	var env []string
	if os.Getenv("TXENGINE_PROFILE") != "" {
		bin, err := servicetest.Build(t.TempDir(), servicetest.Package, false, "pprof")
		if err != nil {
			t.Fatalf("build the profiling binary: %v", err)
		}
		t.Setenv("TXENGINE_BENCH_BIN", bin)
		env = append(env, fmt.Sprintf("TXENGINE_PPROF=127.0.0.1:%d", freeport.Get(t)))
	}
	b := build(t)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }
	rows := benchSubscriptions(t, b, env, logf)
	var out strings.Builder
	benchtable.Markdown(&out, benchtable.Run{Machine: machine(), Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Rows: rows})
	fmt.Print("\n" + out.String())
}

// probeReceiver records when each delivery of the probe arrived, by block.
type probeReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got map[uint64]time.Time // first arrival per block number
}

func newProbeReceiver(t *testing.T) *probeReceiver {
	p := &probeReceiver{got: map[uint64]time.Time{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			Event struct {
				BlockNumber uint64 `json:"blockNumber"`
			} `json:"event"`
		}
		if json.Unmarshal(body, &ev) == nil {
			p.mu.Lock()
			if _, ok := p.got[ev.Event.BlockNumber]; !ok {
				p.got[ev.Event.BlockNumber] = at
			}
			p.mu.Unlock()
		}
	}))
	t.Cleanup(p.Close)
	return p
}

// headClock records when each block arrived as a new head.
type headClock struct {
	mu   sync.Mutex
	seen map[uint64]time.Time
}

func benchSubscriptions(t *testing.T, b bins, env []string, logf func(string, ...any)) []benchtable.Row {
	node := gethtest.Start(t, gethtest.Period(1))
	proxy := rpcproxy.Start(t, node.HTTPURL)
	st := startGethStackOn(t, node, b.txengine, append(env, "TXENGINE_NETWORK_HTTP_URL="+proxy.URL(), "TXENGINE_CALLBACKS_ALLOW_PRIVATE=true"))
	var pprofAddr string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "TXENGINE_PPROF="); ok {
			pprofAddr = v
		}
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	var toks []struct {
		ID string `json:"id"`
	}
	if err := apiCall(hc, "GET", st.svc.url+"/tokens", st.svc.token, "", &toks); err != nil || len(toks) != 1 {
		t.Fatalf("tokens: %v %v", toks, err)
	}
	token := toks[0].ID

	heads := &headClock{seen: map[uint64]time.Time{}}
	ch := make(chan *types.Header, 64)
	sub, err := st.ec.SubscribeNewHead(context.Background(), ch)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case h := <-ch:
				heads.mu.Lock()
				heads.seen[h.Number.Uint64()] = time.Now()
				heads.mu.Unlock()
			case <-stop:
				return
			}
		}
	})
	t.Cleanup(func() { close(stop); sub.Unsubscribe(); wg.Wait() })

	probe := newProbeReceiver(t)
	probeTo := randomAddr()
	var rows []benchtable.Row
	have := 0
	for _, n := range subCounts {
		began := time.Now()
		for have < n {
			body := map[string]any{"contractId": token, "event": "Transfer", "filters": map[string]any{"to": randomAddr()}}
			if have == 0 {
				body["filters"] = map[string]any{"to": probeTo}
				body["callbacks"] = []string{probe.URL + "/probe"}
			}
			raw, _ := json.Marshal(body)
			var created struct {
				ID string `json:"id"`
			}
			if err := apiCall(hc, "POST", st.svc.url+"/subscriptions", st.svc.token, string(raw), &created); err != nil {
				t.Fatalf("subscription %d: %v", have+1, err)
			}
			have++
		}
		if n > 0 {
			logf("%d subscriptions created in %s", n, time.Since(began).Round(time.Millisecond))
		}
		var profiled sync.WaitGroup
		if pprofAddr != "" && n == subCounts[len(subCounts)-1] {
			profiled.Go(func() {
				fetch(t, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=15", pprofAddr),
					filepath.Join(os.Getenv("TXENGINE_PROFILE"), "subscriptions-cpu.pprof"))
			})
		}
		rows = append(rows, subRow(t, st, hc, proxy, heads, probe, token, probeTo, n, logf)...)
		profiled.Wait()
	}
	return rows
}

// subRow sends the probe transfers with n subscriptions live and returns
// the rows of n.
func subRow(t *testing.T, st *gethStack, hc *http.Client, proxy *rpcproxy.Proxy, heads *headClock, probe *probeReceiver,
	token, probeTo string, n int, logf func(string, ...any)) []benchtable.Row {
	t.Helper()
	ctx := context.Background()
	time.Sleep(3 * time.Second) // settle: the processor catches up with the new subscriptions
	first, err := st.ec.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	proxy.ResetStats()
	var blocks []uint64
	for range subProbes {
		var tx struct {
			ID string `json:"id"`
		}
		raw := fmt.Sprintf(`{"to":%q,"value":"1"}`, probeTo)
		if err := apiCall(hc, "POST", st.svc.url+"/tokens/"+token+"/transfers", st.svc.token, raw, &tx); err != nil {
			t.Fatalf("probe transfer: %v", err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			var got struct {
				Status      string  `json:"status"`
				BlockNumber *uint64 `json:"blockNumber"`
			}
			if err := apiCall(hc, "GET", st.svc.url+"/transactions/"+tx.ID, st.svc.token, "", &got); err != nil {
				t.Fatal(err)
			}
			if got.Status == "completed" && got.BlockNumber != nil {
				blocks = append(blocks, *got.BlockNumber)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("probe transfer %s is %s after 60 s", tx.ID, got.Status)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var delays []float64
	deadline := time.Now().Add(60 * time.Second)
	for _, bn := range blocks {
		if n == 0 {
			break // no subscription: nothing is delivered
		}
		for {
			probe.mu.Lock()
			at, ok := probe.got[bn]
			probe.mu.Unlock()
			heads.mu.Lock()
			seen, headOK := heads.seen[bn]
			heads.mu.Unlock()
			if ok && headOK {
				delays = append(delays, at.Sub(seen).Seconds()*1000)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no delivery of block %d (n=%d) within 60 s", bn, n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	stats := proxy.Stats()
	last, err := st.ec.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nblocks := float64(last - first)
	slices.Sort(delays)
	var p50, p95 float64
	if len(delays) > 0 {
		p50, p95 = delays[len(delays)/2], delays[min(len(delays)-1, len(delays)*95/100)]
	}
	logf("n=%d: %d blocks, %d round trips (%d batches of %d calls), calls %v; head to callback p50 %.0f ms p95 %.0f ms",
		n, last-first, stats.Requests, stats.Batches, stats.BatchCalls, stats.Calls, p50, p95)
	key := fmt.Sprintf("S.%d", n)
	what := fmt.Sprintf("%d subscriptions", n)
	note := fmt.Sprintf("%d blocks, %d probe transfers, PostgreSQL + geth --dev 1 s", last-first, subProbes)
	rows := []benchtable.Row{
		{ID: key + ".rpc", What: what + ": JSON-RPC round trips per block (whole service)", Value: float64(stats.Requests) / nblocks, Unit: "req", Note: note},
		{ID: key + ".logs", What: what + ": eth_getLogs calls per block", Value: float64(stats.Calls["eth_getLogs"]) / nblocks, Unit: "req"},
	}
	if n > 0 {
		rows = append(rows,
			benchtable.Row{ID: key + ".delay50", What: what + ": head to callback, median", Value: p50, Unit: "ms"},
			benchtable.Row{ID: key + ".delay95", What: what + ": head to callback, p95", Value: p95, Unit: "ms"})
	}
	return rows
}

// randomAddr returns a fresh address, lower case.
func randomAddr() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return strings.ToLower(common.BytesToAddress(b).Hex())
}
