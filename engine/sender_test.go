package engine

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"sort"
	"strings"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/txengine/txengine/engine/keystore"
)

// fakeChain is a scripted node: estimation and broadcast answers come from
// functions the test sets; every broadcast is recorded. It answers what
// the Senders, SubmitStages, Faucets and Followers of these tests call;
// the rest (chain id, legacy gas price, eth_call), which none of them asks
// here, it leaves to Node.
type fakeChain struct {
	Node // not called

	nonce uint64
	// head is the chain's head (10 when zero); nonceAt, when set, answers
	// NonceAt at a given block (nil: latest).
	head     uint64
	gasLimit uint64 // of every block (0: none given)
	nonceAt  func(block *big.Int) uint64
	receipts map[common.Hash]*types.Receipt
	estimate func(msg ethereum.CallMsg) (uint64, error)
	send     func(tx *types.Transaction) error
	sent     []*types.Transaction
}

func (c *fakeChain) HeaderByNumber(context.Context, *big.Int) (*types.Header, error) {
	head := c.head
	if head == 0 {
		head = 10
	}
	return &types.Header{Number: new(big.Int).SetUint64(head), GasLimit: c.gasLimit, BaseFee: big.NewInt(1_000_000_000)}, nil
}
func (c *fakeChain) NonceAt(_ context.Context, _ common.Address, block *big.Int) (uint64, error) {
	if c.nonceAt != nil {
		return c.nonceAt(block), nil
	}
	return c.nonce, nil
}
func (c *fakeChain) PendingNonceAt(context.Context, common.Address) (uint64, error) {
	return c.nonce, nil
}
func (c *fakeChain) BalanceAt(context.Context, common.Address, *big.Int) (*big.Int, error) {
	return big.NewInt(0), nil
}
func (c *fakeChain) EstimateGas(_ context.Context, msg ethereum.CallMsg) (uint64, error) {
	if c.estimate != nil {
		return c.estimate(msg)
	}
	return 50_000, nil
}
func (c *fakeChain) SuggestGasTipCap(context.Context) (*big.Int, error) {
	return big.NewInt(1_000_000), nil
}
func (c *fakeChain) SendTransaction(_ context.Context, tx *types.Transaction) error {
	c.sent = append(c.sent, tx)
	if c.send != nil {
		return c.send(tx)
	}
	return nil
}
func (c *fakeChain) BlockReceipts(context.Context, uint64) ([]*types.Receipt, error) { return nil, nil }
func (c *fakeChain) TransactionReceipt(_ context.Context, h common.Hash) (*types.Receipt, error) {
	if r, ok := c.receipts[h]; ok {
		return r, nil
	}
	return nil, ethereum.NotFound
}

// memStore is an in-memory SenderStore with the store's documented rules.
type memStore struct {
	txs       map[string]*Transaction
	order     []string
	failWrite error
	// leases holds the current lease epoch of each account.
	leases map[string]int64
	// hashes holds every stored version hash of each transaction.
	hashes map[string][]common.Hash
	// summaries counts the InFlightSummary reads.
	summaries int
}

func newMemStore() *memStore {
	return &memStore{txs: map[string]*Transaction{}, leases: map[string]int64{}, hashes: map[string][]common.Hash{}}
}

// acquire takes the account's lease for a new activation.
func (m *memStore) acquire(accountID string) Fence {
	m.leases[accountID]++
	return Fence{AccountID: accountID, Node: "node", Epoch: m.leases[accountID]}
}

func (m *memStore) CheckFence(_ context.Context, f Fence) error {
	if f.IsZero() || m.leases[f.AccountID] == f.Epoch {
		return nil
	}
	return ErrFenced
}

func (m *memStore) InsertTransactions(_ context.Context, txs []*Transaction) error {
	for _, tx := range txs {
		cp := *tx
		m.txs[tx.ID] = &cp
		m.order = append(m.order, tx.ID)
	}
	return nil
}

func (m *memStore) ReadyTransactions(_ context.Context, accountID, _ string, limit int) ([]*Transaction, error) {
	var out []*Transaction
	for _, id := range m.order {
		if tx := m.txs[id]; tx.Status == StatusNew && tx.AccountID == accountID && len(out) < limit {
			cp := *tx
			out = append(out, &cp)
		}
	}
	return out, nil
}

func (m *memStore) InFlight(_ context.Context, accountID, _ string) ([]*Transaction, error) {
	var out []*Transaction
	for _, tx := range m.txs {
		if tx.Status == StatusSubmitted && tx.AccountID == accountID {
			out = append(out, tx)
		}
	}
	sort.Slice(out, func(i, j int) bool { return *out[i].Nonce < *out[j].Nonce })
	return out, nil
}

func (m *memStore) InFlightSummary(ctx context.Context, a, n string) (InFlightSummary, error) {
	m.summaries++
	txs, _ := m.InFlight(ctx, a, n)
	out := InFlightSummary{Count: len(txs)}
	if len(txs) > 0 {
		out.LowestNonce = *txs[0].Nonce // by nonce
	}
	return out, nil
}

func (m *memStore) MaxNonce(_ context.Context, accountID, _ string) (uint64, bool, error) {
	var max uint64
	found := false
	for _, tx := range m.txs {
		if tx.Nonce != nil && tx.AccountID == accountID && (!found || *tx.Nonce > max) {
			max, found = *tx.Nonce, true
		}
	}
	return max, found, nil
}

func (m *memStore) markSubmitted(tx *Transaction) error {
	cur := m.txs[tx.ID]
	if cur.Status != StatusNew {
		return ErrConflict
	}
	cp := *tx
	cp.Status, cp.Error = StatusSubmitted, nil
	m.txs[tx.ID] = &cp
	m.hashes[tx.ID] = append(m.hashes[tx.ID], *tx.Hash)
	return nil
}

