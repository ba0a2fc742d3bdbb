package rpcproxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"
)

// ethService is the part of a node's eth namespace the provider's faults
// concern; it records what reached it.
type ethService struct {
	estimates, sends atomic.Int64
	lastRaw          atomic.Value // hexutil.Bytes of the last send
}

func (s *ethService) EstimateGas(args map[string]any) hexutil.Uint64 {
	s.estimates.Add(1)
	return 21000
}

func (s *ethService) SendRawTransaction(raw hexutil.Bytes) common.Hash {
	s.sends.Add(1)
	s.lastRaw.Store(raw)
	return common.BytesToHash(raw)
}

// ethUpstream serves service as test_* and ethService as eth_* over http.
func ethUpstream(t *testing.T) (*service, *ethService, *httptest.Server) {
	t.Helper()
	svc, eth := &service{}, &ethService{}
	srv := rpc.NewServer()
	if err := srv.RegisterName("test", svc); err != nil {
		t.Fatal(err)
	}
	if err := srv.RegisterName("eth", eth); err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(srv)
	t.Cleanup(func() {
		h.Close()
		srv.Stop()
	})
	return svc, eth, h
}

// The recipient the refusal rules look for, and a transfer's calldata to it.
const refusedTo = "0x00000000000000000000000000000000DeaDBeef"

func transferData(to string) string {
	return "0xa9059cbb000000000000000000000000" + strings.ToLower(strings.TrimPrefix(to, "0x")) + strings.Repeat("0", 63) + "1"
}

// httpStatus returns the HTTP status of err when the server answered with
// one (rpc.HTTPError), 0 otherwise.
func httpStatus(err error) int {
	var he rpc.HTTPError
	if errors.As(err, &he) {
		return he.StatusCode
	}
	return 0
}

