package rpcproxy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/rpc"
)

// service is the upstream's JSON-RPC API (go-ethereum's own server): it
// counts the calls that reached it.
type service struct{ echoes, adds atomic.Int64 }

func (s *service) Echo(v string) string { s.echoes.Add(1); return v }
func (s *service) Add(a, b int) int     { s.adds.Add(1); return a + b }

// upstream serves service as test_echo and test_add over http and ws.
func upstream(t *testing.T) (*service, *httptest.Server) {
	t.Helper()
	svc := &service{}
	srv := rpc.NewServer()
	if err := srv.RegisterName("test", svc); err != nil {
		t.Fatal(err)
	}
	ws := srv.WebsocketHandler([]string{"*"})
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			ws.ServeHTTP(w, r)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		h.Close()
		srv.Stop()
	})
	return svc, h
}

func dial(t *testing.T, url string) *rpc.Client {
	t.Helper()
	c, err := rpc.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestCounts(t *testing.T) {
	svc, up := upstream(t)
	p := Start(t, up.URL)
	c := dial(t, p.URL())
	var s string
	if err := c.CallContext(ctx(t), &s, "test_echo", "hi"); err != nil || s != "hi" {
		t.Fatalf("test_echo through the proxy = %q, %v", s, err)
	}
	var sums [2]int
	batch := []rpc.BatchElem{
		{Method: "test_echo", Args: []any{"a"}, Result: &s},
		{Method: "test_add", Args: []any{1, 2}, Result: &sums[0]},
		{Method: "test_add", Args: []any{3, 4}, Result: &sums[1]},
	}
	if err := c.BatchCallContext(ctx(t), batch); err != nil {
		t.Fatal(err)
	}
	for _, b := range batch {
		if b.Error != nil {
			t.Fatalf("%s: %v", b.Method, b.Error)
		}
	}
	if sums != [2]int{3, 7} {
		t.Fatalf("batch answers %v", sums)
	}

	// Concurrent callers: every call counted once.
	const callers, each = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				var n int
				if err := c.CallContext(context.Background(), &n, "test_add", j, 1); err != nil {
					errs <- err
					return
				}
				_ = p.Count("test_add") // counts are read while calls go on
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Requests != 2+callers*each || st.Batches != 1 || st.BatchCalls != 3 ||
		st.Calls["test_echo"] != 2 || st.Calls["test_add"] != 2+callers*each {
		t.Fatalf("stats %+v", st)
	}
	if got := svc.adds.Load(); got != 2+callers*each {
		t.Fatalf("upstream served %d adds, want %d", got, 2+callers*each)
	}
	p.ResetStats()
	if st := p.Stats(); st.Requests != 0 || len(st.Calls) != 0 {
		t.Fatalf("stats after ResetStats: %+v", st)
	}
}

func TestRefuse(t *testing.T) {
	svc, up := upstream(t)
	p := Start(t, up.URL)
	c := dial(t, p.URL())
	p.Refuse("test_add", 1, Error{Code: -32000, Message: "replacement transaction underpriced"})
	var n int
	err := c.CallContext(ctx(t), &n, "test_add", 1, 1)
	var rerr rpc.Error
	if !errors.As(err, &rerr) || rerr.ErrorCode() != -32000 || err.Error() != "replacement transaction underpriced" {
		t.Fatalf("refused call: %v, want the injected error", err)
	}
	if svc.adds.Load() != 0 {
		t.Fatal("a refused call reached the upstream")
	}
	if err := c.CallContext(ctx(t), &n, "test_add", 1, 1); err != nil || n != 2 {
		t.Fatalf("the call after a one-time refusal = %d, %v", n, err)
	}

	// In a batch only the refused elements are answered by the proxy.
	p.Refuse("test_add", Always, Error{Code: -32601, Message: "Method test_add is not supported"})
	var s string
	batch := []rpc.BatchElem{
		{Method: "test_add", Args: []any{1, 2}, Result: &n},
		{Method: "test_echo", Args: []any{"kept"}, Result: &s},
		{Method: "test_add", Args: []any{3, 4}, Result: &n},
	}
	if err := c.BatchCallContext(ctx(t), batch); err != nil {
		t.Fatal(err)
	}
	if batch[1].Error != nil || s != "kept" {
		t.Fatalf("the batch's forwarded element: %q, %v", s, batch[1].Error)
	}
	for _, i := range []int{0, 2} {
		if !errors.As(batch[i].Error, &rerr) || rerr.ErrorCode() != -32601 {
			t.Fatalf("the batch's refused element %d: %v", i, batch[i].Error)
		}
	}
	if svc.adds.Load() != 1 || svc.echoes.Load() != 1 {
		t.Fatalf("upstream served %d adds and %d echoes, want 1 and 1", svc.adds.Load(), svc.echoes.Load())
	}
	// Every element refused: nothing goes upstream.
	if err := c.BatchCallContext(ctx(t), []rpc.BatchElem{{Method: "test_add", Args: []any{1, 2}, Result: &n}}); err != nil {
		t.Fatal(err)
	}
	if svc.adds.Load() != 1 {
		t.Fatal("a batch of refused calls reached the upstream")
	}
	if st := p.Stats(); st.Refused != 4 || st.Calls["test_add"] != 5 {
		t.Fatalf("stats %+v; want 4 refused of 5 adds", st)
	}
	p.ClearFaults()
	if err := c.CallContext(ctx(t), &n, "test_add", 2, 2); err != nil || n != 4 {
		t.Fatalf("after ClearFaults: %d, %v", n, err)
	}
}

func TestDelay(t *testing.T) {
	_, up := upstream(t)
	p := Start(t, up.URL)
	c := dial(t, p.URL())
	p.Delay("test_echo", 300*time.Millisecond)
	var s string
	start := time.Now()
	if err := c.CallContext(ctx(t), &s, "test_echo", "slow"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("delayed call took %s, want 300ms or more", d)
	}
	var n int
	start = time.Now()
	if err := c.CallContext(ctx(t), &n, "test_add", 1, 1); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= 300*time.Millisecond {
		t.Fatalf("a call of another method took %s", d)
	}
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := c.CallContext(short, &s, "test_echo", "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a delayed call with a shorter timeout: %v, want deadline exceeded", err)
	}
	if st := p.Stats(); st.Delayed != 2 {
		t.Fatalf("stats %+v, want 2 delayed", st)
	}
}

