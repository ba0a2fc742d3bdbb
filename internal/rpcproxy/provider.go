package rpcproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// Provider makes the proxy behave like a busy hosted provider (the
// endpoints integrators actually use), with faults drawn at random from a
// seeded generator: each HTTP request carrying JSON-RPC (a batch is one)
// draws whether it is rate limited, slow, and, when it broadcasts, whether
// its answer is lost after the node took it. The zero value injects
// nothing.
//
// A request draws the same number of values whatever it carries, so the
// n-th request to arrive meets the same faults for the same Seed; which
// request arrives n-th is the client's business (concurrent callers
// interleave as they will).
type Provider struct {
	// Seed seeds the draws.
	Seed uint64
	// RateLimited is the fraction of requests answered HTTP 429 Too Many
	// Requests with a JSON-RPC error body (RateLimit) and a Retry-After
	// header, without reaching the node.
	RateLimited float64
	// RateLimit is the JSON-RPC error of a 429's body; the zero value is
	// RateLimitError.
	RateLimit Error
	// Slow is the fraction of the other requests held before they are
	// forwarded, for a time drawn uniformly in [SlowMin, SlowMax].
	Slow             float64
	SlowMin, SlowMax time.Duration
	// LostSend is the fraction of the requests holding an
	// eth_sendRawTransaction the proxy does not refuse (a call or a batch)
	// that are forwarded to the node, which acts on them, and whose answer
	// is lost: half of them (drawn) end in a connection reset, the others
	// in 502 Bad Gateway from the proxy, as a provider's load balancer
	// answers when its backend went away.
	LostSend float64
}

// RateLimitError is what a hosted provider puts in the body of its 429
// (Alchemy's words; Infura answers code -32005, QuickNode -32007, with
// their own).
var RateLimitError = Error{Code: 429, Message: "Your app has exceeded its compute units per second capacity. If you have retries enabled, you can safely ignore this message."}

// GasAllowanceError is geth's answer to an eth_estimateGas that needs more
// gas than the cap allows (eth/gasestimator: the transaction would fail at
// any gas limit up to cap, e.g. it runs out of gas or the sender cannot pay
// for that much), for a node whose RPC gas cap is gasCap.
func GasAllowanceError(gasCap uint64) Error {
	return Error{Code: -32000, Message: fmt.Sprintf("gas required exceeds allowance (%d)", gasCap)}
}

// BlockGasLimitError is geth's txpool refusal of a transaction whose gas
// limit is above the block's (core/txpool.ErrGasLimit): final, whatever the
// node's load.
var BlockGasLimitError = Error{Code: -32000, Message: "exceeds block gas limit"}

// SetProvider turns on pr's faults (and restarts its draws from pr.Seed);
// SetProvider(Provider{}) or ClearFaults turns them off.
func (p *Proxy) SetProvider(pr Provider) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr.RateLimit == (Error{}) {
		pr.RateLimit = RateLimitError
	}
	p.provider = pr
	p.rng = rand.New(rand.NewPCG(pr.Seed, pr.Seed^0x9e3779b97f4a7c15))
}

// RefuseContaining answers every call of method whose params contain needle
// (compared without regard to case in the call's JSON params) with e, until
// ClearFaults, instead of forwarding it; in a batch only those elements are
// answered so. A hex needle finds a value anywhere in a call: an address
// (without 0x) in an eth_estimateGas's data, or in the signed bytes an
// eth_sendRawTransaction carries.
func (p *Proxy) RefuseContaining(method, needle string, e Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, rule{method: method, needle: []byte(strings.ToLower(needle)), err: e})
}

// RefuseRecipient refuses for good, as geth would, the transactions whose
// calldata names to (an ERC-20 transfer's recipient): their eth_estimateGas
// with GasAllowanceError, and, when broadcast is set, their
// eth_sendRawTransaction with BlockGasLimitError, so that a client signing
// one anyway (with a gas limit of its own) is refused too.
func (p *Proxy) RefuseRecipient(to string, broadcast bool) {
	needle := strings.TrimPrefix(strings.ToLower(to), "0x")
	p.RefuseContaining("eth_estimateGas", needle, GasAllowanceError(50_000_000))
	if broadcast {
		p.RefuseContaining("eth_sendRawTransaction", needle, BlockGasLimitError)
	}
}

// rule is one RefuseContaining.
type rule struct {
	method string
	needle []byte
	err    Error
}

// matches reports whether c is refused by the rule.
func (r rule) matches(c call) bool {
	return c.Method == r.method && bytes.Contains(bytes.ToLower(c.Params), r.needle)
}

// draws is what the provider decided for one request.
type draws struct {
	rateLimited bool
	slow        time.Duration
	lose        bool
	gateway     bool // a lost answer ends in 502, not a reset
}

// draw decides the provider's faults for a request (p.mu held). Every
// request draws four values, whatever it carries.
func (p *Proxy) draw(sends bool) draws {
	if p.rng == nil {
		return draws{}
	}
	pr := p.provider
	limit, slow, span, lose := p.rng.Float64(), p.rng.Float64(), p.rng.Float64(), p.rng.Float64()
	var d draws
	if limit < pr.RateLimited {
		d.rateLimited = true
		return d
	}
	if slow < pr.Slow {
		d.slow = pr.SlowMin + time.Duration(span*float64(max(pr.SlowMax-pr.SlowMin, 0)))
	}
	if sends && lose < pr.LostSend {
		d.lose = true
		// The lowest draws of lose below LostSend: half of them 502.
		d.gateway = lose < pr.LostSend/2
	}
	return d
}

// writeRateLimited answers 429 as a provider does: a JSON-RPC error object
// (for a batch too) and Retry-After.
func writeRateLimited(w http.ResponseWriter, id json.RawMessage, e Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(errorResponse(id, &e))
}

// badGateway is the body of a lost answer's 502, as a load balancer in
// front of a provider's nodes sends it.
const badGateway = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n"

// loseAnswer forwards what of body the proxy does not refuse, waits for the
// node's answer and drops it: the client gets a reset or, with gateway, a
// 502 Bad Gateway.
func (p *Proxy) loseAnswer(w http.ResponseWriter, r *http.Request, body []byte, refused map[int]*Error, gateway bool) {
	if up := withoutRefused(body, refused); up != nil {
		if res, err := p.post(r, up); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	if !gateway {
		resetConn(w)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusBadGateway)
	_, _ = io.WriteString(w, badGateway)
}

// withoutRefused returns body without the batch elements refused holds
// (nil when nothing is left); body itself when none is refused.
func withoutRefused(body []byte, refused map[int]*Error) []byte {
	if len(refused) == 0 {
		return body
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil // a single call, refused
	}
	var rest []json.RawMessage
	for i, elem := range raw {
		if _, ok := refused[i]; !ok {
			rest = append(rest, elem)
		}
	}
	if len(rest) == 0 {
		return nil
	}
	b, _ := json.Marshal(rest)
	return b
}
