package actors_test

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"

	"github.com/txengine/txengine/actors"
	"github.com/txengine/txengine/contracts"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm"
	"github.com/txengine/txengine/engine/evm/evmtest"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/persistence/sqlite"
)

// countingStore counts group commits and tracks how many transactions are
// in flight (submitted, not yet mined) at most.
type countingStore struct {
	*sqlite.Store
	inserts     atomic.Int64
	rows        atomic.Int64
	inflight    atomic.Int64
	maxInflight atomic.Int64
	// panics is how many of the next ReadyTransactions calls panic (a bug
	// in an actor, for the supervision test).
	panics atomic.Int64
	// insertHook, when set, runs each insert of new transactions: it calls
	// insert (the real one) or not, and returns what the commit queue sees
	// (faults injected around the commit).
	insertHook atomic.Pointer[func(insert func() error) error]
}

func (c *countingStore) ReadyTransactions(ctx context.Context, accountID, network string, limit int) ([]*engine.Transaction, error) {
	if c.panics.Add(-1) >= 0 {
		panic("injected failure")
	}
	return c.Store.ReadyTransactions(ctx, accountID, network, limit)
}

// ReadyTransactionsOf is what the submit stage reads; it panics as
// ReadyTransactions does.
func (c *countingStore) ReadyTransactionsOf(ctx context.Context, network string, limits map[string]int) (map[string][]*engine.Transaction, error) {
	if c.panics.Add(-1) >= 0 {
		panic("injected failure")
	}
	return c.Store.ReadyTransactionsOf(ctx, network, limits)
}

func (c *countingStore) InsertTransactions(ctx context.Context, txs []*engine.Transaction) error {
	insert := func() error {
		err := c.Store.InsertTransactions(ctx, txs)
		if err == nil {
			c.inserts.Add(1)
			c.rows.Add(int64(len(txs)))
		}
		return err
	}
	if hook := c.insertHook.Load(); hook != nil {
		return (*hook)(insert)
	}
	return insert()
}

// hookInserts makes hook run every insert of new transactions until the
// test ends.
func (c *countingStore) hookInserts(t *testing.T, hook func(insert func() error) error) {
	c.insertHook.Store(&hook)
	t.Cleanup(func() { c.insertHook.Store(nil) })
}

func (c *countingStore) MarkSubmittedMany(ctx context.Context, f engine.Fence, txs []*engine.Transaction) error {
	err := c.Store.MarkSubmittedMany(ctx, f, txs)
	if err == nil {
		c.submitted(len(txs))
	}
	return err
}

// MarkSubmittedGroups is what the submit stage writes.
func (c *countingStore) MarkSubmittedGroups(ctx context.Context, groups []engine.SubmitGroup) error {
	err := c.Store.MarkSubmittedGroups(ctx, groups)
	if err == nil {
		for _, g := range groups {
			c.submitted(len(g.Txs))
		}
	}
	return err
}

// submitted counts n more transactions in flight.
func (c *countingStore) submitted(n int) {
	cur := c.inflight.Add(int64(n))
	for {
		m := c.maxInflight.Load()
		if cur <= m || c.maxInflight.CompareAndSwap(m, cur) {
			break
		}
	}
}

func (c *countingStore) MarkMined(ctx context.Context, outcomes []engine.Mined) error {
	err := c.Store.MarkMined(ctx, outcomes)
	if err == nil {
		c.inflight.Add(-int64(len(outcomes)))
	}
	return err
}

// MarkMinedFenced is what the watcher calls (through its fenced store).
func (c *countingStore) MarkMinedFenced(ctx context.Context, f engine.NetworkFence, outcomes []engine.Mined) ([]string, error) {
	skipped, err := c.Store.MarkMinedFenced(ctx, f, outcomes)
	if err == nil {
		c.inflight.Add(-int64(len(outcomes) - len(skipped)))
	}
	return skipped, err
}

// fixture is a simulated chain, a store, a funded account holding a token,
// and the actor system over them.
type fixture struct {
	t       *testing.T
	sim     *evmtest.Sim
	faucet  *engine.Faucet
	store   *countingStore
	net     *engine.Network
	sealer  *keystore.KeySealer
	user    *engine.User
	account *engine.Account
	token   *engine.Contract
	tokenA  abi.ABI
	sys     *actors.System
	cfg     actors.Config
}

