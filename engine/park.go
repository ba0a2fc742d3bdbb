package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// parkedTx is a queued transaction whose estimate the node refused for a
// reason that concerns it alone (promise 13): it stays new, its record
// notes the node's words (node_refused), and the account's later ready
// transactions take the nonces while it waits. It is estimated again
// after a new block (or, on a chain whose head does not move, after a
// pause that doubles); after parkAttempts refusals spanning parkMinBlocks
// blocks (or parkMinTime) it fails node_refused with the node's message.
type parkedTx struct {
	attempts       int
	first, retryAt uint64    // heads
	firstAt, next  time.Time // wall clock (the sender's clock)
}

// Bounds of parking.
const (
	// parkAttempts is how many refused estimates fail a transaction...
	parkAttempts = 5
	// ...once they span parkMinBlocks blocks or parkMinTime.
	parkMinBlocks = 3
	parkMinTime   = time.Minute
	// parkFirstPause is the pause before the second estimate when no
	// block comes; it doubles with each refusal, up to parkMaxPause.
	parkFirstPause = 2 * time.Second
	parkMaxPause   = 16 * time.Second
	// maxParked bounds the transactions an account keeps parked; past it,
	// a refusal stops the pump as a node failure would (the queue waits).
	maxParked = 64
)

// due reports whether p may be estimated again at head and now.
func (p *parkedTx) due(head uint64, now time.Time) bool {
	return head >= p.retryAt || !now.Before(p.next)
}

// parkable reports whether an estimate error concerns the transaction
// alone, so that it is parked while the account's others go on: a
// JSON-RPC error of the node that is neither a rate limit nor a sign of
// the node's own trouble. A transport failure, a rate limit or a node
// that cannot serve the call is nobody's fault: the pump stops and tries
// again soon, failing nothing.
func parkable(err error) bool {
	if !IsNodeRefusal(err) || IsRateLimit(err) {
		return false
	}
	var rpcErr jsonRPCError
	if errors.As(err, &rpcErr) {
		switch rpcErr.ErrorCode() {
		case -32601, -32603, -32002: // method not found, internal error, resource unavailable
			return false
		}
	}
	msg := strings.ToLower(err.Error())
	for _, w := range nodeTroubleWords {
		if strings.Contains(msg, w) {
			return false
		}
	}
	return true
}

// concernsCallOnly reports whether an estimate error is the answer to its
// call alone (a revert, a call that needs too much gas, funds that cannot
// pay, a refusal that parks it), so that the other calls of a batch are
// still estimated.
func concernsCallOnly(err error) bool {
	return IsRevert(err) || needsTooMuchGas(err) || ClassifyNodeError(err) == NodeInsufficientFunds || parkable(err)
}

// nodeTroubleWords are words of JSON-RPC errors that say the node cannot
// serve the call now, whatever the call.
var nodeTroubleWords = []string{"header not found", "unknown block", "missing trie node", "syncing", "timeout", "timed out",
	"unavailable", "busy", "try again", "internal error", "upstream", "backend"}

// park records a refused estimate of tx at head. It returns the failure
// of tx when this refusal is its last (see parkedTx), and false when the
// sender parks too many transactions already: then tx is not parked.
func (s *Sender) park(tx *Transaction, head uint64, err error) (*TxError, bool) {
	now := s.clock.Now()
	p := s.parked[tx.ID]
	if p == nil {
		if len(s.parked) >= maxParked {
			return nil, false
		}
		if s.parked == nil {
			s.parked = map[string]*parkedTx{}
		}
		p = &parkedTx{first: head, firstAt: now}
		s.parked[tx.ID] = p
	}
	p.attempts++
	if p.attempts >= parkAttempts && (blocksSince(head, p.first) >= parkMinBlocks || now.Sub(p.firstAt) >= parkMinTime) {
		delete(s.parked, tx.ID)
		return &TxError{Code: TxNodeRefused, Message: fmt.Sprintf("the node refused to estimate it %d times: %s", p.attempts, nodeMessage(err))}, true
	}
	p.retryAt = head + 1
	p.next = now.Add(min(parkFirstPause<<(p.attempts-1), parkMaxPause))
	s.log.Info("node refuses to estimate the transaction; parked while the account's others go on",
		"tx", tx.ID, "attempt", p.attempts, "retry_at_block", p.retryAt, "reason", nodeMessage(err))
	return nil, true
}

// readyToSend reads up to limit ready transactions of the account that
// are not parked (the parked ones that are not due are skipped, and read
// on top of limit so that they never take the window's room). exhausted
// is set when the store has no more ready transactions than those read.
func (s *Sender) readyToSend(ctx context.Context, limit int) (ready []*Transaction, exhausted bool, err error) {
	head, now, waiting := uint64(0), s.clock.Now(), 0
	if len(s.parked) > 0 {
		if head, err = s.net.Head(ctx, headFresh); err != nil {
			return nil, false, nodeCall(err)
		}
		for _, p := range s.parked {
			if !p.due(head, now) {
				waiting++
			}
		}
	}
	got, err := s.io.ReadyTransactions(ctx, s.account.ID, limit+waiting)
	if err != nil {
		return nil, false, fmt.Errorf("pump: ready: %w", err)
	}
	exhausted = len(got) < limit+waiting
	seen := make(map[string]bool, len(s.parked))
	for _, tx := range got {
		if p := s.parked[tx.ID]; p != nil {
			seen[tx.ID] = true
			if !p.due(head, now) {
				continue
			}
		}
		if len(ready) < limit {
			ready = append(ready, tx)
		}
	}
	if exhausted {
		for id := range s.parked {
			if !seen[id] {
				delete(s.parked, id) // no longer queued (cancelled, failed)
			}
		}
	}
	return ready, exhausted, nil
}

// Parked is how many of the account's queued transactions the sender
// holds back after the node refused to estimate them.
func (s *Sender) Parked() int { return len(s.parked) }
