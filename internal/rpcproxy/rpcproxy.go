// Package rpcproxy puts a JSON-RPC reverse proxy between a client under test
// and a node: it counts the requests per method and injects faults (a method
// refused with a given JSON-RPC error, latency, a connection reset) at the
// JSON-RPC level. provider.go makes it a busy hosted provider (seeded random
// 429s, slow answers, lost broadcasts) and refuses chosen calls for good.
// TCP-level faults on any connection are in tcp.go (toxiproxy, in process).
package rpcproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Always, as a number of times, makes a fault permanent (until ClearFaults).
const Always = -1

// maxBody bounds a request body the proxy reads (a large batch fits).
const maxBody = 64 << 20

// Error is a JSON-RPC error object.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Stats is what went through the proxy.
type Stats struct {
	// Requests is the number of HTTP requests carrying JSON-RPC (a batch
	// is one), Batches how many of them were batches, BatchCalls the
	// calls in those batches.
	Requests, Batches, BatchCalls int
	// Calls counts the calls per method; each element of a batch counts.
	Calls map[string]int
	// Refused, Reset, Lost and Delayed count the faults injected: calls
	// answered with an injected error, requests whose connection was
	// reset before they were forwarded, requests forwarded whose answer
	// was replaced by a reset (or, of a Provider, by a 502: Gateway of
	// them), requests delayed (a Provider's slow ones included).
	Refused, Reset, Lost, Delayed int
	// RateLimited counts the requests a Provider answered 429; Gateway the
	// lost answers it replaced by 502 Bad Gateway.
	RateLimited, Gateway int
	// RefusedBatches counts the batches refused by RefuseBatches.
	RefusedBatches int
	// PoolFull counts the transactions the busy mempool refused
	// (BusyMempool), BusyReads its own calls to the node (heads and
	// senders' nonces).
	PoolFull, BusyReads int
}

// Proxy is a running proxy. Its methods are safe for concurrent use.
type Proxy struct {
	srv      *httptest.Server
	upstream string
	client   *http.Client
	ws       *httputil.ReverseProxy

	mu     sync.Mutex
	stats  Stats
	refuse map[string]*refusal
	delay  map[string]time.Duration // "" for every request
	// resetNext is the number of next requests to reset; resetOn the
	// remaining resets per method (Always: every time).
	resetNext int
	resetOn   map[string]int
	// loseOn is the remaining lost answers per method (Always: every time).
	loseOn map[string]int
	// provider is the busy provider's faults, drawn from rng (nil: off).
	provider Provider
	rng      *rand.Rand
	// rules refuse calls by their params (RefuseContaining).
	rules []rule
	// batchRefusal is how batches are refused (RefuseBatches).
	batchRefusal BatchRefusal
	// busy is the busy mempool (BusyMempool), with its own lock.
	busy busy
}

type refusal struct {
	err   Error
	times int
}

// call is the part of a JSON-RPC request the proxy reads.
type call struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Start starts a proxy on a free loopback port in front of upstream (an
// http:// JSON-RPC endpoint). WebSocket upgrades pass through untouched and
// uncounted. The proxy stops at the end of the test.
func Start(t testing.TB, upstream string) *Proxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		t.Fatalf("rpcproxy: upstream %q is not an http URL (%v)", upstream, err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	p := &Proxy{
		upstream: upstream,
		client:   &http.Client{Transport: transport},
		ws:       httputil.NewSingleHostReverseProxy(u),
		refuse:   map[string]*refusal{},
		delay:    map[string]time.Duration{},
		resetOn:  map[string]int{},
		loseOn:   map[string]int{},
		stats:    Stats{Calls: map[string]int{}},
	}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		p.srv.CloseClientConnections()
		p.srv.Close()
		transport.CloseIdleConnections()
	})
	return p
}

// URL returns the proxy's http:// endpoint.
func (p *Proxy) URL() string { return p.srv.URL }

// Stats returns a copy of the counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Calls = maps.Clone(p.stats.Calls)
	return s
}

// Count returns how many calls of method went through (batch elements
// included).
func (p *Proxy) Count(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats.Calls[method]
}

// ResetStats sets every count to zero.
func (p *Proxy) ResetStats() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats = Stats{Calls: map[string]int{}}
}

// Refuse answers the next times calls of method (Always: every call) with e
// instead of forwarding them. In a batch only the refused elements are
// answered so; the others go upstream.
func (p *Proxy) Refuse(method string, times int, e Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if times == 0 {
		delete(p.refuse, method)
		return
	}
	p.refuse[method] = &refusal{err: e, times: times}
}

// Delay holds every request containing method (every request when method is
// "") for d before forwarding it; the longest delay that applies wins. A
// zero d removes the delay.
func (p *Proxy) Delay(method string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d <= 0 {
		delete(p.delay, method)
		return
	}
	p.delay[method] = d
}