func (m *memStore) MarkSubmittedMany(ctx context.Context, f Fence, txs []*Transaction) error {
	if m.failWrite != nil {
		return m.failWrite
	}
	if err := m.CheckFence(ctx, f); err != nil {
		return err
	}
	for _, tx := range txs {
		if m.txs[tx.ID].Status != StatusNew {
			return ErrConflict
		}
	}
	for _, tx := range txs {
		if err := m.markSubmitted(tx); err != nil {
			return err
		}
	}
	return nil
}

// InFlightSummaries implements StageStore (the store holds one account).
func (m *memStore) InFlightSummaries(ctx context.Context, network string, ids []string) (map[string]InFlightSummary, error) {
	out := map[string]InFlightSummary{}
	for _, id := range ids {
		if sum, _ := m.InFlightSummary(ctx, id, network); sum.Count > 0 {
			out[id] = sum
		}
	}
	return out, nil
}

// ReadyTransactionsOf implements StageStore.
func (m *memStore) ReadyTransactionsOf(ctx context.Context, network string, limits map[string]int) (map[string][]*Transaction, error) {
	out := map[string][]*Transaction{}
	for id, limit := range limits {
		if txs, _ := m.ReadyTransactions(ctx, id, network, limit); len(txs) > 0 {
			out[id] = txs
		}
	}
	return out, nil
}

// CountQueuedOf implements StageStore.
func (m *memStore) CountQueuedOf(_ context.Context, _ string, ids []string) (map[string]int, error) {
	n := 0
	for _, tx := range m.txs {
		if tx.Status == StatusNew || tx.Status == StatusWaiting {
			n++
		}
	}
	out := map[string]int{}
	for _, id := range ids {
		out[id] = n
	}
	return out, nil
}

// AccountsByID implements StageStore (the store holds no accounts).
func (m *memStore) AccountsByID(context.Context, []string) (map[string]*Account, error) {
	return map[string]*Account{}, nil
}

// MaxNonces implements StageStore.
func (m *memStore) MaxNonces(ctx context.Context, network string, ids []string) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, id := range ids {
		if n, ok, _ := m.MaxNonce(ctx, id, network); ok {
			out[id] = n
		}
	}
	return out, nil
}

