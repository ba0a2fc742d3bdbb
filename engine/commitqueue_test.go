package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// recordingInsert is an insert that records the ids of every call, fails
// any call that holds a transaction whose id is in bad, and blocks while
// gate is held.
type recordingInsert struct {
	mu    sync.Mutex
	calls [][]string
	bad   map[string]bool
	gate  sync.RWMutex
	in    chan struct{} // gets a value when a call starts (buffered)
}

func (f *recordingInsert) insert(_ context.Context, txs []*Transaction) error {
	f.in <- struct{}{}
	f.gate.RLock()
	defer f.gate.RUnlock()
	ids := make([]string, len(txs))
	for i, t := range txs {
		ids[i] = t.ID
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, ids)
	for _, id := range ids {
		if f.bad[id] {
			return fmt.Errorf("insert %s: %w", id, ErrConflict)
		}
	}
	return nil
}

// waitQueued waits (5 s at most) until ok holds of the queue's waiting
// batches, read under its lock.
func waitQueued(t *testing.T, q *CommitQueue, what string, ok func([]*commitRequest) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		q.mu.Lock()
		done := ok(q.waiting)
		q.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue never held %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func txsNamed(ids ...string) []*Transaction {
	out := make([]*Transaction, len(ids))
	for i, id := range ids {
		out[i] = &Transaction{ID: id}
	}
	return out
}

// TestCommitQueueMerges: batches that arrive while a commit is on disk are
// written together in the next one, and a failure of the merged commit
// fails only the batch at fault.
func TestCommitQueueMerges(t *testing.T) {
	f := &recordingInsert{bad: map[string]bool{"bad": true}, in: make(chan struct{}, 100)}
	q := NewCommitQueue(f.insert, 0)
	defer q.Close()

	f.gate.Lock() // the first commit stays on disk until the others queued
	first := make(chan error, 1)
	go func() { first <- q.InsertTransactions(context.Background(), txsNamed("a")) }()
	<-f.in
	type outcome struct {
		name string
		err  error
	}
	results := make(chan outcome, 3)
	for _, b := range [][]string{{"b1", "b2"}, {"bad"}, {"c"}} {
		go func() { results <- outcome{b[0], q.InsertTransactions(context.Background(), txsNamed(b...))} }()
	}
	// Let the three batches reach the queue before the first commit ends.
	waitQueued(t, q, "three batches", func(w []*commitRequest) bool { return len(w) == 3 })
	f.gate.Unlock()
	if err := <-first; err != nil {
		t.Fatalf("first batch: %v", err)
	}
	got := map[string]error{}
	for range 3 {
		o := <-results
		got[o.name] = o.err
	}
	if got["b1"] != nil || got["c"] != nil {
		t.Fatalf("the good batches failed: %v", got)
	}
	if !errors.Is(got["bad"], ErrConflict) {
		t.Fatalf("bad batch: %v, want its own conflict", got["bad"])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// a alone; then the three merged (in arrival order, which the test does
	// not fix); then each again alone after the merged commit failed.
	if len(f.calls) != 5 || len(f.calls[1]) != 4 {
		t.Fatalf("calls %v, want [a] then one merged call of 4 rows, then 3 single batches", f.calls)
	}
	merged := slices.Clone(f.calls[1])
	slices.Sort(merged)
	if !slices.Equal(merged, []string{"b1", "b2", "bad", "c"}) {
		t.Fatalf("merged call %v", f.calls[1])
	}
	if i := slices.Index(f.calls[1], "b1"); f.calls[1][i+1] != "b2" {
		t.Fatalf("merged call %v splits a batch", f.calls[1])
	}
}

// TestCommitQueueMaxRows: a merged commit stops at maxRows, but a larger
// single batch is written whole.
func TestCommitQueueMaxRows(t *testing.T) {
	f := &recordingInsert{in: make(chan struct{}, 100)}
	q := NewCommitQueue(f.insert, 3)
	defer q.Close()
	f.gate.Lock()
	var wg sync.WaitGroup
	wg.Go(func() { _ = q.InsertTransactions(context.Background(), txsNamed("a")) })
	<-f.in
	for _, b := range [][]string{{"b1", "b2"}, {"c1", "c2"}, {"d1", "d2", "d3", "d4"}} {
		wg.Go(func() {
			if err := q.InsertTransactions(context.Background(), txsNamed(b...)); err != nil {
				t.Errorf("%v: %v", b, err)
			}
		})
		// Queue them in this order.
		waitQueued(t, q, b[0]+" last", func(w []*commitRequest) bool { return len(w) > 0 && w[len(w)-1].txs[0].ID == b[0] })
	}
	f.gate.Unlock()
	wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	want := [][]string{{"a"}, {"b1", "b2"}, {"c1", "c2"}, {"d1", "d2", "d3", "d4"}}
	if !slices.EqualFunc(f.calls, want, slices.Equal[[]string]) {
		t.Fatalf("calls %v, want %v", f.calls, want)
	}
}

// TestCommitQueueClose: Close writes what is queued, then refuses.
func TestCommitQueueClose(t *testing.T) {
	f := &recordingInsert{in: make(chan struct{}, 100)}
	q := NewCommitQueue(f.insert, 0)
	f.gate.Lock()
	errs := make(chan error, 2)
	go func() { errs <- q.InsertTransactions(context.Background(), txsNamed("a")) }()
	<-f.in
	go func() { errs <- q.InsertTransactions(context.Background(), txsNamed("b")) }()
	waitQueued(t, q, "b", func(w []*commitRequest) bool { return len(w) == 1 })
	closed := make(chan struct{})
	go func() { q.Close(); close(closed) }()
	f.gate.Unlock()
	<-closed
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a batch queued before Close: %v", err)
		}
	}
	if err := q.InsertTransactions(context.Background(), txsNamed("c")); ErrorCode(err) != CodeUnavailable {
		t.Fatalf("after Close: %v, want unavailable", err)
	}
	q.Close() // twice is fine
	if len(f.calls) != 2 {
		t.Fatalf("calls %v", f.calls)
	}
}
