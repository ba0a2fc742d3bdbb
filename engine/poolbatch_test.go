package engine

import (
	"context"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
)

// allowanceNode is a poolNode that answers ERC-20 allowance calls.
type allowanceNode struct {
	*poolNode
	mu        sync.Mutex
	allowance *big.Int
	calls     int
}

func (n *allowanceNode) CallContract(_ context.Context, msg ethereum.CallMsg, _ *big.Int) ([]byte, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls++
	return erc20Approve.Methods["allowance"].Outputs.Pack(new(big.Int).Set(n.allowance))
}

type batchFixture struct {
	*keeperFixture
	node  *allowanceNode
	nonce uint64
}

// newBatchFixture: a pool of five members with work queued, none holding
// gas or the token; the treasury holds plenty of both, and its disperser
// has no allowance.
func newBatchFixture(t *testing.T) *batchFixture {
	pf := newPoolFixture(t, 5)
	f := &batchFixture{keeperFixture: &keeperFixture{poolFixture: pf, net: pf.b.cfg.Networks["dev"]}}
	f.node = &allowanceNode{poolNode: pf.node, allowance: new(big.Int)}
	f.net.Chain = f.node
	treasury := &Account{ID: "treasury", Address: common.HexToAddress("0x00000000000000000000000000000000000000ee")}
	f.pool.TreasuryID, f.pool.Owner = treasury.ID, "owner"
	f.poolFixture.node.eth[treasury.Address] = big.NewInt(1e18)
	f.poolFixture.node.tokens[poolToken][treasury.Address] = big.NewInt(1e9)
	f.store = &keeperStore{pool: f.pool, treasury: treasury, pending: map[string]string{}}
	for i, m := range f.pool.Members {
		f.poolFixture.node.eth[m.Address] = new(big.Int)
		f.store.loads = append(f.store.loads, PoolMemberLoad{AccountID: m.AccountID, Queued: 10 - i,
			Reserved: map[string]*big.Int{poolToken.Hex(): big.NewInt(100)}})
	}
	f.submit = &keeperSubmit{store: f.store}
	return f
}

// look runs one look of k and returns the transactions it submitted.
func (f *batchFixture) look(k *PoolKeeper) []*Transaction {
	before := len(f.submit.txs)
	k.Add(f.pool.ID)
	k.Tick(context.Background())
	return f.submit.txs[before:]
}

// end ends every submitted transaction with status (nonces in order) and
// clears the pending keys; the members' balances stay as they are (a
// burst still arriving needs more).
func (f *batchFixture) end(status TxStatus) {
	f.store.mu.Lock()
	defer f.store.mu.Unlock()
	for _, tx := range f.store.txs {
		if tx.Nonce == nil {
			n := f.nonce
			f.nonce++
			tx.Nonce, tx.Status = &n, status
		}
	}
	clear(f.store.pending)
}

// keys returns the top-up part of txs' keys.
func keys(txs []*Transaction) []string {
	out := make([]string, len(txs))
	for i, tx := range txs {
		out[i] = strings.TrimPrefix(tx.OrderingKey, TopUpKeyPrefix)
	}
	return out
}