// ResetNext resets the connection of the next n requests: the proxy reads
// the request, then closes the TCP connection abruptly (RST) without an
// answer, so the client cannot tell whether the node got it.
func (p *Proxy) ResetNext(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resetNext = n
}

// ResetOn resets the connection of the next times requests containing method
// (a single call or a batch element; Always: every time).
func (p *Proxy) ResetOn(method string, times int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if times == 0 {
		delete(p.resetOn, method)
		return
	}
	p.resetOn[method] = times
}

// LoseAnswer forwards the next times requests containing method (Always:
// every time) to the upstream, waits for its answer and then resets the
// connection instead of passing the answer on: the node acted on the
// request, the client cannot tell.
func (p *Proxy) LoseAnswer(method string, times int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if times == 0 {
		delete(p.loseOn, method)
		return
	}
	p.loseOn[method] = times
}

// ClearFaults removes every fault (a Provider's, RefuseContaining's and
// the busy mempool too); counts stay.
func (p *Proxy) ClearFaults() {
	p.BusyMempool(0)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = map[string]*refusal{}
	p.delay = map[string]time.Duration{}
	p.resetNext = 0
	p.resetOn = map[string]int{}
	p.loseOn = map[string]int{}
	p.provider, p.rng, p.rules = Provider{}, nil, nil
	p.batchRefusal = BatchesPass
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || strings.EqualFold(r.Header.Get("Connection"), "upgrade") || r.Header.Get("Upgrade") != "" {
		p.ws.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("rpcproxy: read request: %v", err), http.StatusBadRequest)
		return
	}
	calls, batch, err := parse(body)
	if err != nil {
		// Not JSON-RPC: let the node answer it.
		p.forward(w, r, body)
		return
	}
	d := p.account(calls, batch, p.busyRefusals(r.Context(), calls))
	switch {
	case d.refuseBatch != BatchesPass:
		writeBatchRefusal(w, d.refuseBatch)
		return
	case d.reset:
		resetConn(w)
		return
	case d.rateLimited != nil:
		id := calls[0].ID
		if batch {
			id = nil
		}
		writeRateLimited(w, id, *d.rateLimited)
		return
	}
	if d.delay > 0 {
		select {
		case <-time.After(d.delay):
		case <-r.Context().Done():
			return
		}
	}
	if d.lose {
		p.loseAnswer(w, r, body, d.refused, d.gateway)
		return
	}
	if len(d.refused) == 0 {
		p.forward(w, r, body)
		return
	}
	if !batch {
		writeJSON(w, errorResponse(calls[0].ID, d.refused[0]))
		return
	}
	p.forwardPartial(w, r, body, d.refused)
}

// parse reads the calls of a JSON-RPC request or batch.
func parse(body []byte) (calls []call, batch bool, err error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &calls); err != nil {
			return nil, false, err
		}
		if len(calls) == 0 {
			return nil, false, fmt.Errorf("empty batch")
		}
		return calls, true, nil
	}
	var c call
	if err := json.Unmarshal(trimmed, &c); err != nil {
		return nil, false, err
	}
	return []call{c}, false, nil
}

// forward sends body upstream and copies the answer back.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	res, err := p.post(r, body)
	if err != nil {
		http.Error(w, fmt.Sprintf("rpcproxy: upstream: %v", err), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
}

// forwardPartial forwards the batch's calls that are not refused and answers
// with their responses and the injected errors.
func (p *Proxy) forwardPartial(w http.ResponseWriter, r *http.Request, body []byte, refused map[int]*Error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		http.Error(w, fmt.Sprintf("rpcproxy: batch: %v", err), http.StatusBadRequest)
		return
	}
	var injected []json.RawMessage
	var rest []json.RawMessage
	for i, elem := range raw {
		if e, ok := refused[i]; ok {
			var c call
			_ = json.Unmarshal(elem, &c)
			injected = append(injected, errorResponse(c.ID, e))
			continue
		}
		rest = append(rest, elem)
	}
	out := injected
	if len(rest) > 0 {
		sub, _ := json.Marshal(rest)
		res, err := p.post(r, sub)
		if err != nil {
			http.Error(w, fmt.Sprintf("rpcproxy: upstream: %v", err), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			http.Error(w, fmt.Sprintf("rpcproxy: upstream: %v", err), http.StatusBadGateway)
			return
		}
		var answers []json.RawMessage
		if res.StatusCode != http.StatusOK || json.Unmarshal(b, &answers) != nil {
			// Not a batch answer: pass it on as the node gave it.
			w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
			w.WriteHeader(res.StatusCode)
			_, _ = w.Write(b)
			return
		}
		out = append(answers, injected...)
	}
	writeJSON(w, out)
}

func (p *Proxy) post(r *http.Request, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, p.upstream, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	return p.client.Do(req)
}

func errorResponse(id json.RawMessage, e *Error) json.RawMessage {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *Error          `json:"error"`
	}{"2.0", id, e})
	return b
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("rpcproxy: encode: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// resetConn closes the request's connection with a TCP RST and no answer.
func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // HTTP/2: abort the stream
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
