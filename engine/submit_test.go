package engine

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// senderStore is what a test Sender runs on: a SenderStore that can also
// merge the calls of a SubmitStage.
type senderStore interface {
	SenderStore
	StageStore
}

// lostCommitStore is a memStore whose next lose writes of signed
// transactions commit and then answer an error (the answer to COMMIT was
// lost), and that holds each nonce of an account once, as the store's
// unique index does (ErrConflict).
type lostCommitStore struct {
	*memStore
	lose int
}

func (l *lostCommitStore) MarkSubmittedMany(ctx context.Context, f Fence, txs []*Transaction) error {
	return l.MarkSubmittedGroups(ctx, []SubmitGroup{{Fence: f, Txs: txs}})
}

func (l *lostCommitStore) MarkSubmittedGroups(ctx context.Context, groups []SubmitGroup) error {
	for _, g := range groups {
		for _, tx := range g.Txs {
			for id, held := range l.txs {
				if id != tx.ID && held.Nonce != nil && *held.Nonce == *tx.Nonce {
					return ErrConflict
				}
			}
		}
	}
	if err := l.memStore.MarkSubmittedGroups(ctx, groups); err != nil {
		return err
	}
	if l.lose > 0 {
		l.lose--
		return errors.New("driver: bad connection")
	}
	return nil
}

