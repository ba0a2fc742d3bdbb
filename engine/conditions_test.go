package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"
)

// sweepStore is a ConditionStore of waiting transactions that never become
// ready (their dependency stays new); it records which ones each Waiting
// read returned and how many statuses reads there were.
type sweepStore struct {
	ConditionStore
	waiting  []*Transaction
	seen     map[string]int
	statuses int
}

func (s *sweepStore) Waiting(_ context.Context, _, after string, limit int) ([]*Transaction, error) {
	i := 0
	if after != "" {
		i = slices.IndexFunc(s.waiting, func(t *Transaction) bool { return t.ID == after }) + 1
	}
	out := s.waiting[i:min(i+limit, len(s.waiting))]
	for _, t := range out {
		s.seen[t.ID]++
	}
	return out, nil
}

func (s *sweepStore) ExpireWaiting(context.Context, string, time.Time, int) ([]string, error) {
	return nil, nil
}

func (s *sweepStore) Statuses(_ context.Context, ids []string) (map[string]TxStatus, error) {
	s.statuses++
	out := map[string]TxStatus{}
	for _, id := range ids {
		out[id] = StatusNew
	}
	return out, nil
}

func (s *sweepStore) MarkReady(context.Context, []string) ([]string, error) { return nil, nil }

// TestSweepGoesRound: with more waiting transactions than one Sweep looks
// at, each Sweep goes on after the previous one's last, so every waiting
// transaction is looked at within ceil(n/limit) heads, and the batch's
// dependencies are read in one statement, not one per transaction.
func TestSweepGoesRound(t *testing.T) {
	store := &sweepStore{seen: map[string]int{}}
	for i := range 10 {
		store.waiting = append(store.waiting, &Transaction{ID: fmt.Sprintf("t%d", i), AccountID: "a", Network: "n",
			Status: StatusWaiting, DependsOn: []string{"dep"}})
	}
	c := NewConditions(store, SystemClock{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.sweepLimit = 3
	net := &Network{Name: "n"}
	for range 4 {
		if _, failed, err := c.Sweep(context.Background(), net); err != nil || len(failed) != 0 {
			t.Fatalf("sweep: failed %v, %v", failed, err)
		}
	}
	for _, tx := range store.waiting {
		if store.seen[tx.ID] != 1 {
			t.Errorf("%s looked at %d times in 4 sweeps of 3 (10 waiting), want 1", tx.ID, store.seen[tx.ID])
		}
	}
	if store.statuses != 4 {
		t.Errorf("%d statuses reads in 4 sweeps, want 4 (one per batch)", store.statuses)
	}
	if _, _, err := c.Sweep(context.Background(), net); err != nil || store.seen["t0"] != 2 {
		t.Fatalf("the fifth sweep does not start again from the first: t0 seen %d times, %v", store.seen["t0"], err)
	}
}