func TestReset(t *testing.T) {
	svc, up := upstream(t)
	p := Start(t, up.URL)
	c := dial(t, p.URL())
	var n int
	p.ResetNext(1)
	if err := c.CallContext(ctx(t), &n, "test_add", 1, 1); err == nil {
		t.Fatal("a reset request succeeded")
	}
	if svc.adds.Load() != 0 {
		t.Fatal("a reset request reached the upstream")
	}
	if err := c.CallContext(ctx(t), &n, "test_add", 1, 1); err != nil || n != 2 {
		t.Fatalf("the request after the reset: %d, %v", n, err)
	}

	p.ResetOn("test_add", Always)
	var s string
	err := c.BatchCallContext(ctx(t), []rpc.BatchElem{
		{Method: "test_echo", Args: []any{"a"}, Result: &s},
		{Method: "test_add", Args: []any{1, 2}, Result: &n},
	})
	if err == nil {
		t.Fatal("a batch holding a reset method succeeded")
	}
	if err := c.CallContext(ctx(t), &s, "test_echo", "b"); err != nil || s != "b" {
		t.Fatalf("a request without the reset method: %q, %v", s, err)
	}
	if err := c.CallContext(ctx(t), &n, "test_add", 1, 1); err == nil {
		t.Fatal("the reset method succeeded the second time")
	}
	if st := p.Stats(); st.Reset != 3 || svc.adds.Load() != 1 {
		t.Fatalf("stats %+v, upstream adds %d; want 3 resets and 1 add", st, svc.adds.Load())
	}
}

func TestWebSocketPassesThrough(t *testing.T) {
	_, up := upstream(t)
	p := Start(t, up.URL)
	c := dial(t, "ws"+strings.TrimPrefix(p.URL(), "http"))
	var s string
	if err := c.CallContext(ctx(t), &s, "test_echo", "ws"); err != nil || s != "ws" {
		t.Fatalf("test_echo over ws through the proxy = %q, %v", s, err)
	}
	if st := p.Stats(); st.Requests != 0 {
		t.Fatalf("ws traffic counted: %+v", st)
	}
}

func TestTCP(t *testing.T) {
	_, up := upstream(t)
	p := StartTCP(t, strings.TrimPrefix(up.URL, "http://"))
	c := dial(t, p.URL("http"))
	var s string
	if err := c.CallContext(ctx(t), &s, "test_echo", "plain"); err != nil || s != "plain" {
		t.Fatalf("through toxiproxy = %q, %v", s, err)
	}

	p.Latency(250*time.Millisecond, 0)
	start := time.Now()
	if err := c.CallContext(ctx(t), &s, "test_echo", "late"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("call with 250ms latency took %s", d)
	}
	p.Clear()

	p.Stall(0)
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := c.CallContext(short, &s, "test_echo", "hung"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call through a stalled connection: %v, want deadline exceeded", err)
	}
	p.Clear()

	p.ResetPeer(0)
	if err := c.CallContext(ctx(t), &s, "test_echo", "reset"); err == nil {
		t.Fatal("call through a reset connection succeeded")
	}
	p.Clear()
	if err := c.CallContext(ctx(t), &s, "test_echo", "again"); err != nil || s != "again" {
		t.Fatalf("after Clear: %q, %v", s, err)
	}

	ws := dial(t, p.URL("ws"))
	if err := ws.CallContext(ctx(t), &s, "test_echo", "ws"); err != nil || s != "ws" {
		t.Fatalf("ws through toxiproxy = %q, %v", s, err)
	}
}

func TestLoseAnswer(t *testing.T) {
	svc, up := upstream(t)
	p := Start(t, up.URL)
	c := dial(t, p.URL())
	p.LoseAnswer("test_add", 2)
	var n int
	for i := 0; i < 2; i++ {
		if err := c.CallContext(ctx(t), &n, "test_add", 1, 1); err == nil {
			t.Fatalf("call %d with its answer lost succeeded", i)
		}
	}
	if got := svc.adds.Load(); got != 2 {
		t.Fatalf("upstream served %d adds, want 2: a lost answer's request reaches it", got)
	}
	if err := c.CallContext(ctx(t), &n, "test_add", 2, 3); err != nil || n != 5 {
		t.Fatalf("the call after the lost answers: %d, %v", n, err)
	}
	if st := p.Stats(); st.Lost != 2 || st.Reset != 0 || st.Calls["test_add"] != 3 {
		t.Fatalf("stats %+v; want 2 lost of 3 adds", st)
	}
}