// heldNonces are the nonces the store holds, in order.
func heldNonces(m *memStore) []uint64 {
	var out []uint64
	for _, tx := range m.txs {
		if tx.Nonce != nil {
			out = append(out, *tx.Nonce)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// gapless reports whether nonces (sorted) are first, first+1, ...
func gapless(nonces []uint64, first uint64) bool {
	for i, n := range nonces {
		if n != first+uint64(i) {
			return false
		}
	}
	return true
}

// TestSenderCommitOutcomeUnknownNeverReusesNonces: when the signed rows
// were stored but the answer to COMMIT was lost, the next pump reads the
// next nonce again (and broadcasts what the store holds) instead of
// giving the held nonces to later transactions; before, the store refused
// each later transaction's nonce, the refusal was read as "cancelled
// meanwhile" and the pump looped forever.
func TestSenderCommitOutcomeUnknownNeverReusesNonces(t *testing.T) {
	chain := &fakeChain{}
	store := &lostCommitStore{memStore: newMemStore(), lose: 1}
	s := newTestSender(t, chain, store, 4)
	queue(t, s, "a", "b")
	if _, err := s.Pump(context.Background()); err == nil {
		t.Fatal("Pump succeeded though the answer to the commit was lost")
	}
	if a, b := store.txs["a"], store.txs["b"]; a.Status != StatusSubmitted || b.Status != StatusSubmitted || len(chain.sent) != 0 {
		t.Fatalf("after the lost answer: a %s, b %s, %d sent", a.Status, b.Status, len(chain.sent))
	}
	queue(t, s, "c")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Pump(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Pump after the lost answer: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Pump after the lost answer never returned")
	}
	if got := nonces(store.memStore, "a", "b", "c"); got[0] != uint64(0) || got[1] != uint64(1) || got[2] != uint64(2) {
		t.Fatalf("nonces = %v, want [0 1 2]", got)
	}
	sent := map[uint64]bool{}
	for _, tx := range chain.sent {
		sent[tx.Nonce()] = true
	}
	if !sent[0] || !sent[1] || !sent[2] {
		t.Fatalf("broadcast nonces %v, want 0 and 1 (stored, never sent) and 2", sent)
	}
}

// TestSenderStagePathHonoursContext: a pump through the network's stage
// whose context is done makes no call (it returns the context's error)
// instead of going on: a pump that loops ends with its deadline, and
// shutdown does not wait for it.
func TestSenderStagePathHonoursContext(t *testing.T) {
	chain := &fakeChain{}
	store := newMemStore()
	s := newTestSender(t, chain, store, 4)
	queue(t, s, "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Pump(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pump with a cancelled context = %v, want context.Canceled", err)
	}
	if len(chain.sent) != 0 || store.txs["a"].Status != StatusNew {
		t.Fatalf("cancelled pump: %d sent, a %s", len(chain.sent), store.txs["a"].Status)
	}
}

// failingRelease is a memStore whose ReleaseNonce fails at the failAt-th
// call (1-based), storing nothing then.
type failingRelease struct {
	*memStore
	calls, failAt int
}

func (f *failingRelease) ReleaseNonce(ctx context.Context, fence Fence, id string, e *TxError, ended time.Time) error {
	f.calls++
	if f.calls == f.failAt {
		return errors.New("database is locked")
	}
	return f.memStore.ReleaseNonce(ctx, fence, id, e, ended)
}

// TestSenderReleasesRefusedTailWithoutGap: the nonces of a refused tail
// are given back highest first, so a failure midway leaves the held
// nonces gapless, and the next pump goes on from the store's highest;
// before, they were given back lowest first, and a failed second
// give-back left a freed nonce below a held one.
func TestSenderReleasesRefusedTailWithoutGap(t *testing.T) {
	refuse := true
	chain := &fakeChain{send: func(tx *types.Transaction) error {
		if refuse && tx.Nonce() > 0 {
			return errors.New("txpool is full")
		}
		return nil
	}}
	store := &failingRelease{memStore: newMemStore(), failAt: 2}
	s := newTestSender(t, chain, store, 4)
	queue(t, s, "a", "b", "c")
	if _, err := s.Pump(context.Background()); err == nil {
		t.Fatal("Pump succeeded though a nonce could not be given back")
	}
	if held := heldNonces(store.memStore); !gapless(held, 0) {
		t.Fatalf("held nonces %v after a failed give-back: a gap", held)
	}
	refuse = false
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	held := heldNonces(store.memStore)
	if !gapless(held, 0) || len(held) != 3 {
		t.Fatalf("held nonces %v, want 0, 1, 2", held)
	}
}

// troubledChain is a fakeChain whose fee reads, estimates or nonce reads
// fail as a flaky provider's do.
type troubledChain struct {
	*fakeChain
	tipErr, nonceErr error
}

func (c *troubledChain) SuggestGasTipCap(ctx context.Context) (*big.Int, error) {
	if c.tipErr != nil {
		return nil, c.tipErr
	}
	return c.fakeChain.SuggestGasTipCap(ctx)
}

func (c *troubledChain) NonceAt(ctx context.Context, a common.Address, block *big.Int) (uint64, error) {
	if c.nonceErr != nil {
		return 0, c.nonceErr
	}
	return c.fakeChain.NonceAt(ctx, a, block)
}

// readFailing is a memStore whose reads of ready transactions fail.
type readFailing struct{ *memStore }

func (r readFailing) ReadyTransactionsOf(context.Context, string, map[string]int) (map[string][]*Transaction, error) {
	return nil, errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
}

// TestPumpNodeTroubleIsTold: a pump that a call to the node failed (a
// fee read that timed out or was rate limited, an estimate whose
// connection was lost, a nonce read) says so (IsNodeTrouble), so that the
// account retries within seconds; a pump the store failed does not.
func TestPumpNodeTroubleIsTold(t *testing.T) {
	timeout := fmt.Errorf(`Post "http://127.0.0.1:8545": %w`, context.DeadlineExceeded)
	refused := errors.New(`Post "http://127.0.0.1:8545": dial tcp 127.0.0.1:8545: connect: connection refused`)
	for _, tt := range []struct {
		name  string
		chain *troubledChain
	}{
		{"fee read times out", &troubledChain{fakeChain: &fakeChain{}, tipErr: timeout}},
		{"fee read rate limited", &troubledChain{fakeChain: &fakeChain{}, tipErr: NodeErrorSample{Status: 503, Message: "rate limit exceeded"}.Err()}},
		{"estimate connection lost", &troubledChain{fakeChain: &fakeChain{estimate: func(ethereum.CallMsg) (uint64, error) { return 0, refused }}}},
		{"nonce read times out", &troubledChain{fakeChain: &fakeChain{}, nonceErr: timeout}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := newMemStore()
			s := newTestSender(t, tt.chain.fakeChain, store, 4)
			s.net.Chain = tt.chain
			queue(t, s, "a")
			_, err := s.Pump(context.Background())
			if err == nil || !IsNodeTrouble(err) {
				t.Fatalf("Pump = %v; IsNodeTrouble %v, want true", err, IsNodeTrouble(err))
			}
		})
	}
	s := newTestSender(t, &fakeChain{}, readFailing{newMemStore()}, 4)
	if _, err := s.Pump(context.Background()); err == nil || IsNodeTrouble(err) {
		t.Fatalf("Pump on a store that is down = %v; IsNodeTrouble %v, want false", err, IsNodeTrouble(err))
	}
}

// batchRefusingChain is a fakeChain that broadcasts in one request and
// whose next refuse requests are refused whole by the provider (HTTP 429):
// none of their transactions reaches the node.
type batchRefusingChain struct {
	*fakeChain
	refuse int
}

func (c *batchRefusingChain) BatchEstimateGas(ctx context.Context, msgs []ethereum.CallMsg) ([]uint64, []error, error) {
	return EstimateEach(ctx, c.fakeChain, msgs)
}

func (c *batchRefusingChain) BatchSendTransactions(ctx context.Context, txs []*types.Transaction) ([]error, error) {
	if c.refuse > 0 {
		c.refuse--
		return nil, NodeErrorSample{Status: 429}.Err()
	}
	return SendEach(ctx, c.fakeChain, txs)
}

// TestSenderBroadcastRateLimitedWholeIsRefusedForNow: a provider that
// answers 429 to a whole broadcast request did not pass it to the node, so
// the batch is refused for now (nonces given back, queued, retried at the
// next pump), not counted as sent and left to a re-broadcast blocks later
// while the account's later nonces queue behind a gap. Before, the pump
// reported no error and the node had nothing until the in-flight check.
func TestSenderBroadcastRateLimitedWholeIsRefusedForNow(t *testing.T) {
	chain := &batchRefusingChain{fakeChain: &fakeChain{}, refuse: 1}
	store := newMemStore()
	s := newTestSender(t, chain.fakeChain, store, 4)
	s.net.Chain = chain
	s.io = perAccountIO{store: store, net: s.net}
	queue(t, s, "a", "b")
	_, err := s.Pump(context.Background())
	if !IsNodeTrouble(err) {
		t.Fatalf("Pump after a refused broadcast request: %v, want the node's trouble (short backoff)", err)
	}
	if a, b := store.txs["a"], store.txs["b"]; a.Status != StatusNew || b.Status != StatusNew || a.Nonce != nil || b.Nonce != nil {
		t.Fatalf("after the 429: a %s (nonce %v), b %s (nonce %v), want both new without a nonce", a.Status, a.Nonce, b.Status, b.Nonce)
	}
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatalf("second Pump: %v", err)
	}
	if len(chain.sent) != 2 || chain.sent[0].Nonce() != 0 || chain.sent[1].Nonce() != 1 {
		t.Fatalf("node received %d transactions, want nonces 0 and 1", len(chain.sent))
	}
}