// newFixture runs the fixture on the simulated chain, mining every
// blockInterval.
func newFixture(t *testing.T, window int, idle time.Duration) *fixture {
	t.Helper()
	faucetKey, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	sim := evmtest.Start(t, blockInterval, crypto.PubkeyToAddress(faucetKey.PublicKey))
	client, err := evm.Dial(context.Background(), sim.IPC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	f := setupFixture(t, client, faucetKey, window, idle, 10*time.Millisecond)
	f.sim = sim
	return f
}

// newGethFixture runs the fixture on geth --dev (one block per second).
func newGethFixture(t *testing.T, window int, idle time.Duration) *fixture {
	t.Helper()
	node := gethtest.Start(t)
	client, err := evm.Dial(context.Background(), node.HTTPURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	// The poll interval is set before the watcher starts: it reads it.
	return setupFixture(t, client, node.FaucetKey, window, idle, 200*time.Millisecond)
}

// backends runs test on the simulated chain and on geth.
func backends(t *testing.T, test func(t *testing.T, newFixture func(*testing.T, int, time.Duration) *fixture)) {
	t.Run("simulated", func(t *testing.T) { test(t, newFixture) })
	t.Run("geth", func(t *testing.T) {
		if testing.Short() {
			t.Skip("geth: not in -short")
		}
		test(t, newGethFixture)
	})
}

func setupFixture(t *testing.T, client *evm.Client, faucetKey *ecdsa.PrivateKey, window int, idle, poll time.Duration) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sealer, err := keystore.NewKeySealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, store: &countingStore{Store: st}, sealer: sealer}
	f.net = &engine.Network{
		Name: "dev", ChainID: big.NewInt(1337), InFlight: window, MaxInFlight: window, GasMarginPercent: 20,
		PollInterval: poll, Chain: client,
	}
	now := engine.SystemClock{}.Now()
	f.user = &engine.User{ID: uuid.NewString(), Created: now}
	f.account = f.newAccount(nil)
	if err := st.CreateUser(ctx, f.user, nil, f.account); err != nil {
		t.Fatal(err)
	}
	faucet := engine.NewFaucet(f.net, faucetKey, evmtest.Ether(10))
	f.faucet = faucet
	hashes, err := faucet.Fund(ctx, []common.Address{f.account.Address})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hashes {
		if _, err := evm.WaitMined(ctx, client, h); err != nil {
			t.Fatal(err)
		}
	}
	art := contracts.ERC20()
	data, err := art.DeployData("T", "T", evmtest.Ether(1_000_000), f.account.Address)
	if err != nil {
		t.Fatal(err)
	}
	addr, _, err := evm.Deploy(ctx, client, faucetKey, data)
	if err != nil {
		t.Fatal(err)
	}
	f.token = &engine.Contract{ID: uuid.NewString(), Owner: f.user.ID, Name: "T", Network: "dev", Address: addr, ABI: art.ABI, BWType: engine.TypeERC20, Created: now}
	if err := st.CreateContract(ctx, f.token); err != nil {
		t.Fatal(err)
	}
	if f.tokenA, err = art.ParsedABI(); err != nil {
		t.Fatal(err)
	}
	f.cfg = actors.Config{
		Store: f.store, Signer: sealer, Clock: engine.SystemClock{},
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Networks: map[string]*engine.Network{"dev": f.net}, IdleAccount: idle,
	}
	f.start()
	return f
}