// MarkSubmittedGroups implements StageStore: every group checked first,
// then stored (all or none).
func (m *memStore) MarkSubmittedGroups(ctx context.Context, groups []SubmitGroup) error {
	if m.failWrite != nil {
		return m.failWrite
	}
	for _, g := range groups {
		if err := m.CheckFence(ctx, g.Fence); err != nil {
			return err
		}
		for _, tx := range g.Txs {
			if m.txs[tx.ID].Status != StatusNew {
				return ErrConflict
			}
		}
	}
	for _, g := range groups {
		for _, tx := range g.Txs {
			if err := m.markSubmitted(tx); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *memStore) MarkFailed(_ context.Context, id string, e *TxError, ended time.Time) error {
	tx := m.txs[id]
	if tx.Status.Terminal() {
		return ErrConflict
	}
	tx.Status, tx.Error, tx.Ended = StatusFailed, e, &ended
	return nil
}

func (m *memStore) FailQueued(ctx context.Context, f Fence, id string, e *TxError, ended time.Time) error {
	if err := m.CheckFence(ctx, f); err != nil {
		return err
	}
	tx, ok := m.txs[id]
	if !ok {
		return ErrNotFound
	}
	if tx.Status != StatusNew {
		return ErrConflict
	}
	tx.Status, tx.Error, tx.Ended = StatusFailed, e, &ended
	return nil
}

// The ConditionStore part of memStore.

func (m *memStore) CancelTransaction(_ context.Context, id string, e *TxError, ended time.Time) (*Transaction, error) {
	tx, ok := m.txs[id]
	if !ok {
		return nil, ErrNotFound
	}
	if tx.Status != StatusNew && tx.Status != StatusWaiting {
		return nil, ErrConflict
	}
	tx.Status, tx.Error, tx.Ended = StatusFailed, e, &ended
	return tx, nil
}

func (m *memStore) MarkWaiting(ctx context.Context, f Fence, id string) error {
	if err := m.CheckFence(ctx, f); err != nil {
		return err
	}
	tx, ok := m.txs[id]
	if !ok {
		return ErrNotFound
	}
	if tx.Status != StatusNew {
		return ErrConflict
	}
	tx.Status = StatusWaiting
	return nil
}

func (m *memStore) MarkReady(_ context.Context, ids []string) ([]string, error) {
	var moved []string
	for _, id := range ids {
		if tx, ok := m.txs[id]; ok && tx.Status == StatusWaiting {
			tx.Status = StatusNew
			moved = append(moved, id)
		}
	}
	return moved, nil
}

func (m *memStore) Dependents(context.Context, []string) ([]*Transaction, error) { return nil, nil }

func (m *memStore) Statuses(_ context.Context, ids []string) (map[string]TxStatus, error) {
	out := map[string]TxStatus{}
	for _, id := range ids {
		if tx, ok := m.txs[id]; ok {
			out[id] = tx.Status
		}
	}
	return out, nil
}

func (m *memStore) Waiting(context.Context, string, string, int) ([]*Transaction, error) {
	return nil, nil
}

func (m *memStore) ExpireWaiting(context.Context, string, time.Time, int) ([]string, error) {
	return nil, nil
}

func (m *memStore) ReleaseNonce(ctx context.Context, f Fence, id string, e *TxError, ended time.Time) error {
	if err := m.CheckFence(ctx, f); err != nil {
		return err
	}
	tx := m.txs[id]
	tx.Nonce, tx.Hash, tx.RawTx, tx.Submitted = nil, nil, nil, nil
	delete(m.hashes, id)
	if e == nil {
		tx.Status = StatusNew
		return nil
	}
	tx.Status, tx.Error, tx.Ended = StatusFailed, e, &ended
	return nil
}

func (m *memStore) MarkReplaced(ctx context.Context, f Fence, tx *Transaction) error {
	if err := m.CheckFence(ctx, f); err != nil {
		return err
	}
	cur := m.txs[tx.ID]
	if cur.Status != StatusSubmitted || *cur.Nonce != *tx.Nonce {
		return ErrConflict
	}
	cur.Hash, cur.RawTx, cur.Replaced, cur.Error = tx.Hash, tx.RawTx, tx.Replaced, tx.Error
	m.hashes[tx.ID] = append(m.hashes[tx.ID], *tx.Hash)
	return nil
}

func (m *memStore) FailSubmitted(ctx context.Context, f Fence, id string, e *TxError, ended time.Time) error {
	if err := m.CheckFence(ctx, f); err != nil {
		return err
	}
	tx := m.txs[id]
	if tx.Status != StatusSubmitted {
		return ErrConflict
	}
	tx.Status, tx.Error, tx.Ended = StatusFailed, e, &ended
	return nil
}

func (m *memStore) NoteError(_ context.Context, id string, status TxStatus, e *TxError) error {
	tx := m.txs[id]
	if tx.Status != status {
		return ErrConflict
	}
	tx.Error = e
	return nil
}

func (m *memStore) HashesOf(_ context.Context, ids []string) (map[string][]common.Hash, error) {
	out := map[string][]common.Hash{}
	for _, id := range ids {
		if hs := m.hashes[id]; len(hs) > 0 {
			out[id] = append([]common.Hash(nil), hs...)
		}
	}
	return out, nil
}

func (m *memStore) MarkMined(_ context.Context, outcomes []Mined) error {
	for _, o := range outcomes {
		tx := m.txs[o.ID]
		if tx.Status != StatusSubmitted {
			return ErrConflict
		}
		bn, h := o.BlockNumber, o.Hash
		tx.Status, tx.Error, tx.BlockNumber, tx.Hash, tx.Ended = o.Status, o.Error, &bn, &h, &o.Ended
	}
	return nil
}

func (m *memStore) ContractByID(context.Context, string) (*Contract, error) {
	return nil, ErrNotFound
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// stepClock is a clock the test moves.
type stepClock struct{ t time.Time }

func (c *stepClock) Now() time.Time { return c.t }

func newTestSender(t *testing.T, chain *fakeChain, store senderStore, window int) *Sender {
	t.Helper()
	sealer, err := keystore.NewKeySealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	acct, err := NewLocalAccount(sealer)
	if err != nil {
		t.Fatal(err)
	}
	acct.ID = "acct"
	net := &Network{Name: "dev", ChainID: big.NewInt(1337), InFlight: window, GasMarginPercent: 20, Chain: chain}
	s := NewSender(acct, net, store, sealer, fixedClock{time.Unix(1_700_000_000, 0).UTC()}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if !strings.HasSuffix(t.Name(), "/direct") {
		// As in production: the pumps go through the network's stage.
		st := NewSubmitStage(net, store)
		t.Cleanup(st.Close)
		s.WithStage(st)
	}
	return s
}

// TestSenderDirect runs tests of the sender without a SubmitStage: each
// call of a pump on its own, as with a store that cannot merge them.
func TestSenderDirect(t *testing.T) {
	for _, f := range []func(*testing.T){
		TestSenderAssignsGaplessNoncesInOrderWithinWindow,
		TestSenderBatchesRoundTrips,
	} {
		t.Run("direct", f)
	}
}

func queue(t *testing.T, s *Sender, ids ...string) {
	t.Helper()
	var txs []*Transaction
	for _, id := range ids {
		txs = append(txs, &Transaction{ID: id, AccountID: "acct", Network: "dev", Status: StatusNew, ContractAddress: common.Address{1}, Data: []byte{0xa9, 0x05, 0x9c, 0xbb}})
	}
	if err := s.store.InsertTransactions(context.Background(), txs); err != nil {
		t.Fatal(err)
	}
}

func nonces(store *memStore, ids ...string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		if n := store.txs[id].Nonce; n != nil {
			out[i] = *n
		} else {
			out[i] = nil
		}
	}
	return out
}

func TestSenderAssignsGaplessNoncesInOrderWithinWindow(t *testing.T) {
	chain := &fakeChain{nonce: 7}
	store := newMemStore()
	s := newTestSender(t, chain, store, 2)
	queue(t, s, "a", "b", "c")
	n, err := s.Pump(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("Pump = %d, %v; want 2 submitted (window 2)", n, err)
	}
	if got := nonces(store, "a", "b", "c"); got[0] != uint64(7) || got[1] != uint64(8) || got[2] != nil {
		t.Fatalf("nonces = %v, want [7 8 <nil>]", got)
	}
	if store.txs["c"].Status != StatusNew || len(chain.sent) != 2 {
		t.Fatalf("c = %s, sent %d", store.txs["c"].Status, len(chain.sent))
	}
	// Gas limit has the 20% margin; the signed bytes were stored before the broadcast.
	if store.txs["a"].GasLimit != 60_000 || len(store.txs["a"].RawTx) == 0 {
		t.Fatalf("a: gas %d raw %d", store.txs["a"].GasLimit, len(store.txs["a"].RawTx))
	}
	if !s.WindowFull() {
		t.Fatalf("WindowFull = false with 2 in flight in a window of 2")
	}
	// The window opens when a is mined.
	store.txs["a"].Status = StatusCompleted
	if n, _ := s.Pump(context.Background()); n != 1 || *store.txs["c"].Nonce != 9 {
		t.Fatalf("after a mined: pumped %d, c nonce %v", n, store.txs["c"].Nonce)
	}
	store.txs["b"].Status = StatusCompleted
	if n, _ := s.Pump(context.Background()); n != 0 || s.WindowFull() {
		t.Fatalf("after b mined: pumped %d, WindowFull %v with 1 in flight", n, s.WindowFull())
	}
}

func TestSenderSyncNeverTrustsPendingAndResumesAfterStore(t *testing.T) {
	chain := &fakeChain{nonce: 3}
	store := newMemStore()
	s := newTestSender(t, chain, store, 10)
	five := uint64(5)
	store.txs["old"] = &Transaction{ID: "old", AccountID: "acct", Status: StatusCompleted, Nonce: &five}
	queue(t, s, "x")
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := *store.txs["x"].Nonce; got != 6 {
		t.Fatalf("nonce = %d, want 6 (store max 5 + 1, chain at 3)", got)
	}
}

func TestSenderBroadcastOutcomes(t *testing.T) {
	tests := []struct {
		name       string
		sendErr    error
		wantStatus TxStatus
		wantCode   TxErrorCode
		wantNextB  uint64 // nonce the following transaction gets
	}{
		{"accepted", nil, StatusSubmitted, "", 1},
		{"already known", errors.New("already known"), StatusSubmitted, "", 1},
		{"timeout counts as sent", context.DeadlineExceeded, StatusSubmitted, "", 1},
		{"connection lost counts as sent", errors.New("connection reset by peer"), StatusSubmitted, "", 1},
		{"insufficient funds releases nonce", errors.New("insufficient funds for gas * price + value"), StatusFailed, TxInsufficientFunds, 0},
		{"underpriced requeues", errors.New("transaction underpriced"), StatusNew, "", 0},
		{"pool full requeues", errors.New("txpool is full"), StatusNew, "", 0},
		{"gas limit fails", errors.New("exceeds block gas limit"), StatusFailed, TxInvalid, 0},
		{"nonce too low requeues", errors.New("nonce too low"), StatusNew, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := true
			chain := &fakeChain{send: func(*types.Transaction) error {
				if first {
					first = false
					return tt.sendErr
				}
				return nil
			}}
			store := newMemStore()
			s := newTestSender(t, chain, store, 1)
			queue(t, s, "a")
			if _, err := s.Pump(context.Background()); err != nil && !errors.Is(err, ErrNodeBusy) {
				t.Fatal(err)
			}
			a := store.txs["a"]
			if a.Status != tt.wantStatus {
				t.Fatalf("status = %s, want %s", a.Status, tt.wantStatus)
			}
			if tt.wantCode != "" && (a.Error == nil || a.Error.Code != tt.wantCode) {
				t.Fatalf("error = %+v, want %s", a.Error, tt.wantCode)
			}
			if a.Status != StatusSubmitted && a.Nonce != nil {
				t.Fatalf("released transaction keeps nonce %d", *a.Nonce)
			}
			if a.Status == StatusSubmitted {
				a.Status = StatusCompleted // free the window
			}
			queue(t, s, "b")
			if _, err := s.Pump(context.Background()); err != nil {
				t.Fatal(err)
			}
			// After "nonce too low", a is requeued ahead of b and gets nonce 0 again.
			next := store.txs["b"]
			if tt.wantStatus == StatusNew {
				next = store.txs["a"]
			}
			if next.Nonce == nil || *next.Nonce != tt.wantNextB {
				t.Fatalf("next nonce = %v, want %d", next.Nonce, tt.wantNextB)
			}
		})
	}
}

func TestSenderEstimationRevertFailsBeforeNonce(t *testing.T) {
	chain := &fakeChain{estimate: func(ethereum.CallMsg) (uint64, error) {
		return 0, errors.New("execution reverted: ERC20: transfer amount exceeds balance")
	}}
	store := newMemStore()
	s := newTestSender(t, chain, store, 4)
	queue(t, s, "a")
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	a := store.txs["a"]
	if a.Status != StatusFailed || a.Error.Code != TxReverted || a.Error.Message != "execution reverted: ERC20: transfer amount exceeds balance" || a.Nonce != nil {
		t.Fatalf("a = %s %+v nonce %v", a.Status, a.Error, a.Nonce)
	}
	if len(chain.sent) != 0 {
		t.Fatalf("a reverted estimation was broadcast")
	}
}

func TestSenderEstimationNodeErrorRetriesLater(t *testing.T) {
	chain := &fakeChain{estimate: func(ethereum.CallMsg) (uint64, error) { return 0, errors.New("connection refused") }}
	store := newMemStore()
	s := newTestSender(t, chain, store, 4)
	queue(t, s, "a")
	if _, err := s.Pump(context.Background()); err == nil {
		t.Fatal("Pump succeeded with the node down")
	}
	if store.txs["a"].Status != StatusNew {
		t.Fatalf("a = %s, want still new", store.txs["a"].Status)
	}
}

func TestSenderPersistsBeforeBroadcast(t *testing.T) {
	chain := &fakeChain{}
	store := newMemStore()
	store.failWrite = errors.New("disk full")
	s := newTestSender(t, chain, store, 4)
	queue(t, s, "a")
	if _, err := s.Pump(context.Background()); err == nil {
		t.Fatal("Pump succeeded though the signed transaction could not be stored")
	}
	if len(chain.sent) != 0 {
		t.Fatal("broadcast a transaction whose signed bytes were not stored")
	}
	store.failWrite = nil
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	if *store.txs["a"].Nonce != 0 {
		t.Fatalf("nonce after failed write = %d, want 0 (not consumed)", *store.txs["a"].Nonce)
	}
}

func TestSenderAppliesFeeCap(t *testing.T) {
	chain := &fakeChain{}
	store := newMemStore()
	s := newTestSender(t, chain, store, 4)
	queue(t, s, "uncapped")
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Base fee 1 gwei, tip 0.001 gwei: fee cap 2*base + tip.
	if got := chain.sent[0].GasFeeCap(); got.Cmp(big.NewInt(2_001_000_000)) != 0 {
		t.Fatalf("uncapped fee cap = %s", got)
	}
	s.net.MaxFeePerGasCap = big.NewInt(1_500_000_000)
	queue(t, s, "capped")
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := chain.sent[1].GasFeeCap(); got.Cmp(big.NewInt(1_500_000_000)) != 0 {
		t.Fatalf("capped fee cap = %s, want 1500000000", got)
	}
	// A cap below the tip lowers the tip too.
	n := &Network{MaxFeePerGasCap: big.NewInt(5)}
	if fc, tip := n.CapFees(big.NewInt(100), big.NewInt(7)); fc.Int64() != 5 || tip.Int64() != 5 {
		t.Fatalf("CapFees = %s, %s; want 5, 5", fc, tip)
	}
	if price, tip := (&Network{}).CapFees(big.NewInt(100), nil); price.Int64() != 100 || tip != nil {
		t.Fatalf("CapFees without cap = %s, %v", price, tip)
	}
}

// versions counts the distinct signed transactions among txs.
func versions(txs []*types.Transaction) int {
	seen := map[common.Hash]bool{}
	for _, tx := range txs {
		seen[tx.Hash()] = true
	}
	return len(seen)
}

// batchChain is a fakeChain that batches estimates and broadcasts and
// counts the round trips.
type batchChain struct {
	*fakeChain
	estimateBatches, sendBatches int
}

func (b *batchChain) BatchEstimateGas(ctx context.Context, msgs []ethereum.CallMsg) ([]uint64, []error, error) {
	b.estimateBatches++
	gas := make([]uint64, len(msgs))
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		gas[i], errs[i] = b.fakeChain.EstimateGas(ctx, m)
	}
	return gas, errs, nil
}

func (b *batchChain) BatchSendTransactions(ctx context.Context, txs []*types.Transaction) ([]error, error) {
	b.sendBatches++
	errs := make([]error, len(txs))
	for i, tx := range txs {
		errs[i] = b.fakeChain.SendTransaction(ctx, tx)
	}
	return errs, nil
}

func newBatchSender(t *testing.T, fc *fakeChain, window int) (*Sender, *memStore, *batchChain) {
	t.Helper()
	bc := &batchChain{fakeChain: fc}
	store := newMemStore()
	s := newTestSender(t, fc, store, window)
	s.net.Chain = bc
	return s, store, bc
}

func TestSenderBatchesRoundTrips(t *testing.T) {
	s, store, bc := newBatchSender(t, &fakeChain{}, 64)
	ids := []string{"a", "b", "c", "d", "e"}
	queue(t, s, ids...)
	if n, err := s.Pump(context.Background()); err != nil || n != 5 {
		t.Fatalf("Pump = %d, %v", n, err)
	}
	if bc.estimateBatches != 1 || bc.sendBatches != 1 {
		t.Fatalf("%d estimate and %d send round trips for 5 transactions, want 1 and 1", bc.estimateBatches, bc.sendBatches)
	}
	for i, id := range ids {
		if tx := store.txs[id]; tx.Status != StatusSubmitted || *tx.Nonce != uint64(i) {
			t.Fatalf("%s: %s nonce %v", id, tx.Status, tx.Nonce)
		}
	}
}

func TestSenderBatchRejections(t *testing.T) {
	reject := func(byNonce map[uint64]error) func(*types.Transaction) error {
		return func(tx *types.Transaction) error { return byNonce[tx.Nonce()] }
	}
	tests := []struct {
		name     string
		byNonce  map[uint64]error
		statuses []TxStatus // of a, b, c
		next     uint64
	}{
		{"rejected tail is released", map[uint64]error{1: errors.New("insufficient funds for gas * price + value: balance 1, tx cost 2"), 2: errors.New("insufficient funds for gas * price + value: balance 1, tx cost 2")},
			[]TxStatus{StatusSubmitted, StatusFailed, StatusFailed}, 1},
		{"rejection before an accepted one keeps its nonce", map[uint64]error{1: errors.New("transaction underpriced")},
			[]TxStatus{StatusSubmitted, StatusSubmitted, StatusSubmitted}, 3},
		{"unknown outcome counts as sent", map[uint64]error{2: context.DeadlineExceeded},
			[]TxStatus{StatusSubmitted, StatusSubmitted, StatusSubmitted}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, store, _ := newBatchSender(t, &fakeChain{send: reject(tt.byNonce)}, 8)
			queue(t, s, "a", "b", "c")
			if _, err := s.Pump(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i, id := range []string{"a", "b", "c"} {
				tx := store.txs[id]
				if tx.Status != tt.statuses[i] {
					t.Fatalf("%s: %s, want %s", id, tx.Status, tt.statuses[i])
				}
				if (tx.Status == StatusSubmitted) != (tx.Nonce != nil) {
					t.Fatalf("%s: %s with nonce %v", id, tx.Status, tx.Nonce)
				}
			}
			if s.next != tt.next {
				t.Fatalf("next nonce %d, want %d (no gap, no reuse)", s.next, tt.next)
			}
			if got := s.TakeFailed(); len(got) != countStatus(tt.statuses, StatusFailed) {
				t.Fatalf("failed ids %v", got)
			}
		})
	}
}

func countStatus(ss []TxStatus, want TxStatus) int {
	n := 0
	for _, s := range ss {
		if s == want {
			n++
		}
	}
	return n
}

func TestSenderBatchEstimationRevertTakesNoNonce(t *testing.T) {
	fc := &fakeChain{estimate: func(msg ethereum.CallMsg) (uint64, error) {
		if msg.Data[4] == 0xbb { // the second transaction's marker
			return 0, errors.New("execution reverted: no")
		}
		return 50_000, nil
	}}
	s, store, _ := newBatchSender(t, fc, 8)
	queue(t, s, "a", "b", "c")
	store.txs["b"].Data = []byte{0xa9, 0x05, 0x9c, 0xbb, 0xbb}
	store.txs["a"].Data = []byte{0xa9, 0x05, 0x9c, 0xbb, 0x01}
	store.txs["c"].Data = []byte{0xa9, 0x05, 0x9c, 0xbb, 0x02}
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b := store.txs["b"]; b.Status != StatusFailed || b.Error.Code != TxReverted || b.Nonce != nil {
		t.Fatalf("b: %s %+v nonce %v", b.Status, b.Error, b.Nonce)
	}
	if *store.txs["a"].Nonce != 0 || *store.txs["c"].Nonce != 1 {
		t.Fatalf("nonces a=%d c=%d, want 0 and 1", *store.txs["a"].Nonce, *store.txs["c"].Nonce)
	}
}

// countingSigner counts signatures and runs before (when set) before each.
type countingSigner struct {
	Signer
	n      int
	before func()
}

func (c *countingSigner) SignTx(ctx context.Context, key keystore.Key, tx *types.Transaction, chainID *big.Int) (*types.Transaction, error) {
	c.n++
	if c.before != nil {
		c.before()
	}
	return c.Signer.SignTx(ctx, key, tx, chainID)
}

// storedHashes returns every hash the store holds for the account.
func storedHashes(store *memStore) map[common.Hash]bool {
	out := map[common.Hash]bool{}
	for _, tx := range store.txs {
		if tx.Hash != nil {
			out[*tx.Hash] = true
		}
	}
	return out
}

// TestSenderStaleFenceSignsStoresBroadcastsNothing: two activations of one
// account, with fences 1 and 2. The stale one signs, stores and broadcasts
// nothing new, neither a first version nor a replacement, and its Pump
// returns ErrFenced; the current one works as usual.
func TestSenderStaleFenceSignsStoresBroadcastsNothing(t *testing.T) {
	chain := &fakeChain{}
	store := newMemStore()
	clock := &stepClock{t: time.Unix(1_700_000_000, 0).UTC()}
	first := newTestSender(t, chain, store, 4)
	first.clock = clock
	staleSigner := &countingSigner{Signer: first.signer}
	first.signer = staleSigner
	first.WithFence(store.acquire("acct"))
	second := NewSender(first.account, first.net, store, first.signer.(*countingSigner).Signer, clock, first.log)
	currentSigner := &countingSigner{Signer: second.signer}
	second.signer = currentSigner
	second.WithFence(store.acquire("acct"))

	queue(t, first, "a", "b")
	if _, err := first.Pump(context.Background()); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale Pump = %v, want ErrFenced", err)
	}
	if staleSigner.n != 0 || len(chain.sent) != 0 {
		t.Fatalf("stale activation signed %d and broadcast %d transactions", staleSigner.n, len(chain.sent))
	}
	if got := nonces(store, "a", "b"); got[0] != nil || got[1] != nil || store.txs["a"].Status != StatusNew {
		t.Fatalf("stale activation changed the queue: nonces %v, a %s", got, store.txs["a"].Status)
	}

	if n, err := second.Pump(context.Background()); err != nil || n != 2 {
		t.Fatalf("current Pump = %d, %v; want 2 submitted", n, err)
	}
	if got := nonces(store, "a", "b"); got[0] != uint64(0) || got[1] != uint64(1) || currentSigner.n != 2 {
		t.Fatalf("current activation: nonces %v, %d signatures", got, currentSigner.n)
	}

	// Both transactions get stuck: the stale activation may broadcast the
	// stored bytes again, but replaces nothing.
	stored := storedHashes(store)
	observe(chain, first.net, 10) // both look once: blocks are counted from here
	for _, s := range []*Sender{first, second} {
		if _, err := s.Pump(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	observe(chain, first.net, 10+DefaultReplaceBlocks)
	sentBefore := len(chain.sent)
	if _, err := first.Pump(context.Background()); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale Pump of stuck transactions = %v, want ErrFenced", err)
	}
	if staleSigner.n != 0 {
		t.Fatalf("stale activation signed %d replacements", staleSigner.n)
	}
	for _, tx := range chain.sent[sentBefore:] {
		if !stored[tx.Hash()] {
			t.Fatalf("stale activation broadcast %s, which is not stored", tx.Hash())
		}
	}
	if got := storedHashes(store); len(got) != len(stored) {
		t.Fatalf("stale activation changed the stored versions: %v, was %v", got, stored)
	}
	// The current activation replaces the stuck one (the lowest nonce; b's
	// fees would do once a is mined).
	if _, err := second.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	if currentSigner.n != 3 || stored[*store.txs["a"].Hash] || !stored[*store.txs["b"].Hash] {
		t.Fatalf("current activation did not replace a alone: %d signatures", currentSigner.n)
	}
}

// TestSenderFenceTakenDuringBatch: the lease is taken after the sender
// checked its fence. The fenced writes refuse what follows: signed bytes
// that could not be stored are not broadcast, and a rejected transaction's
// nonce is not released by the stale activation.
func TestSenderFenceTakenDuringBatch(t *testing.T) {
	t.Run("between signing and storing", func(t *testing.T) {
		chain := &fakeChain{}
		store := newMemStore()
		s := newTestSender(t, chain, store, 4)
		s.WithFence(store.acquire("acct"))
		signer := &countingSigner{Signer: s.signer}
		signer.before = func() {
			if signer.n == 1 {
				store.acquire("acct") // another activation starts
			}
		}
		s.signer = signer
		queue(t, s, "a", "b")
		if _, err := s.Pump(context.Background()); !errors.Is(err, ErrFenced) {
			t.Fatalf("Pump = %v, want ErrFenced", err)
		}
		if len(chain.sent) != 0 {
			t.Fatalf("broadcast %d transactions whose signed bytes were not stored", len(chain.sent))
		}
		if got := nonces(store, "a", "b"); got[0] != nil || got[1] != nil {
			t.Fatalf("nonces taken: %v", got)
		}
	})
	t.Run("between storing and releasing", func(t *testing.T) {
		store := newMemStore()
		chain := &fakeChain{send: func(*types.Transaction) error {
			store.acquire("acct") // another activation starts meanwhile
			return errors.New("insufficient funds for gas * price + value")
		}}
		s := newTestSender(t, chain, store, 4)
		s.WithFence(store.acquire("acct"))
		queue(t, s, "a")
		if _, err := s.Pump(context.Background()); !errors.Is(err, ErrFenced) {
			t.Fatalf("Pump = %v, want ErrFenced", err)
		}
		// The nonce stays taken: the current activation settles it.
		if a := store.txs["a"]; a.Status != StatusSubmitted || a.Nonce == nil {
			t.Fatalf("a = %s nonce %v; want submitted, nonce kept", a.Status, a.Nonce)
		}
	})
}

// TestSenderStaleFenceFailsNothing: two activations of one account, with
// fences 1 and 2. The stale one checked its fence at the start of its
// batch; while it waits for the estimate, the current one takes the lease
// and submits the transaction, whose estimate then reverts for the stale
// one. Failing it would lose a submitted transaction from tracking: the
// stale write is refused, the transaction stays submitted, and the stale
// Pump returns ErrFenced.
func TestSenderStaleFenceFailsNothing(t *testing.T) {
	ctx := context.Background()
	chain := &fakeChain{}
	store := newMemStore()
	stale := newTestSender(t, chain, store, 4)
	stale.WithFence(store.acquire("acct"))
	current := NewSender(stale.account, stale.net, store, stale.signer, stale.clock, stale.log)
	queue(t, stale, "a")
	taken := false
	chain.estimate = func(ethereum.CallMsg) (uint64, error) {
		if taken {
			return 50_000, nil // the current activation's estimate
		}
		taken = true
		current.WithFence(store.acquire("acct"))
		if n, err := current.Pump(ctx); err != nil || n != 1 {
			t.Errorf("current Pump = %d, %v; want 1 submitted", n, err)
		}
		return 0, errors.New("execution reverted: ERC20: transfer amount exceeds balance")
	}
	if _, err := stale.Pump(ctx); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale Pump = %v, want ErrFenced", err)
	}
	a := store.txs["a"]
	if a.Status != StatusSubmitted || a.Nonce == nil || *a.Nonce != 0 || a.Error != nil || a.Ended != nil {
		t.Fatalf("a = %s nonce %v error %+v ended %v; want submitted with nonce 0 by the current activation", a.Status, a.Nonce, a.Error, a.Ended)
	}
	if got := stale.TakeFailed(); len(got) != 0 {
		t.Fatalf("stale activation reports failed %v", got)
	}
	if len(chain.sent) != 1 || chain.sent[0].Hash() != *a.Hash {
		t.Fatalf("%d broadcasts, want the current activation's one", len(chain.sent))
	}
}

