package evm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/rpc"

	"github.com/txengine/txengine/internal/redact"
)

// MaxBatch bounds the requests of one JSON-RPC batch; geth refuses batches
// of more than 1,000 by default (--rpc.batch-request-limit).
const MaxBatch = 500

// noBatchFor is how long a Client sends the elements of its batches one
// call each after its node refused a batch while answering single calls;
// then a batch is tried again (the refusal may have passed).
const noBatchFor = 10 * time.Minute

// singleCallParallel bounds the single calls that stand in for a refused
// batch (transactions excepted: those go one at a time, in order).
const singleCallParallel = 8

// batchState remembers until when the node is taken not to batch.
type batchState struct {
	now func() time.Time
	mu  sync.Mutex
	// refusedUntil: until then, batches go one call each.
	refusedUntil time.Time
}

// refused reports whether batches go one call each now.
func (b *batchState) refused() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now().Before(b.refusedUntil)
}

// refuse takes the node not to batch for noBatchFor and reports whether it
// was taken to batch until now (a switch, to be logged once).
func (b *batchState) refuse() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	switched := !now.Before(b.refusedUntil)
	b.refusedUntil = now.Add(noBatchFor)
	return switched
}

// batch sends elems in JSON-RPC batches of at most MaxBatch requests, in
// order, each within the call timeout; where the node refuses batches, one
// call each (batchPart). Each element gets its result or error as in a
// batch; the error is that of a whole batch (transport, node down,
// timeout).
func (c *Client) batch(ctx context.Context, elems []rpc.BatchElem) error {
	for start := 0; start < len(elems); start += MaxBatch {
		if err := c.batchPart(ctx, elems[start:min(start+MaxBatch, len(elems))]); err != nil {
			return err
		}
	}
	return nil
}

// batchPart sends elems as one JSON-RPC batch, or one call each when the
// node refused a batch within noBatchFor. A batch the node refuses goes
// again one call each; if the node answers those, batches go one call each
// for noBatchFor (one warning per switch).
func (c *Client) batchPart(ctx context.Context, elems []rpc.BatchElem) error {
	if c.batches.refused() {
		return c.eachCall(ctx, elems)
	}
	err := c.batchOnce(ctx, elems)
	if !batchRefused(err, elems) || ctx.Err() != nil {
		return err
	}
	if serr := c.eachCall(ctx, elems); serr != nil {
		if err == nil {
			return fmt.Errorf("batch answered without its answers; one call each: %w", serr)
		}
		return fmt.Errorf("%w (one call each: %v)", err, serr)
	}
	if c.batches.refuse() {
		why := "no answers in the reply"
		if err != nil {
			why = err.Error()
		}
		c.log.Warn("node refuses JSON-RPC batches but answers single calls: batches go one call each for a while",
			"endpoint", c.endpoint, "refusal", why, "for", noBatchFor)
	}
	return nil
}

// batchOnce sends elems as one JSON-RPC batch within the call timeout.
func (c *Client) batchOnce(ctx context.Context, elems []rpc.BatchElem) error {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	return redact.Error(c.rpc.BatchCallContext(ctx, elems))
}

// batchRefused reports whether the outcome of a batch (err, elems) says the
// node does not take batches, as go-ethereum's client reports it:
//   - an HTTP 4xx status (rpc.HTTPError: a hosted endpoint's "400 batch
//     requests are not supported", 405, 413), but for 408 and 429 (a
//     timeout, a rate limit: passing, and single calls would get them too);
//   - a reply that is not a JSON array: an error object in place of the
//     array (*json.UnmarshalTypeError) or not JSON at all
//     (*json.SyntaxError);
//   - an array holding none of the answers (every element
//     rpc.ErrMissingBatchResponse: one error with a null id).
//
// A transport error (connection refused or reset), a timeout or a 5xx (a
// gateway in front of a node that is down) is no refusal. The single calls
// that follow confirm a refusal: if none is answered, the batch's error
// stands.
func batchRefused(err error, elems []rpc.BatchElem) bool {
	if err == nil {
		for _, e := range elems {
			if !errors.Is(e.Error, rpc.ErrMissingBatchResponse) {
				return false
			}
		}
		return len(elems) > 0
	}
	var he rpc.HTTPError
	if errors.As(err, &he) {
		return he.StatusCode >= 400 && he.StatusCode < 500 &&
			he.StatusCode != http.StatusRequestTimeout && he.StatusCode != http.StatusTooManyRequests
	}
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	return errors.As(err, &te) || errors.As(err, &se)
}

// eachCall performs each element of elems as a single call within the call
// timeout, filling in its result and error as a batch would:
// eth_sendRawTransaction one at a time in order, other methods
// singleCallParallel at once. The first call goes alone: when it gets no
// answer (a transport error, a timeout, an HTTP error), neither does the
// node, and its error is returned as that of the whole.
func (c *Client) eachCall(ctx context.Context, elems []rpc.BatchElem) error {
	if len(elems) == 0 {
		return nil
	}
	c.single(ctx, &elems[0])
	if !answered(elems[0].Error) {
		return elems[0].Error
	}
	rest := elems[1:]
	if hasSend(rest) {
		for i := range rest {
			c.single(ctx, &rest[i])
		}
		return nil
	}
	sem := make(chan struct{}, singleCallParallel)
	var wg sync.WaitGroup
	for i := range rest {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c.single(ctx, &rest[i])
		})
	}
	wg.Wait()
	return nil
}

// single performs e as one call.
func (c *Client) single(ctx context.Context, e *rpc.BatchElem) {
	e.Error = c.call(ctx, e.Result, e.Method, e.Args...)
}

// hasSend reports whether elems hold a transaction to send (their order
// matters: a nonce after its predecessor).
func hasSend(elems []rpc.BatchElem) bool {
	for _, e := range elems {
		if e.Method == "eth_sendRawTransaction" {
			return true
		}
	}
	return false
}

// answered reports whether a call's outcome came from the node: a result or
// a JSON-RPC error object (a revert, a refused transaction).
func answered(err error) bool {
	var re rpc.Error
	return err == nil || errors.As(err, &re)
}