// TestPoolKeeperBatchesOnceTheDisperserIsReady: five members short of gas
// and the token get nothing while the treasury's disperser is deployed and
// approved (their top-ups are held for the batches, batchSetupWait at
// most): the deployment goes alone; once it has a nonce (its address is
// known) the token's approval goes, once; once it is mined and approved,
// gas and token go in one batch each, the gas batch first. Nothing is sent
// while a batch of the asset is pending, from this keeper or a new one (a
// restart), which finds the disperser again by its deployment's key and
// deploys no other.
func TestPoolKeeperBatchesOnceTheDisperserIsReady(t *testing.T) {
	f := newBatchFixture(t)
	k := f.keeper()
	tok := poolToken.Hex()
	txs := f.look(k)
	if len(txs) != 1 || keys(txs)[0] != "disperser" || !IsCreation(txs[0]) || txs[0].AccountID != "treasury" {
		t.Fatalf("first look sent %v, want the disperser's deployment alone (the top-ups wait for their batches)", keys(txs))
	}
	deployment := txs[0]
	if got := f.look(k); len(got) != 0 {
		t.Fatalf("with the deployment pending the keeper sent %v", keys(got))
	}
	// The deployment is signed (nonce 0), not mined.
	f.end(StatusCompleted)
	f.store.mu.Lock()
	deployment.Status = StatusSubmitted
	f.store.pending[deployment.OrderingKey] = "treasury"
	f.store.mu.Unlock()
	disperser := crypto.CreateAddress(f.store.treasury.Address, 0)
	txs = f.look(k)
	if len(txs) != 1 || keys(txs)[0] != "approve:"+tok {
		t.Fatalf("with the deployment signed the keeper sent %v, want the approval alone (no batch before it is mined, no top-up one by one)", keys(txs))
	}
	if app := txs[0]; app.ContractAddress != poolToken || app.Method != "approve" || app.Parameters[0] != disperser.Hex() || app.Parameters[1] != math.MaxBig256.String() {
		t.Fatalf("approval %+v, want approve(disperser %s, max) on the token", app, disperser.Hex())
	}
	// The approval pending, the allowance still 0: no second approval.
	f.end(StatusCompleted)
	f.store.mu.Lock()
	deployment.Status = StatusSubmitted
	f.store.pending[deployment.OrderingKey] = "treasury"
	f.store.pending[approveKeyPrefix+tok] = "treasury"
	f.store.mu.Unlock()
	if txs = f.look(k); len(txs) != 0 {
		t.Fatalf("with the approval pending the keeper sent %v, want nothing (the top-ups wait for the batches)", keys(txs))
	}

	// Deployed and approved: one batch per asset, gas first.
	f.end(StatusCompleted)
	deployment.Status = StatusCompleted
	f.node.allowance = math.MaxBig256
	txs = f.look(k)
	if strings.Join(keys(txs), " ") != "batch:ETH batch:"+tok {
		t.Fatalf("with the disperser deployed and approved the keeper sent %v, want the gas batch then the token batch", keys(txs))
	}
	gas := txs[0]
	if gas.ContractAddress != disperser || gas.Method != "disperseEther" || gas.PoolID != f.pool.ID {
		t.Fatalf("gas batch %+v, want disperseEther on the disperser %s", gas, disperser.Hex())
	}
	recipients := gas.Parameters[0].([]any)
	sum := new(big.Int)
	for _, v := range gas.Parameters[1].([]any) {
		n, _ := new(big.Int).SetString(v.(string), 10)
		sum.Add(sum, n)
	}
	if len(recipients) != 5 || recipients[0] != f.pool.Members[0].Address.Hex() || gas.Value.Cmp(sum) != 0 || sum.Sign() <= 0 {
		t.Fatalf("gas batch pays %v %v with value %s, want the five members (busiest first), value their sum", recipients, gas.Parameters[1], gas.Value)
	}
	if tb := txs[1]; tb.ContractAddress != disperser || tb.Method != "disperseToken" || tb.Parameters[0] != tok || len(tb.Parameters[1].([]any)) != 5 {
		t.Fatalf("token batch %+v, want disperseToken(token, the five members, …)", tb)
	}
	// Pending batches: nothing, from this keeper or a restarted one.
	if got := append(f.look(k), f.look(f.keeper())...); len(got) != 0 {
		t.Fatalf("with the batches pending the keepers sent %v", keys(got))
	}
	f.end(StatusCompleted)
	if txs = f.look(f.keeper()); strings.Join(keys(txs), " ") != "batch:ETH batch:"+tok {
		t.Fatalf("a restarted keeper sent %v, want the two batches (the disperser found again)", keys(txs))
	}
	for _, tx := range f.store.txs {
		if IsCreation(tx) && tx != deployment {
			t.Fatalf("the disperser was deployed twice")
		}
	}
}