// TestSenderFailsOnlyQueued: a transaction whose estimate reverts but that
// was cancelled meanwhile is skipped: it keeps its cancellation, and the
// Pump goes on without error.
func TestSenderFailsOnlyQueued(t *testing.T) {
	store := newMemStore()
	chain := &fakeChain{}
	s := newTestSender(t, chain, store, 4)
	s.WithFence(store.acquire("acct"))
	queue(t, s, "a")
	cancelled := &TxError{Code: TxCancelled, Message: "cancelled"}
	chain.estimate = func(ethereum.CallMsg) (uint64, error) {
		store.txs["a"].Status, store.txs["a"].Error = StatusFailed, cancelled // cancelled by the API meanwhile
		return 0, errors.New("execution reverted: no")
	}
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatalf("Pump = %v", err)
	}
	if a := store.txs["a"]; a.Status != StatusFailed || a.Error != cancelled {
		t.Fatalf("a = %s %+v; want the cancellation kept", a.Status, a.Error)
	}
	if got := s.TakeFailed(); len(got) != 0 {
		t.Fatalf("failed %v, want none (the sender failed nothing)", got)
	}
}

// TestSenderStaleFenceHoldsAndFailsNothingByCondition: the condition
// writes of a Pump (hold back a transaction whose dependency is not
// completed, fail one whose dependency does not exist) happen before the
// batch checks its fence: they are fenced themselves. A stale activation
// changes nothing and its Pump returns ErrFenced; the current one holds
// and fails as usual.
func TestSenderStaleFenceHoldsAndFailsNothingByCondition(t *testing.T) {
	tests := []struct {
		name      string
		dependsOn string
		want      TxStatus
	}{
		{"hold", "pending", StatusWaiting},
		{"fail", "missing", StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			chain := &fakeChain{}
			store := newMemStore()
			store.txs["pending"] = &Transaction{ID: "pending", Status: StatusWaiting}
			stale := newTestSender(t, chain, store, 4)
			conds := NewConditions(store, stale.clock, stale.log)
			stale.WithConditions(conds).WithFence(store.acquire("acct"))
			current := NewSender(stale.account, stale.net, store, stale.signer, stale.clock, stale.log).
				WithConditions(conds).WithFence(store.acquire("acct"))
			queue(t, stale, "b")
			store.txs["b"].DependsOn = []string{tt.dependsOn}

			if _, err := stale.Pump(ctx); !errors.Is(err, ErrFenced) {
				t.Fatalf("stale Pump = %v, want ErrFenced", err)
			}
			if b := store.txs["b"]; b.Status != StatusNew || b.Error != nil {
				t.Fatalf("b after the stale Pump = %s %+v, want new", b.Status, b.Error)
			}
			if got := stale.TakeFailed(); len(got) != 0 {
				t.Fatalf("stale activation reports failed %v", got)
			}

			if _, err := current.Pump(ctx); err != nil {
				t.Fatalf("current Pump = %v", err)
			}
			if b := store.txs["b"]; b.Status != tt.want || b.Nonce != nil {
				t.Fatalf("b after the current Pump = %s nonce %v, want %s", b.Status, b.Nonce, tt.want)
			}
			if len(chain.sent) != 0 {
				t.Fatalf("%d broadcasts, want none", len(chain.sent))
			}
		})
	}
}

