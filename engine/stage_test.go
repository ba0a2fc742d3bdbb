package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// gatedBatchChain is a batchChain whose first broadcast batch waits for
// release, and which records the size of every batch it got.
type gatedBatchChain struct {
	*batchChain
	release chan struct{}
	mu      sync.Mutex
	sizes   []int
}

func (g *gatedBatchChain) BatchSendTransactions(ctx context.Context, txs []*types.Transaction) ([]error, error) {
	g.mu.Lock()
	g.sizes = append(g.sizes, len(txs))
	first := len(g.sizes) == 1
	g.mu.Unlock()
	if first {
		<-g.release
	}
	return g.batchChain.BatchSendTransactions(ctx, txs)
}

// TestStageMergesThePumpsOfManyAccounts: three accounts pump at once on
// one network; while the first account's broadcast is out, the other two
// wait and go out together in one batch. Each account gets its own gapless
// nonces and its transactions are submitted.
func TestStageMergesThePumpsOfManyAccounts(t *testing.T) {
	store := newMemStore()
	gc := &gatedBatchChain{batchChain: &batchChain{fakeChain: &fakeChain{}}, release: make(chan struct{})}
	first := newTestSender(t, gc.fakeChain, store, 8)
	first.net.Chain = gc
	path := first.io
	st := path.(batchedIO).st
	senders := []*Sender{first}
	for _, id := range []string{"b", "c"} {
		s := newTestSender(t, gc.fakeChain, store, 8)
		s.account.ID, s.net, s.io = id, first.net, path
		senders = append(senders, s)
	}
	senders[0].account.ID = "a"
	for _, s := range senders {
		var txs []*Transaction
		for i := range 3 {
			txs = append(txs, &Transaction{ID: fmt.Sprintf("%s%d", s.account.ID, i), AccountID: s.account.ID, Network: "dev", Status: StatusNew, ContractAddress: [20]byte{1}, Data: []byte{0xa9, 0x05, 0x9c, 0xbb}})
		}
		if err := store.InsertTransactions(context.Background(), txs); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	pump := func(i int) {
		defer wg.Done()
		n, err := senders[i].Pump(context.Background())
		if err == nil && n != 3 {
			err = fmt.Errorf("pumped %d, want 3", n)
		}
		errs[i] = err
	}
	wg.Add(1)
	go pump(0)
	waitFor(t, func() bool { gc.mu.Lock(); defer gc.mu.Unlock(); return len(gc.sizes) == 1 })
	// One after the other up to their broadcasts (the in-memory store is
	// not safe for concurrent use), then both wait behind a's.
	for i := 1; i <= 2; i++ {
		wg.Add(1)
		go pump(i)
		waitFor(t, func() bool { st.sends.mu.Lock(); defer st.sends.mu.Unlock(); return len(st.sends.waiting) == i })
	}
	close(gc.release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("pump of %s: %v", senders[i].account.ID, err)
		}
	}
	if len(gc.sizes) != 2 || gc.sizes[0] != 3 || gc.sizes[1] != 6 {
		t.Fatalf("broadcast batches %v, want [3 6] (b's and c's together)", gc.sizes)
	}
	for _, s := range senders {
		for i := range 3 {
			tx := store.txs[fmt.Sprintf("%s%d", s.account.ID, i)]
			if tx.Status != StatusSubmitted || *tx.Nonce != uint64(i) {
				t.Errorf("%s: %s nonce %v, want submitted with nonce %d", tx.ID, tx.Status, tx.Nonce, i)
			}
		}
	}
}

// gatedMarkStore is a memStore whose first MarkSubmittedGroups waits for
// release, and which counts the calls.
type gatedMarkStore struct {
	*memStore
	release chan struct{}
	mu      sync.Mutex
	calls   [][]SubmitGroup
}

func (g *gatedMarkStore) MarkSubmittedGroups(ctx context.Context, groups []SubmitGroup) error {
	g.mu.Lock()
	g.calls = append(g.calls, groups)
	first := len(g.calls) == 1
	g.mu.Unlock()
	if first {
		<-g.release
	}
	return g.memStore.MarkSubmittedGroups(ctx, groups)
}

// TestStageConflictFailsOnlyItsGroup: a merged write with one group whose
// row is no longer new fails in one transaction; each group is then
// written on its own, so the others are stored and only that one gets
// ErrConflict.
func TestStageConflictFailsOnlyItsGroup(t *testing.T) {
	mem := newMemStore()
	store := &gatedMarkStore{memStore: mem, release: make(chan struct{})}
	st := NewSubmitStage(&Network{Name: "dev", Chain: &fakeChain{}}, store)
	defer st.Close()
	nonce := func(n uint64) *uint64 { return &n }
	row := func(id string, n uint64) *Transaction {
		h := common.Hash{byte(n + 1)}
		return &Transaction{ID: id, AccountID: id, Status: StatusNew, Nonce: nonce(n), Hash: &h}
	}
	rows := []*Transaction{row("a", 0), row("b", 0), row("c", 0)}
	if err := mem.InsertTransactions(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	mem.txs["c"].Status = StatusFailed // cancelled meanwhile
	outcome := make([]error, 3)
	var wg sync.WaitGroup
	mark := func(i int) {
		defer wg.Done()
		outcome[i] = st.MarkSubmitted(Fence{}, []*Transaction{rows[i]})
	}
	wg.Add(1)
	go mark(0)
	waitFor(t, func() bool { store.mu.Lock(); defer store.mu.Unlock(); return len(store.calls) == 1 })
	wg.Add(2)
	go mark(1)
	go mark(2)
	waitFor(t, func() bool { st.marks.mu.Lock(); defer st.marks.mu.Unlock(); return len(st.marks.waiting) == 2 })
	close(store.release)
	wg.Wait()
	if outcome[0] != nil || outcome[1] != nil || !errors.Is(outcome[2], ErrConflict) {
		t.Fatalf("outcomes %v, want nil, nil, ErrConflict", outcome)
	}
	if len(store.calls) != 4 || len(store.calls[1]) != 2 {
		t.Fatalf("%d writes (second of %d groups), want 4: a; b+c merged (failed); b; c", len(store.calls), len(store.calls[1]))
	}
	if mem.txs["a"].Status != StatusSubmitted || mem.txs["b"].Status != StatusSubmitted || mem.txs["c"].Status != StatusFailed {
		t.Fatalf("statuses a %s b %s c %s", mem.txs["a"].Status, mem.txs["b"].Status, mem.txs["c"].Status)
	}
}