// TestPoolKeeperHoldsTopUpsForTheSetupAWhile: top-ups held for a batch
// whose disperser is still being deployed go one by one once
// batchSetupWait has passed (a deployment stuck or slow).
func TestPoolKeeperHoldsTopUpsForTheSetupAWhile(t *testing.T) {
	f := newBatchFixture(t)
	clock := &fixedClock{t: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	k := NewPoolKeeper(PoolKeeperConfig{Network: f.net, Store: f.store, Submit: f.submit, Clock: clock})
	if txs := f.look(k); len(txs) != 1 || keys(txs)[0] != "disperser" {
		t.Fatalf("first look sent %v, want the deployment alone", keys(txs))
	}
	clock.t = clock.t.Add(batchSetupWait - time.Second)
	if txs := f.look(k); len(txs) != 0 {
		t.Fatalf("within batchSetupWait the keeper sent %v, want nothing", keys(txs))
	}
	clock.t = clock.t.Add(time.Second)
	txs := f.look(k)
	if len(txs) != 10 {
		t.Fatalf("after batchSetupWait the keeper sent %v, want 10 top-ups one by one (5 members' gas and token)", keys(txs))
	}
	for _, tx := range txs {
		if strings.HasPrefix(tx.OrderingKey, batchKeyPrefix) || IsCreation(tx) {
			t.Fatalf("after batchSetupWait the keeper sent %s, want top-ups one by one", tx.OrderingKey)
		}
	}
}

// TestBatchGasHeadroom: a token batch is given newHolderGas per member
// beyond its estimate (a member whose balance is zero when it is mined
// costs that much more than estimated with a balance); a gas batch and a
// single top-up get nothing more.
func TestBatchGasHeadroom(t *testing.T) {
	f := newBatchFixture(t)
	k := f.keeper()
	treasury := f.store.treasury
	var ts []topUp
	for _, m := range f.pool.Members {
		ts = append(ts, topUp{member: m, asset: poolToken.Hex(), amount: big.NewInt(7)})
	}
	tok, err := k.batchTx(f.pool, treasury, common.Address{9}, poolToken.Hex(), ts)
	if err != nil {
		t.Fatal(err)
	}
	if got := batchGasHeadroom(tok); got != 5*newHolderGas {
		t.Fatalf("token batch of 5: headroom %d, want %d", got, 5*newHolderGas)
	}
	for i := range ts {
		ts[i].asset = AssetETH
	}
	eth, err := k.batchTx(f.pool, treasury, common.Address{9}, AssetETH, ts)
	if err != nil {
		t.Fatal(err)
	}
	single, err := k.topUpTx(f.pool, treasury, topUp{member: f.pool.Members[0], asset: poolToken.Hex(), amount: big.NewInt(7)})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := batchGasHeadroom(eth), batchGasHeadroom(single); a != 0 || b != 0 {
		t.Fatalf("headroom of a gas batch %d, of a single top-up %d; want 0 and 0", a, b)
	}
}

// TestPoolKeeperBatchFailedGoesOneByOne: after a batch failed, the members
// get one top-up each (for batchPause), not another batch.
func TestPoolKeeperBatchFailedGoesOneByOne(t *testing.T) {
	f := newBatchFixture(t)
	f.node.allowance = math.MaxBig256
	k := f.keeper()
	f.look(k)
	f.end(StatusCompleted) // the disperser is deployed
	txs := f.look(k)
	if strings.Join(keys(txs), " ") != "batch:ETH batch:"+poolToken.Hex() {
		t.Fatalf("sent %v, want two batches", keys(txs))
	}
	f.end(StatusFailed)
	txs = f.look(k)
	if len(txs) != 10 {
		t.Fatalf("after the batches failed the keeper sent %v, want one top-up per member and asset", keys(txs))
	}
	for _, tx := range txs {
		if strings.HasPrefix(tx.OrderingKey, batchKeyPrefix) {
			t.Fatalf("another batch %s after one failed", tx.OrderingKey)
		}
	}
}

// TestPoolKeeperRedeploysAFailedDisperser: a deployment that fails is sent
// again, maxDisperserDeploys times in all (the top-ups held meanwhile);
// then the members get one top-up each, and a restarted keeper (one read of the deployments) sends no
// other. The keeper follows its deployment by id, not by listing.
func TestPoolKeeperRedeploysAFailedDisperser(t *testing.T) {
	f := newBatchFixture(t)
	k := f.keeper()
	deploys := func(txs []*Transaction) int {
		n := 0
		for _, tx := range txs {
			if IsCreation(tx) {
				n++
			}
		}
		return n
	}
	for i := 0; i < maxDisperserDeploys; i++ {
		if txs := f.look(k); deploys(txs) != 1 || len(txs) != 1 {
			t.Fatalf("look %d sent %v, want a deployment alone (the top-ups wait for it)", i, keys(txs))
		}
		f.end(StatusFailed)
	}
	if reads := f.store.takeReads(); reads["ListTransactions"] != 1 {
		t.Fatalf("the keeper listed the deployments %d times, want once (then it follows its own)", reads["ListTransactions"])
	}
	if txs := f.look(k); deploys(txs) != 0 || len(txs) != 10 {
		t.Fatalf("after %d failed deployments the keeper sent %v, want the 10 top-ups alone", maxDisperserDeploys, keys(txs))
	}
	f.end(StatusCompleted)
	if txs := f.look(f.keeper()); deploys(txs) != 0 || len(txs) != 10 {
		t.Fatalf("a restarted keeper sent %v, want the 10 top-ups alone", keys(txs))
	}
}