// Equal calls in one pump are estimated once; each gets the answer, a
// revert included, and distinct calls keep theirs.
func TestSenderEstimatesEqualCallsOnce(t *testing.T) {
	var asked [][]byte
	fc := &fakeChain{estimate: func(msg ethereum.CallMsg) (uint64, error) {
		asked = append(asked, msg.Data)
		switch msg.Data[4] {
		case 0xee:
			return 0, errors.New("execution reverted: no")
		case 0x02:
			return 70_000, nil
		}
		return 50_000, nil
	}}
	s, store, bc := newBatchSender(t, fc, 8)
	ids := []string{"a", "b", "c", "d", "e", "f"}
	queue(t, s, ids...)
	data := map[string]byte{"a": 0x01, "b": 0x02, "c": 0x01, "d": 0xee, "e": 0x01, "f": 0xee}
	for id, marker := range data {
		store.txs[id].Data = []byte{0xa9, 0x05, 0x9c, 0xbb, marker}
	}
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 3 || bc.estimateBatches != 1 {
		t.Fatalf("%d estimates in %d batches for 3 distinct calls, want 3 in 1", len(asked), bc.estimateBatches)
	}
	for _, id := range []string{"d", "f"} {
		if tx := store.txs[id]; tx.Status != StatusFailed || tx.Error.Code != TxReverted || tx.Nonce != nil {
			t.Fatalf("%s: %s %+v nonce %v", id, tx.Status, tx.Error, tx.Nonce)
		}
	}
	margin := func(g uint64) uint64 { return g + g*s.net.GasMarginPercent/100 }
	for i, id := range []string{"a", "b", "c", "e"} {
		tx := store.txs[id]
		want := margin(50_000)
		if id == "b" {
			want = margin(70_000)
		}
		if tx.Status != StatusSubmitted || *tx.Nonce != uint64(i) || tx.GasLimit != want {
			t.Fatalf("%s: %s nonce %v gas %d, want nonce %d gas %d", id, tx.Status, tx.Nonce, tx.GasLimit, i, want)
		}
	}
}

