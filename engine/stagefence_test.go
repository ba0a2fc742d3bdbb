package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
)

// epochStore is a memStore with account leases whose first LeaseEpochs
// waits for release, and which records the accounts of every call.
type epochStore struct {
	*memStore
	epochs  map[string]int64
	release chan struct{}
	mu      sync.Mutex
	calls   [][]string
}

func (e *epochStore) LeaseEpochs(_ context.Context, ids []string) (map[string]int64, error) {
	e.mu.Lock()
	e.calls = append(e.calls, slices.Sorted(slices.Values(ids)))
	first := len(e.calls) == 1
	e.mu.Unlock()
	if first {
		<-e.release
	}
	out := map[string]int64{}
	for _, id := range ids {
		if ep, ok := e.epochs[id]; ok {
			out[id] = ep
		}
	}
	return out, nil
}

// TestStageMergesFenceChecks: the fence checks of pumps that run at once
// (cluster mode: one before each batch is signed) are one read of the
// leases, not one statement per account: while the first check is out,
// three others wait and go together. Each gets its own answer: current,
// stale (ErrFenced) or no lease (ErrFenced).
func TestStageMergesFenceChecks(t *testing.T) {
	store := &epochStore{memStore: newMemStore(), epochs: map[string]int64{"a": 1, "b": 2, "c": 1}, release: make(chan struct{})}
	st := NewSubmitStage(&Network{Name: "dev", Chain: &fakeChain{}}, store)
	defer st.Close()
	fences := []Fence{{AccountID: "a", Epoch: 1}, {AccountID: "b", Epoch: 1}, {AccountID: "c", Epoch: 1}, {AccountID: "d", Epoch: 1}}
	errs := make([]error, len(fences))
	var wg sync.WaitGroup
	check := func(i int) {
		wg.Go(func() {
			merged, err := st.CheckFence(fences[i])
			if !merged {
				err = errors.New("not merged")
			}
			errs[i] = err
		})
	}
	check(0)
	waitFor(t, func() bool { store.mu.Lock(); defer store.mu.Unlock(); return len(store.calls) == 1 })
	for i := 1; i < len(fences); i++ {
		check(i)
		waitFor(t, func() bool { st.fences.mu.Lock(); defer st.fences.mu.Unlock(); return len(st.fences.waiting) == i })
	}
	close(store.release)
	wg.Wait()
	if len(store.calls) != 2 || !slices.Equal(store.calls[1], []string{"b", "c", "d"}) {
		t.Fatalf("lease reads %v, want [[a] [b c d]]", store.calls)
	}
	for i, want := range []bool{false, true, false, true} {
		if got := errors.Is(errs[i], ErrFenced); got != want || (!want && errs[i] != nil) {
			t.Errorf("fence %+v: %v, want fenced %v", fences[i], errs[i], want)
		}
	}
}

// TestStageFenceChecksNeedLeaseEpochs: a store that cannot read many
// leases at once leaves the check to the caller.
func TestStageFenceChecksNeedLeaseEpochs(t *testing.T) {
	st := NewSubmitStage(&Network{Name: "dev", Chain: &fakeChain{}}, newMemStore())
	defer st.Close()
	if merged, err := st.CheckFence(Fence{AccountID: "a", Epoch: 1}); merged || err != nil {
		t.Fatalf("CheckFence without LeaseEpochs: merged %v, err %v; want false, nil", merged, err)
	}
}
