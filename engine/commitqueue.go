package engine

import (
	"context"
	"sync"
)

// CommitQueue merges the group commits of many account actors into one
// database transaction. An account actor already writes every Submit
// waiting in its mailbox in one transaction; but when many accounts send at
// once, each actor's batch holds a row or two, and a store that commits one
// transaction at a time (SQLite: one writer, one fsync per commit) becomes
// the bound: 1,000 accounts × 10 transfers accepted about 260/s here, one
// fsync each. The queue has one writer: while it commits, the batches of
// other actors wait, and the next commit takes all of them.
//
// A merged commit that fails is not the others' fault: every batch in it is
// then written again on its own, so each caller gets its own batch's
// outcome (a conflicting Idempotency-Key fails only its own request). As
// with the store itself, an error means that batch was not stored.
//
// Create it with NewCommitQueue; Close stops it after the batches already
// queued are written.
type CommitQueue struct {
	insert  func(context.Context, []*Transaction) error
	maxRows int

	mu      sync.Mutex
	waiting []*commitRequest
	closed  bool

	wake chan struct{} // size 1: the writer has work (or must stop)
	done chan struct{} // closed when the writer returned
}

var _ Committer = (*CommitQueue)(nil)

// commitRequest is one caller's batch and where its outcome goes.
type commitRequest struct {
	txs    []*Transaction
	result chan error // size 1
}

// NewCommitQueue starts the writer of a queue in front of insert (a
// store's InsertTransactions). A merged commit holds at most maxRows rows
// unless a single batch is larger (it is written alone); maxRows <= 0 means
// no bound.
func NewCommitQueue(insert func(context.Context, []*Transaction) error, maxRows int) *CommitQueue {
	q := &CommitQueue{insert: insert, maxRows: maxRows, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run() // owned by q: Close stops it and waits
	return q
}

// InsertTransactions stores txs in one database transaction, possibly with
// the batches of other callers, and returns when they are committed (nil)
// or not stored (the error). It waits for the outcome even if ctx ends
// meanwhile: a batch handed to the writer may be committed, and the caller
// must not report a failure for rows that are stored.
func (q *CommitQueue) InsertTransactions(_ context.Context, txs []*Transaction) error {
	if len(txs) == 0 {
		return nil
	}
	r := &commitRequest{txs: txs, result: make(chan error, 1)}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return Errorf(CodeUnavailable, "", "shutting down: the commit queue is closed")
	}
	q.waiting = append(q.waiting, r)
	q.mu.Unlock()
	q.signal()
	return <-r.result
}

// Close writes the batches already queued, refuses new ones and stops the
// writer. It is safe to call more than once.
func (q *CommitQueue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
	<-q.done
}

func (q *CommitQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run is the writer: it commits what is waiting, merged, until the queue is
// closed and empty.
func (q *CommitQueue) run() {
	defer close(q.done)
	for range q.wake {
		for {
			batch, last := q.take()
			if len(batch) > 0 {
				q.commit(batch)
			}
			if last {
				return
			}
			if len(batch) == 0 {
				break
			}
		}
	}
}

// take removes the next merged commit from the queue: the oldest batches,
// up to maxRows rows (at least one batch). last is true when the queue is
// closed and nothing is left after these.
func (q *CommitQueue) take() (batch []*commitRequest, last bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	rows, n := 0, 0
	for n < len(q.waiting) {
		r := q.waiting[n]
		if n > 0 && q.maxRows > 0 && rows+len(r.txs) > q.maxRows {
			break
		}
		rows += len(r.txs)
		n++
	}
	batch = q.waiting[:n:n]
	q.waiting = q.waiting[n:]
	if len(q.waiting) == 0 {
		q.waiting = nil // let the array go
	}
	return batch, q.closed && len(q.waiting) == 0
}

// commit writes the batches in one transaction; if that fails, each again
// on its own.
func (q *CommitQueue) commit(batch []*commitRequest) {
	ctx := context.Background() // the callers wait for the outcome whatever their contexts
	if len(batch) == 1 {
		batch[0].result <- q.insert(ctx, batch[0].txs)
		return
	}
	rows := 0
	for _, r := range batch {
		rows += len(r.txs)
	}
	all := make([]*Transaction, 0, rows)
	for _, r := range batch {
		all = append(all, r.txs...)
	}
	if err := q.insert(ctx, all); err == nil {
		for _, r := range batch {
			r.result <- nil
		}
		return
	}
	for _, r := range batch {
		r.result <- q.insert(ctx, r.txs)
	}
}