func TestCallKey(t *testing.T) {
	to := common.Address{9}
	base := ethereum.CallMsg{From: common.Address{1}, To: &to, Value: big.NewInt(1), Data: []byte{1, 2}}
	other := []ethereum.CallMsg{
		{From: common.Address{2}, To: &to, Value: big.NewInt(1), Data: []byte{1, 2}},
		{From: common.Address{1}, Value: big.NewInt(1), Data: []byte{1, 2}},
		{From: common.Address{1}, To: &to, Value: big.NewInt(2), Data: []byte{1, 2}},
		{From: common.Address{1}, To: &to, Value: big.NewInt(1), Data: []byte{1, 2, 3}},
		{From: common.Address{1}, To: &to, Value: big.NewInt(1), Data: []byte{1, 2}, Gas: 5},
		{From: common.Address{1}, To: &to, Value: big.NewInt(1), Data: []byte{1, 2}, GasTipCap: big.NewInt(1)},
	}
	k := callKey(0, base)
	if k != callKey(5, base) {
		t.Fatalf("equal calls have different keys")
	}
	for i, m := range other {
		if callKey(0, m) == k {
			t.Fatalf("call %d has the key of a different call", i)
		}
	}
	blob := base
	blob.BlobHashes = []common.Hash{{1}}
	if callKey(0, blob) == callKey(1, blob) {
		t.Fatalf("calls with blobs share a key")
	}
}