func TestProviderRateLimited(t *testing.T) {
	svc, _, up := ethUpstream(t)
	p := Start(t, up.URL)
	c := dial(t, p.URL())
	p.SetProvider(Provider{Seed: 1, RateLimited: 1})
	var s string
	err := c.CallContext(ctx(t), &s, "test_echo", "x")
	var he rpc.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(he.Body), `"code":429`) ||
		!strings.Contains(string(he.Body), "compute units per second") {
		t.Fatalf("a rate-limited call: %v, want HTTP 429 with a JSON-RPC error body", err)
	}
	if err := c.BatchCallContext(ctx(t), []rpc.BatchElem{{Method: "test_echo", Args: []any{"a"}, Result: &s}}); httpStatus(err) != 429 {
		t.Fatalf("a rate-limited batch: %v, want HTTP 429", err)
	}
	// As a client without go-ethereum sees it: Retry-After, a JSON body.
	res, err := http.Post(p.URL(), "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"test_echo","params":["y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" || res.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), `"id":7`) {
		t.Fatalf("raw 429: %d %v %s", res.StatusCode, res.Header, body)
	}
	if svc.echoes.Load() != 0 {
		t.Fatal("a rate-limited request reached the node")
	}
	if st := p.Stats(); st.RateLimited != 3 || st.Requests != 3 {
		t.Fatalf("stats %+v, want 3 rate limited of 3", st)
	}

	// A fraction, seeded: about a quarter, and the same sequence again for
	// the same seed (callers one after the other).
	outcomes := func(seed uint64) string {
		p.SetProvider(Provider{Seed: seed, RateLimited: 0.25})
		var b strings.Builder
		for range 400 {
			if err := c.CallContext(ctx(t), &s, "test_echo", "z"); httpStatus(err) == 429 {
				b.WriteByte('x')
			} else if err != nil {
				t.Fatal(err)
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	first := outcomes(42)
	if n := strings.Count(first, "x"); n < 60 || n > 140 {
		t.Fatalf("%d of 400 requests rate limited at 0.25", n)
	}
	if again := outcomes(42); again != first {
		t.Fatalf("seed 42 gave another sequence:\n%s\n%s", first, again)
	}
	if other := outcomes(43); other == first {
		t.Fatal("seeds 42 and 43 gave the same sequence")
	}
	p.ClearFaults()
	if err := c.CallContext(ctx(t), &s, "test_echo", "ok"); err != nil || s != "ok" {
		t.Fatalf("after ClearFaults: %q, %v", s, err)
	}
}

func TestProviderSlow(t *testing.T) {
	_, _, up := ethUpstream(t)
	p := Start(t, up.URL)
	c := dial(t, p.URL())
	p.SetProvider(Provider{Seed: 3, Slow: 1, SlowMin: 200 * time.Millisecond, SlowMax: 250 * time.Millisecond})
	var s string
	start := time.Now()
	if err := c.CallContext(ctx(t), &s, "test_echo", "slow"); err != nil || s != "slow" {
		t.Fatalf("slow call: %q, %v", s, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("a slow call took %s, want 200ms or more", d)
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.CallContext(short, &s, "test_echo", "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a slow call with a shorter timeout: %v, want deadline exceeded", err)
	}
	p.SetProvider(Provider{Seed: 3, Slow: 0.5, SlowMin: time.Millisecond, SlowMax: 2 * time.Millisecond})
	p.ResetStats()
	for range 200 {
		if err := c.CallContext(ctx(t), &s, "test_echo", "y"); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.Stats(); st.Delayed < 60 || st.Delayed > 140 || st.RateLimited != 0 || st.Lost != 0 {
		t.Fatalf("stats %+v, want about 100 of 200 delayed and nothing else", st)
	}
}

func TestProviderLostSend(t *testing.T) {
	svc, eth, up := ethUpstream(t)
	p := Start(t, up.URL)
	c := dial(t, p.URL())
	p.SetProvider(Provider{Seed: 5, LostSend: 1})
	var h common.Hash
	var s string
	resets, gateways := 0, 0
	for i := range 40 {
		err := c.CallContext(ctx(t), &h, "eth_sendRawTransaction", hexutil.Bytes{byte(i)})
		switch httpStatus(err) {
		case 0:
			if err == nil {
				t.Fatalf("send %d with its answer lost succeeded", i)
			}
			resets++
		case http.StatusBadGateway:
			gateways++
		default:
			t.Fatalf("send %d: %v, want a reset or 502", i, err)
		}
		// Other requests go through.
		if err := c.CallContext(ctx(t), &s, "test_echo", "e"); err != nil || s != "e" {
			t.Fatalf("echo between lost sends: %q, %v", s, err)
		}
	}
	if eth.sends.Load() != 40 {
		t.Fatalf("the node took %d of 40 sends whose answer was lost, want all", eth.sends.Load())
	}
	if resets == 0 || gateways == 0 {
		t.Fatalf("%d resets and %d 502s of 40 lost answers, want both kinds", resets, gateways)
	}
	// A batch of sends is lost whole, after the node took every element.
	var h2 common.Hash
	err := c.BatchCallContext(ctx(t), []rpc.BatchElem{
		{Method: "eth_sendRawTransaction", Args: []any{hexutil.Bytes{1}}, Result: &h},
		{Method: "test_echo", Args: []any{"b"}, Result: &s},
		{Method: "eth_sendRawTransaction", Args: []any{hexutil.Bytes{2}}, Result: &h2},
	})
	if err == nil {
		t.Fatal("a batch of sends with its answer lost succeeded")
	}
	if eth.sends.Load() != 42 || svc.echoes.Load() != 41 {
		t.Fatalf("the node took %d sends and %d echoes, want 42 and 41", eth.sends.Load(), svc.echoes.Load())
	}
	if st := p.Stats(); st.Lost != 41 || st.Gateway != gateways+btoi(httpStatus(err) == 502) {
		t.Fatalf("stats %+v; want 41 lost, %d of them 502", st, gateways)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestRefuseRecipient(t *testing.T) {
	_, eth, up := ethUpstream(t)
	p := Start(t, up.URL)
	c := dial(t, p.URL())
	p.RefuseRecipient(strings.ToUpper(refusedTo[2:]), false) // case does not matter
	var gas hexutil.Uint64
	refused := map[string]any{"from": "0x01", "to": "0x02", "data": transferData(refusedTo)}
	other := map[string]any{"from": "0x01", "to": "0x02", "data": transferData("0x00000000000000000000000000000000000000aa")}
	for range 3 { // for good
		err := c.CallContext(ctx(t), &gas, "eth_estimateGas", refused)
		var rerr rpc.Error
		if !errors.As(err, &rerr) || rerr.ErrorCode() != -32000 || err.Error() != "gas required exceeds allowance (50000000)" {
			t.Fatalf("estimate of a transfer to the refused recipient: %v, want geth's gas allowance error", err)
		}
	}
	if err := c.CallContext(ctx(t), &gas, "eth_estimateGas", other); err != nil || gas != 21000 {
		t.Fatalf("estimate of another transfer: %d, %v", gas, err)
	}
	var g1, g2 hexutil.Uint64
	batch := []rpc.BatchElem{
		{Method: "eth_estimateGas", Args: []any{other}, Result: &g1},
		{Method: "eth_estimateGas", Args: []any{refused}, Result: &g2},
	}
	if err := c.BatchCallContext(ctx(t), batch); err != nil {
		t.Fatal(err)
	}
	if batch[0].Error != nil || g1 != 21000 || batch[1].Error == nil || !strings.Contains(batch[1].Error.Error(), "gas required exceeds allowance") {
		t.Fatalf("batch of estimates: %d %v, %v", g1, batch[0].Error, batch[1].Error)
	}
	if eth.estimates.Load() != 2 {
		t.Fatalf("the node estimated %d times, want 2 (the refused never reach it)", eth.estimates.Load())
	}
	// The broadcast is not refused unless asked.
	raw := hexutil.MustDecode(transferData(refusedTo))
	var h common.Hash
	if err := c.CallContext(ctx(t), &h, "eth_sendRawTransaction", hexutil.Bytes(raw)); err != nil {
		t.Fatalf("send to the refused recipient without broadcast refusal: %v", err)
	}

	p.ClearFaults()
	p.ResetStats()
	p.RefuseRecipient(refusedTo, true)
	// Every send's answer would be lost: the refused element still never
	// reaches the node, its neighbour does.
	p.SetProvider(Provider{Seed: 9, LostSend: 1})
	before := eth.sends.Load()
	if err := c.CallContext(ctx(t), &h, "eth_sendRawTransaction", hexutil.Bytes(raw)); err == nil || err.Error() != "exceeds block gas limit" {
		t.Fatalf("send to the refused recipient: %v, want geth's block gas limit refusal", err)
	}
	var h2 common.Hash
	err := c.BatchCallContext(ctx(t), []rpc.BatchElem{
		{Method: "eth_sendRawTransaction", Args: []any{hexutil.Bytes{7}}, Result: &h},
		{Method: "eth_sendRawTransaction", Args: []any{hexutil.Bytes(raw)}, Result: &h2},
	})
	if err == nil {
		t.Fatal("a batch with a send whose answer is lost succeeded")
	}
	if got := eth.sends.Load() - before; got != 1 {
		t.Fatalf("the node took %d sends, want 1 (the refused one never)", got)
	}
	if last, _ := eth.lastRaw.Load().(hexutil.Bytes); len(last) != 1 || last[0] != 7 {
		t.Fatalf("the node took %x, want the unrefused send", last)
	}
	if st := p.Stats(); st.Refused != 2 || st.Lost != 1 {
		t.Fatalf("stats %+v; want 2 refused, 1 lost", st)
	}
	p.ClearFaults()
	if err := c.CallContext(ctx(t), &gas, "eth_estimateGas", refused); err != nil {
		t.Fatalf("after ClearFaults: %v", err)
	}
}
