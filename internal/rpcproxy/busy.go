package rpcproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
)

// DefaultSlots is geth's --txpool.accountslots: the pending transactions a
// busy pool keeps for one sender.
const DefaultSlots = 16

// PoolFullError is geth's answer to a transaction its full pool does not
// take (core/txpool.ErrTxPoolOverflow through eth_sendRawTransaction).
var PoolFullError = Error{Code: -32000, Message: "txpool is full"}

// headMaxAge bounds how old the head the busy mempool counts against may
// be: it reads eth_blockNumber at most that often, and a sender's confirmed
// nonce once a head.
const headMaxAge = 50 * time.Millisecond

// upstreamTimeout bounds each of the busy mempool's own calls to the node.
const upstreamTimeout = 5 * time.Second

// busy is the state of the busy mempool (BusyMempool); its own mutex, so
// that no lock of the proxy is held across its reads of the node.
type busy struct {
	mu     sync.Mutex
	slots  int // 0: off
	head   *read[uint64]
	nonces map[common.Address]*read[uint64] // confirmed nonce, per head
}

// read is one value read from the node, shared by the callers that wait
// for it (done closes when val and err are set).
type read[T any] struct {
	done chan struct{}
	at   time.Time // when the read started
	tag  uint64    // the head it was read at (nonces)
	val  T
	err  error
}

// BusyMempool makes the proxy the endpoint of a busy geth pool: an
// eth_sendRawTransaction (a call or a batch element) whose sender already
// has slots pending transactions is answered with PoolFullError, as geth
// does when its global slots are full and the sender is past its
// --txpool.accountslots; the others go to the node. A transaction's
// pending count is its nonce minus its sender's confirmed nonce
// (eth_getTransactionCount "latest", read once a block: the proxy reads
// eth_blockNumber at most every 50 ms), so a replacement of a pending
// nonce passes and a sender's 17th does not. A transaction the proxy cannot
// decode, or whose sender's nonce it cannot read, goes to the node.
// slots <= 0 turns it off (as ClearFaults does). Stats.PoolFull counts the
// refusals, Stats.BusyReads the proxy's own calls to the node.
func (p *Proxy) BusyMempool(slots int) {
	p.busy.mu.Lock()
	defer p.busy.mu.Unlock()
	p.busy.slots = max(slots, 0)
	p.busy.head = nil
	p.busy.nonces = map[common.Address]*read[uint64]{}
}

// busyRefusals returns the busy mempool's refusals of calls, by index
// (nil when it is off or refuses none); it reads the node without holding
// any lock of the proxy.
func (p *Proxy) busyRefusals(ctx context.Context, calls []call) map[int]*Error {
	p.busy.mu.Lock()
	slots := p.busy.slots
	p.busy.mu.Unlock()
	if slots == 0 {
		return nil
	}
	var refused map[int]*Error
	for i, c := range calls {
		if c.Method != "eth_sendRawTransaction" {
			continue
		}
		from, nonce, ok := sender(c.Params)
		if !ok {
			continue
		}
		confirmed, err := p.confirmedNonce(ctx, from)
		if err != nil || nonce < confirmed+uint64(slots) {
			continue
		}
		if refused == nil {
			refused = map[int]*Error{}
		}
		e := PoolFullError
		refused[i] = &e
	}
	return refused
}

// sender decodes the signed transaction of an eth_sendRawTransaction's
// params: its sender and nonce.
func sender(params json.RawMessage) (common.Address, uint64, bool) {
	var args []hexutil.Bytes
	if err := json.Unmarshal(params, &args); err != nil || len(args) != 1 {
		return common.Address{}, 0, false
	}
	var tx types.Transaction
	if err := tx.UnmarshalBinary(args[0]); err != nil {
		return common.Address{}, 0, false
	}
	signer := types.Signer(types.HomesteadSigner{})
	if tx.Protected() {
		signer = types.LatestSignerForChainID(tx.ChainId())
	}
	from, err := types.Sender(signer, &tx)
	if err != nil {
		return common.Address{}, 0, false
	}
	return from, tx.Nonce(), true
}

// confirmedNonce returns from's nonce at the latest block, read once per
// head (concurrent callers share one read).
func (p *Proxy) confirmedNonce(ctx context.Context, from common.Address) (uint64, error) {
	head, err := p.busyHead(ctx)
	if err != nil {
		return 0, err
	}
	b := &p.busy
	b.mu.Lock()
	r := b.nonces[from]
	if r != nil && r.tag < head && r.settled() {
		r = nil
	}
	if r == nil {
		r = &read[uint64]{done: make(chan struct{}), at: time.Now(), tag: head}
		b.nonces[from] = r
		b.mu.Unlock()
		r.val, r.err = p.readUint(ctx, "eth_getTransactionCount", from, "latest")
		p.readDone(from, r)
	} else {
		b.mu.Unlock()
	}
	return r.wait(ctx)
}

// busyHead returns the node's head block number, read again when the last
// read is older than headMaxAge.
func (p *Proxy) busyHead(ctx context.Context) (uint64, error) {
	b := &p.busy
	b.mu.Lock()
	r := b.head
	if r == nil || (r.settled() && time.Since(r.at) > headMaxAge) {
		r = &read[uint64]{done: make(chan struct{}), at: time.Now()}
		b.head = r
		b.mu.Unlock()
		r.val, r.err = p.readUint(ctx, "eth_blockNumber")
		if r.err != nil {
			b.mu.Lock()
			if b.head == r {
				b.head = nil // read again next time
			}
			b.mu.Unlock()
		}
		close(r.done)
	} else {
		b.mu.Unlock()
	}
	return r.wait(ctx)
}

// readDone publishes a nonce read; a failed one is forgotten.
func (p *Proxy) readDone(from common.Address, r *read[uint64]) {
	if r.err != nil {
		p.busy.mu.Lock()
		if p.busy.nonces[from] == r {
			delete(p.busy.nonces, from)
		}
		p.busy.mu.Unlock()
	}
	close(r.done)
}

// settled reports whether the read has its value.
func (r *read[T]) settled() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// wait returns the read's value once it is there.
func (r *read[T]) wait(ctx context.Context) (T, error) {
	select {
	case <-r.done:
		return r.val, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// readUint calls method on the node and decodes its hex quantity answer;
// the call is counted in Stats.BusyReads.
func (p *Proxy) readUint(ctx context.Context, method string, params ...any) (uint64, error) {
	p.mu.Lock()
	p.stats.BusyReads++
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, upstreamTimeout)
	defer cancel()
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return 0, fmt.Errorf("rpcproxy: %s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.upstream, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("rpcproxy: %s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := p.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("rpcproxy: %s: %w", method, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("rpcproxy: %s: %w", method, err)
	}
	var ans struct {
		Result string `json:"result"`
		Error  *Error `json:"error"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return 0, fmt.Errorf("rpcproxy: %s: HTTP %d: %w", method, res.StatusCode, err)
	}
	if ans.Error != nil {
		return 0, fmt.Errorf("rpcproxy: %s: %d %s", method, ans.Error.Code, ans.Error.Message)
	}
	if !strings.HasPrefix(ans.Result, "0x") {
		return 0, errors.New("rpcproxy: " + method + ": answer " + strconv.Quote(ans.Result) + " is not a quantity")
	}
	return strconv.ParseUint(ans.Result[2:], 16, 64)
}