// TestSenderIdle: an account is idle after a Pump that left nothing in
// flight and found the queue empty, and not while the window is full, a
// transaction is in flight or the queue was not read to its end.
func TestSenderIdle(t *testing.T) {
	chain := &fakeChain{nonce: 0}
	store := newMemStore()
	s := newTestSender(t, chain, store, 2)
	if s.Idle() {
		t.Fatal("idle before the first Pump")
	}
	queue(t, s, "a", "b", "c")
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.Idle() {
		t.Fatal("idle with a full window and c queued")
	}
	store.txs["a"].Status, store.txs["b"].Status = StatusCompleted, StatusCompleted
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.Idle() {
		t.Fatal("idle with c in flight")
	}
	store.txs["c"].Status = StatusCompleted
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !s.Idle() {
		t.Fatal("not idle with nothing in flight or queued")
	}
	// A transaction failed before it took a nonce leaves the account idle.
	chain.estimate = func(ethereum.CallMsg) (uint64, error) { return 0, errors.New("execution reverted") }
	queue(t, s, "d")
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	if store.txs["d"].Status != StatusFailed || !s.Idle() {
		t.Fatalf("d %s, idle %v: want failed and idle", store.txs["d"].Status, s.Idle())
	}
}

// countingChain counts the fee questions of a fakeChain.
type countingChain struct {
	*fakeChain
	heads, tips int
}