func (f *fixture) start() {
	sys, err := actors.Start(context.Background(), f.cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.sys = sys
	f.t.Cleanup(sys.Close)
}

func (f *fixture) newAccount(owner *engine.User) *engine.Account {
	a, err := engine.NewLocalAccount(f.sealer)
	if err != nil {
		f.t.Fatal(err)
	}
	a.ID, a.Default, a.Created = uuid.NewString(), true, engine.SystemClock{}.Now()
	if owner != nil {
		a.Owner = owner.ID
	}
	return a
}

// transfer builds a token transfer of value to `to` from the fixture's account.
func (f *fixture) transfer(to common.Address, value int64) *engine.Transaction {
	data, err := f.tokenA.Pack("transfer", to, big.NewInt(value))
	if err != nil {
		f.t.Fatal(err)
	}
	return &engine.Transaction{
		ID: uuid.NewString(), Owner: f.user.ID, AccountID: f.account.ID, Network: "dev", From: f.account.Address,
		ContractID: f.token.ID, ContractAddress: f.token.Address, Method: "transfer",
		Parameters: []any{to.Hex(), fmt.Sprint(value)}, Data: data, Status: engine.StatusNew, Created: engine.SystemClock{}.Now(),
	}
}

// waitAll waits until every id is terminal and returns the transactions.
func (f *fixture) waitAll(ids []string, timeout time.Duration) []*engine.Transaction {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var out []*engine.Transaction
		pending := 0
		for _, id := range ids {
			tx, err := f.store.TransactionByID(context.Background(), id)
			if err != nil {
				f.t.Fatal(err)
			}
			if !tx.Status.Terminal() {
				pending++
			}
			out = append(out, tx)
		}
		if pending == 0 {
			return out
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%d of %d transactions still pending after %s", pending, len(ids), timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *fixture) balanceOf(holder common.Address) *big.Int {
	f.t.Helper()
	b, err := engine.BalanceOf(context.Background(), f.net.Chain, f.token.Address, holder)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func randomAddress(t *testing.T) common.Address {
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return crypto.PubkeyToAddress(k.PublicKey)
}

// TestBurstGroupCommitWindowAndNonces fires a burst from one account at
// once: every transaction is accepted durably, batched into fewer database
// transactions than requests, never more than W in flight, all complete, and
// the nonces are exactly 0..n-1.
func TestBurstGroupCommitWindowAndNonces(t *testing.T) {
	backends(t, testBurst)
}

func testBurst(t *testing.T, newFixture func(*testing.T, int, time.Duration) *fixture) {
	const n, window = 120, 8
	f := newFixture(t, window, time.Minute)
	recipients := make([]common.Address, 4)
	for i := range recipients {
		recipients[i] = randomAddress(t)
	}
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		tx := f.transfer(recipients[i%len(recipients)], int64(i+1))
		ids[i] = tx.ID
		wg.Go(func() {
			got, err := f.sys.Submit(context.Background(), tx)
			if err == nil && (got.ID != tx.ID || got.Status != engine.StatusNew) {
				err = fmt.Errorf("accepted %s as %s", got.ID, got.Status)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if rows, batches := f.store.rows.Load(), f.store.inserts.Load(); rows != n || batches >= n {
		t.Fatalf("%d rows in %d group commits; want %d rows in fewer commits", rows, batches, n)
	} else {
		t.Logf("%d rows in %d group commits", rows, batches)
	}
	txs := f.waitAll(ids, 60*time.Second)
	nonces := make([]int, 0, n)
	for _, tx := range txs {
		if tx.Status != engine.StatusCompleted {
			t.Fatalf("%s ended %s: %+v", tx.ID, tx.Status, tx.Error)
		}
		nonces = append(nonces, int(*tx.Nonce))
	}
	sort.Ints(nonces)
	for i, nonce := range nonces {
		if nonce != i {
			t.Fatalf("nonces not contiguous from 0: %v", nonces)
		}
	}
	if max := f.store.maxInflight.Load(); max > window || max == 0 {
		t.Fatalf("%d transactions were in flight at once; window is %d", max, window)
	}
	var total int64
	for i := 0; i < n; i++ {
		total += int64(i + 1)
	}
	sum := new(big.Int)
	for _, r := range recipients {
		sum.Add(sum, f.balanceOf(r))
	}
	if sum.Int64() != total {
		t.Fatalf("recipients hold %s, want %d", sum, total)
	}
}

// TestIdleActorPassivatesAndReturns checks that an account actor stops when
// idle and that the next request brings it back.
func TestIdleActorPassivatesAndReturns(t *testing.T) {
	f := newFixture(t, 4, time.Second)
	to := randomAddress(t)
	first := f.transfer(to, 5)
	if _, err := f.sys.Submit(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	f.waitAll([]string{first.ID}, 30*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for f.sys.LiveAccounts() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d account actors still alive after idling", f.sys.LiveAccounts())
		}
		time.Sleep(50 * time.Millisecond)
	}
	second := f.transfer(to, 7)
	if _, err := f.sys.Submit(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	txs := f.waitAll([]string{second.ID}, 30*time.Second)
	if txs[0].Status != engine.StatusCompleted || *txs[0].Nonce != 1 {
		t.Fatalf("after passivation: %s nonce %v", txs[0].Status, txs[0].Nonce)
	}
	if got := f.balanceOf(to); got.Int64() != 12 {
		t.Fatalf("balance %s, want 12", got)
	}
}

// TestRecoveryResumesQueuedWork stores transactions while no actor runs (as
// after a crash between acceptance and submission) and checks that a new
// actor system finds and completes them.
func TestRecoveryResumesQueuedWork(t *testing.T) {
	f := newFixture(t, 4, time.Minute)
	f.sys.Close()
	to := randomAddress(t)
	var txs []*engine.Transaction
	for i := 0; i < 5; i++ {
		txs = append(txs, f.transfer(to, 1))
	}
	if err := f.store.InsertTransactions(context.Background(), txs); err != nil {
		t.Fatal(err)
	}
	f.start()
	ids := make([]string, len(txs))
	for i, tx := range txs {
		ids[i] = tx.ID
	}
	for _, tx := range f.waitAll(ids, 30*time.Second) {
		if tx.Status != engine.StatusCompleted {
			t.Fatalf("%s ended %s", tx.ID, tx.Status)
		}
	}
	if got := f.balanceOf(to); got.Int64() != 5 {
		t.Fatalf("balance %s, want 5", got)
	}
}

// waitStatus waits until transaction id has status want and returns it.
func (f *fixture) waitStatus(id string, want engine.TxStatus, cond func(*engine.Transaction) bool) *engine.Transaction {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tx, err := f.store.TransactionByID(context.Background(), id)
		if err != nil {
			f.t.Fatal(err)
		}
		if tx.Status == want && (cond == nil || cond(tx)) {
			return tx
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("transaction %s is %s, want %s", id, tx.Status, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitInPool waits until the chain's pool holds the transaction hash.
func (f *fixture) waitInPool(hash common.Hash) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, pending, err := f.sim.Backend.Client().TransactionByHash(context.Background(), hash); err == nil && pending {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("transaction %s never reached the node's pool", hash)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReorgPutsTransactionBackAndCompletesItOnce mines a transfer, forks
// the chain below its block, and checks that the transaction goes back to
// submitted, is mined again on the new chain, completes with the new
// block, and moves the tokens exactly once.
func TestReorgPutsTransactionBackAndCompletesItOnce(t *testing.T) {
	f := newFixture(t, 4, time.Minute)
	ctx := context.Background()
	f.sim.Pause(true)
	to := randomAddress(t)
	tx := f.transfer(to, 42)
	if _, err := f.sys.Submit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	sent := f.waitStatus(tx.ID, engine.StatusSubmitted, nil)
	// Submitted is stored before the broadcast: the block below must not
	// be sealed before the node holds the transaction.
	f.waitInPool(*sent.Hash)
	parent, err := f.net.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.sim.Backend.Commit()
	first := f.waitStatus(tx.ID, engine.StatusCompleted, nil)
	if *first.BlockNumber != parent.Number.Uint64()+1 {
		t.Fatalf("mined in %d, want %d", *first.BlockNumber, parent.Number.Uint64()+1)
	}
	if err := f.sim.Backend.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	f.sim.Backend.Commit()
	f.sim.Backend.Commit()
	f.sim.Pause(false)
	again := f.waitStatus(tx.ID, engine.StatusCompleted, func(t *engine.Transaction) bool {
		return *t.BlockHash != *first.BlockHash
	})
	if *again.Nonce != *first.Nonce || *again.Hash != *first.Hash {
		t.Fatalf("re-mined with nonce %d hash %s; want the same signed transaction (nonce %d hash %s)", *again.Nonce, again.Hash, *first.Nonce, first.Hash)
	}
	onChain, err := f.net.Chain.TransactionReceipt(ctx, *again.Hash)
	if err != nil || onChain.BlockHash != *again.BlockHash {
		t.Fatalf("receipt on the new chain: %v, %v; store says block %s", onChain, err, again.BlockHash)
	}
	if got := f.balanceOf(to); got.Int64() != 42 {
		t.Fatalf("recipient holds %s, want 42 (exactly once)", got)
	}
}

// TestStuckTransactionIsReplaced: a transaction that blocks keep leaving
// out (the node forgets it) is sent again after RebroadcastBlocks blocks
// and signed again with the same nonce and higher fees after ReplaceBlocks
// blocks; the chain mines the replacement and the transaction completes
// once, with the new hash.
func TestStuckTransactionIsReplaced(t *testing.T) {
	f := newFixture(t, 4, time.Minute)
	f.sys.Close()
	f.net.RebroadcastBlocks, f.net.ReplaceBlocks = 2, 3
	f.cfg.CheckInFlight = 50 * time.Millisecond
	f.start()
	ctx := context.Background()
	f.sim.Pause(true) // blocks come empty: the node forgets the transaction
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	stopMining := func() {
		stopOnce.Do(func() { close(stop) })
		wg.Wait()
	}
	// A failed wait ends the test with Goexit: the miner must stop before
	// the fixture's cleanups close the simulated node under it.
	t.Cleanup(stopMining)
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				f.sim.MineEmpty()
			}
		}
	})
	to := randomAddress(t)
	tx := f.transfer(to, 9)
	if _, err := f.sys.Submit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	first := f.waitStatus(tx.ID, engine.StatusSubmitted, nil)
	replaced := f.waitStatus(tx.ID, engine.StatusSubmitted, func(t *engine.Transaction) bool {
		return *t.Hash != *first.Hash
	})
	stopMining()
	if *replaced.Nonce != *first.Nonce || replaced.Replaced == nil {
		t.Fatalf("replacement: nonce %d (was %d), replaced %v", *replaced.Nonce, *first.Nonce, replaced.Replaced)
	}
	f.sim.Pause(false)
	done := f.waitAll([]string{tx.ID}, 30*time.Second)[0]
	if done.Status != engine.StatusCompleted || *done.Hash == *first.Hash {
		t.Fatalf("ended %s with hash %s (first %s)", done.Status, done.Hash, first.Hash)
	}
	r, err := f.net.Chain.TransactionReceipt(ctx, *done.Hash)
	if err != nil || r.BlockHash != *done.BlockHash {
		t.Fatalf("receipt of the stored hash: %v %v", r, err)
	}
	if _, err := f.net.Chain.TransactionReceipt(ctx, *first.Hash); err == nil {
		t.Fatal("the first version was mined too")
	}
	if got := f.balanceOf(to); got.Int64() != 9 {
		t.Fatalf("recipient holds %s, want 9 (once)", got)
	}
}

// TestPanickingActorRestartsAndResumes: an account actor that panics while
// submitting is restarted by its supervisor, rebuilds its state from the
// database and submits what was accepted.
func TestPanickingActorRestartsAndResumes(t *testing.T) {
	f := newFixture(t, 4, time.Minute)
	f.store.panics.Store(2)
	to := randomAddress(t)
	txs := []*engine.Transaction{f.transfer(to, 1), f.transfer(to, 2)}
	for _, tx := range txs {
		if _, err := f.sys.Submit(context.Background(), tx); err != nil {
			t.Fatal(err)
		}
	}
	done := f.waitAll([]string{txs[0].ID, txs[1].ID}, 30*time.Second)
	for i, tx := range done {
		if tx.Status != engine.StatusCompleted || *tx.Nonce != uint64(i) {
			t.Fatalf("%d: %s nonce %v", i, tx.Status, tx.Nonce)
		}
	}
	if f.store.panics.Load() >= 0 {
		t.Fatal("the injected panics did not happen")
	}
	if got := f.balanceOf(to); got.Int64() != 3 {
		t.Fatalf("recipient holds %s, want 3", got)
	}
}

// TestCompletedOnlyAtConfirmationDepth: with 2 confirmations a mined
// transaction stays submitted until two blocks are on top of its block; a
// reorg before that leaves it submitted and it completes on the new chain.
func TestCompletedOnlyAtConfirmationDepth(t *testing.T) {
	f := newFixture(t, 4, time.Minute)
	f.sys.Close()
	f.net.Confirmations = 2
	f.start()
	ctx := context.Background()
	f.sim.Pause(true)
	to := randomAddress(t)
	tx := f.transfer(to, 5)
	if _, err := f.sys.Submit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	f.waitStatus(tx.ID, engine.StatusSubmitted, nil)
	parent, err := f.net.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.sim.Backend.Commit() // mined, 0 blocks on top
	f.sim.Backend.Commit() // 1 block on top
	time.Sleep(200 * time.Millisecond)
	if got := f.get(tx.ID); got.Status != engine.StatusSubmitted {
		t.Fatalf("with 1 of 2 confirmations: %s", got.Status)
	}
	// Reorg below the transaction's block before it reached the depth.
	if err := f.sim.Backend.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		f.sim.Backend.Commit()
	}
	time.Sleep(200 * time.Millisecond)
	if got := f.get(tx.ID); got.Status == engine.StatusCompleted {
		if r, err := f.net.Chain.TransactionReceipt(ctx, *got.Hash); err != nil || r.BlockHash != *got.BlockHash {
			t.Fatalf("completed in block %s, which is not on the chain (receipt %v, %v)", got.BlockHash, r, err)
		}
	}
	f.sim.Pause(false)
	done := f.waitAll([]string{tx.ID}, 30*time.Second)[0]
	if done.Status != engine.StatusCompleted {
		t.Fatalf("ended %s", done.Status)
	}
	head, err := f.net.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if head.Number.Uint64() < *done.BlockNumber+2 {
		t.Fatalf("completed in block %d with head %d: fewer than 2 confirmations", *done.BlockNumber, head.Number)
	}
	r, err := f.net.Chain.TransactionReceipt(ctx, *done.Hash)
	if err != nil || r.BlockHash != *done.BlockHash {
		t.Fatalf("receipt %v %v; store says block %s", r, err, done.BlockHash)
	}
	if got := f.balanceOf(to); got.Int64() != 5 {
		t.Fatalf("recipient holds %s, want 5", got)
	}
}

// TestConflictFailsOnlyItsRequest: a group commit in which one row
// conflicts (its Idempotency-Key was taken meanwhile, e.g. by another node)
// stores the other rows; only the conflicting request fails.
func TestConflictFailsOnlyItsRequest(t *testing.T) {
	f := newFixture(t, 16, time.Minute)
	ctx := context.Background()
	now := engine.SystemClock{}.Now()
	taken := &engine.IdempotencyRecord{UserID: f.user.ID, Key: "k1", RequestHash: "h", Status: 202, Body: []byte("{}"), Created: now}
	first := f.transfer(common.HexToAddress("0x1"), 1)
	first.Idempotency = taken
	if _, err := f.sys.Submit(ctx, first); err != nil {
		t.Fatal(err)
	}
	// Hold the actor in a group commit's worth of Submits: 30 at once, one
	// of them reusing the key.
	const n = 30
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		tx := f.transfer(common.HexToAddress("0x2"), 1)
		if i == n/2 {
			dup := *taken
			tx.Idempotency = &dup
		}
		wg.Go(func() { _, errs[i] = f.sys.Submit(ctx, tx) })
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case i == n/2 && !errors.Is(err, engine.ErrConflict):
			t.Errorf("the request reusing the key: %v, want a conflict", err)
		case i != n/2 && err != nil:
			t.Errorf("request %d failed with the conflicting one: %v", i, err)
		}
	}
	if batches := f.store.inserts.Load(); batches >= n+1 {
		t.Logf("note: %d group commits for %d requests: no shared commit this run", batches, n+1)
	}
}

// TestLateSubmitIsDroppedBeforeItsCommit: a Submit whose deadline passes
// while it waits behind a slow commit answers 503 unavailable, and its
// transaction is never stored, even though the account actor gets to it
// after the answer.
func TestLateSubmitIsDroppedBeforeItsCommit(t *testing.T) {
	f := newFixture(t, 16, time.Minute)
	gate, entered := make(chan struct{}), make(chan struct{}, 10)
	f.store.hookInserts(t, func(insert func() error) error {
		entered <- struct{}{}
		<-gate
		return insert()
	})
	slow := f.transfer(common.HexToAddress("0x1"), 1)
	slowErr := make(chan error, 1)
	go func() { _, err := f.sys.Submit(context.Background(), slow); slowErr <- err }()
	<-entered // the commit of slow holds the writer and the account actor

	late := f.transfer(common.HexToAddress("0x2"), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := f.sys.Submit(ctx, late)
	if engine.ErrorCode(err) != engine.CodeUnavailable {
		t.Fatalf("late Submit: %v, want unavailable", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("late Submit answered after %v, want at its deadline", d)
	}
	close(gate)
	if err := <-slowErr; err != nil {
		t.Fatalf("slow Submit: %v", err)
	}
	// The actor handles its mailbox in order: once a later Submit is
	// answered, the late one has been through the commit queue.
	after := f.transfer(common.HexToAddress("0x3"), 1)
	if _, err := f.sys.Submit(context.Background(), after); err != nil {
		t.Fatalf("later Submit: %v", err)
	}
	if _, err := f.store.TransactionByID(context.Background(), late.ID); !engine.IsNotFound(err) {
		t.Fatalf("the late transaction after its 503: %v, want not stored", err)
	}
	for _, id := range []string{slow.ID, after.ID} {
		if _, err := f.store.TransactionByID(context.Background(), id); err != nil {
			t.Fatalf("accepted transaction %s: %v", id, err)
		}
	}
}

// TestSubmitInCommitWaitsPastItsDeadline: a Submit whose deadline passes
// while a commit holds its transaction answers with the commit's outcome
// (stored), late rather than wrong.
func TestSubmitInCommitWaitsPastItsDeadline(t *testing.T) {
	f := newFixture(t, 16, time.Minute)
	gate, entered := make(chan struct{}), make(chan struct{}, 10)
	f.store.hookInserts(t, func(insert func() error) error {
		entered <- struct{}{}
		<-gate
		return insert()
	})
	tx := f.transfer(common.HexToAddress("0x1"), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	type outcome struct {
		tx  *engine.Transaction
		err error
	}
	res := make(chan outcome, 1)
	go func() { got, err := f.sys.Submit(ctx, tx); res <- outcome{got, err} }()
	<-entered // taken into the commit
	time.Sleep(500 * time.Millisecond)
	select {
	case o := <-res:
		t.Fatalf("Submit answered while its commit was open: %v", o.err)
	default:
	}
	close(gate)
	o := <-res
	if o.err != nil || o.tx == nil || o.tx.ID != tx.ID {
		t.Fatalf("Submit: %v, %v; want the stored transaction", o.tx, o.err)
	}
	if _, err := f.store.TransactionByID(context.Background(), tx.ID); err != nil {
		t.Fatalf("the accepted transaction: %v", err)
	}
}

// TestCommitWithUnknownOutcome: an insert that committed and then failed
// (the connection lost at COMMIT) is answered as stored, exactly once,
// including the Idempotency-Key record written with it; one that failed
// without committing is an error, and nothing is stored.
func TestCommitWithUnknownOutcome(t *testing.T) {
	f := newFixture(t, 16, time.Minute)
	ctx := context.Background()
	var before atomic.Bool // the connection is lost before COMMIT, not after
	f.store.hookInserts(t, func(insert func() error) error {
		if before.Load() {
			return errors.New("connection reset before COMMIT")
		}
		if err := insert(); err != nil {
			return err
		}
		return errors.New("connection lost at COMMIT")
	})
	tx := f.transfer(common.HexToAddress("0x1"), 1)
	tx.Idempotency = &engine.IdempotencyRecord{UserID: f.user.ID, Key: "k-unknown", RequestHash: "h", Status: 202, Body: []byte("{}"), Created: engine.SystemClock{}.Now()}
	if _, err := f.sys.Submit(ctx, tx); err != nil {
		t.Fatalf("committed, then the connection was lost: %v, want accepted", err)
	}
	if _, err := f.store.TransactionByID(ctx, tx.ID); err != nil {
		t.Fatalf("the accepted transaction: %v", err)
	}
	if rec, err := f.store.IdempotencyRecord(ctx, f.user.ID, "k-unknown"); err != nil || rec.RequestHash != "h" {
		t.Fatalf("its idempotency record: %v, %v", rec, err)
	}
	if n := f.store.inserts.Load(); n != 1 {
		t.Fatalf("%d inserts committed, want 1", n)
	}

	before.Store(true)
	gone := f.transfer(common.HexToAddress("0x2"), 1)
	if _, err := f.sys.Submit(ctx, gone); err == nil {
		t.Fatal("a commit that did not happen was accepted")
	}
	if _, err := f.store.TransactionByID(ctx, gone.ID); !engine.IsNotFound(err) {
		t.Fatalf("the refused transaction: %v, want not stored", err)
	}
}