func (c *countingChain) HeaderByNumber(ctx context.Context, n *big.Int) (*types.Header, error) {
	c.heads++
	return c.fakeChain.HeaderByNumber(ctx, n)
}

func (c *countingChain) SuggestGasTipCap(ctx context.Context) (*big.Int, error) {
	c.tips++
	return c.fakeChain.SuggestGasTipCap(ctx)
}

// TestSenderFeeQuoteSharedByNetwork: with FeeQuoteTTL, the senders of a
// network share one quote until it expires; without, each pump asks.
func TestSenderFeeQuoteSharedByNetwork(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Hour} {
		chain := &countingChain{fakeChain: &fakeChain{}}
		store := newMemStore()
		s := newTestSender(t, chain.fakeChain, store, 10)
		s.net.Chain, s.net.FeeQuoteTTL = chain, ttl
		acct, err := NewLocalAccount(s.signer.(*keystore.KeySealer))
		if err != nil {
			t.Fatal(err)
		}
		acct.ID = "other"
		other := NewSender(acct, s.net, store, s.signer, s.clock, s.log)
		queue(t, s, "a")
		if _, err := s.Pump(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := store.InsertTransactions(context.Background(), []*Transaction{{ID: "b", AccountID: "other", Network: "dev", Status: StatusNew,
			ContractAddress: common.Address{1}, Data: []byte{0xa9, 0x05, 0x9c, 0xbb}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Pump(context.Background()); err != nil {
			t.Fatal(err)
		}
		if store.txs["a"].Status != StatusSubmitted || store.txs["b"].Status != StatusSubmitted {
			t.Fatalf("ttl %s: a %s, b %s", ttl, store.txs["a"].Status, store.txs["b"].Status)
		}
		want := 2
		if ttl > 0 {
			want = 1
		}
		if chain.tips != want {
			t.Fatalf("ttl %s: %d tip quotes for two pumps, want %d", ttl, chain.tips, want)
		}
	}
}
