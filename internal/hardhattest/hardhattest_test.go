package hardhattest

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/txengine/txengine/internal/rpcproxy"
)

func startNode(t *testing.T) (*Node, *ethclient.Client, context.Context) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs Hardhat's node")
	}
	n := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	c, err := ethclient.DialContext(ctx, n.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return n, c, ctx
}

// transfer signs a 1 wei transfer from key with nonce to a fixed address
// and sends it.
func transfer(ctx context.Context, c *ethclient.Client, key *ecdsa.PrivateKey, nonce uint64) (*types.Transaction, error) {
	to := common.HexToAddress("0x000000000000000000000000000000000000dEaD")
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(ChainID)), &types.DynamicFeeTx{
		ChainID: big.NewInt(ChainID), Nonce: nonce, To: &to, Value: big.NewInt(1), Gas: 21000,
		GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9),
	})
	if err != nil {
		return nil, err
	}
	return tx, c.SendTransaction(ctx, tx)
}

func TestHardhatNodeControls(t *testing.T) {
	n, c, ctx := startNode(t)
	id, err := c.ChainID(ctx)
	if err != nil || id.Int64() != ChainID {
		t.Fatalf("chain id = %v, %v; want %d", id, err, ChainID)
	}
	faucet := crypto.PubkeyToAddress(n.FaucetKey.PublicKey)
	if faucet != common.HexToAddress(FaucetAddress) {
		t.Fatalf("FaucetKeyHex is the key of %s, not %s", faucet, FaucetAddress)
	}
	if bal, err := c.BalanceAt(ctx, faucet, nil); err != nil || bal.Cmp(FaucetBalance) != 0 {
		t.Fatalf("faucet balance = %v, %v; want %s", bal, err, FaucetBalance)
	}

	// Automine: a transaction is a block.
	tx, err := transfer(ctx, c, n.FaucetKey, 0)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	r, err := c.TransactionReceipt(ctx, tx.Hash())
	if err != nil || r.Status != types.ReceiptStatusSuccessful || r.BlockNumber.Uint64() != 1 || n.Head() != 1 {
		t.Fatalf("receipt %+v, %v; head %d: want the transfer alone in block 1", r, err, n.Head())
	}

	// Snapshot, a transaction mined, revert, mine: a reorg that takes the
	// transaction's block away.
	snap := n.Snapshot()
	reorged, err := transfer(ctx, c, n.FaucetKey, 1)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	n.Mine(2)
	if h := n.Head(); h != 4 {
		t.Fatalf("head after a transaction and Mine(2) = %d, want 4", h)
	}
	if r, err := c.TransactionReceipt(ctx, reorged.Hash()); err != nil || r.BlockNumber.Uint64() != 2 {
		t.Fatalf("receipt %+v, %v; want block 2", r, err)
	}
	old, err := c.HeaderByNumber(ctx, big.NewInt(2))
	if err != nil {
		t.Fatal(err)
	}
	n.Revert(snap)
	if h := n.Head(); h != 1 {
		t.Fatalf("head after Revert = %d, want 1", h)
	}
	if _, err := c.TransactionReceipt(ctx, reorged.Hash()); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("receipt of a reverted transaction: %v, want not found", err)
	}
	if got, err := c.NonceAt(ctx, faucet, nil); err != nil || got != 1 {
		t.Fatalf("nonce after Revert = %d, %v; want 1", got, err)
	}
	n.Mine(1)
	replaced, err := c.HeaderByNumber(ctx, big.NewInt(2))
	if err != nil {
		t.Fatal(err)
	}
	if replaced.Hash() == old.Hash() || replaced.ParentHash != old.ParentHash {
		t.Fatalf("block 2 after Revert and Mine: hash %s parent %s; the reverted one: hash %s parent %s; want a sibling",
			replaced.Hash(), replaced.ParentHash, old.Hash(), old.ParentHash)
	}
	if _, err := c.HeaderByNumber(ctx, big.NewInt(3)); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("reverted block 3: %v, want not found", err)
	}

	// A nonce used elsewhere: the chain's nonce jumps, the old one is refused.
	n.SetNonce(faucet, 7)
	if got, err := c.NonceAt(ctx, faucet, nil); err != nil || got != 7 {
		t.Fatalf("nonce after SetNonce(7) = %d, %v", got, err)
	}
	if _, err := transfer(ctx, c, n.FaucetKey, 1); err == nil || !strings.Contains(strings.ToLower(err.Error()), "nonce") {
		t.Fatalf("a transaction with nonce 1 after SetNonce(7): %v, want a nonce error", err)
	}
	if _, err := transfer(ctx, c, n.FaucetKey, 7); err != nil {
		t.Fatalf("a transaction with nonce 7 after SetNonce(7): %v", err)
	}

	// Balance and base fee set from outside.
	poor := common.HexToAddress("0x0000000000000000000000000000000000001234")
	n.SetBalance(poor, big.NewInt(42))
	if bal, err := c.BalanceAt(ctx, poor, nil); err != nil || bal.Int64() != 42 {
		t.Fatalf("balance after SetBalance(42) = %v, %v", bal, err)
	}
	// A block gas limit below a transaction's gas: the node refuses it.
	n.SetBlockGasLimit(20000)
	if _, err := transfer(ctx, c, n.FaucetKey, 8); err == nil || !strings.Contains(err.Error(), "gas limit") {
		t.Fatalf("a 21000 gas transaction under a 20000 block gas limit: %v, want a gas limit error", err)
	}
	n.SetBlockGasLimit(30_000_000)
	n.Mine(1)
	spike := big.NewInt(500e9)
	n.SetNextBlockBaseFeePerGas(spike)
	n.Mine(1)
	head, err := c.HeaderByNumber(ctx, nil)
	if err != nil || head.BaseFee == nil || head.BaseFee.Cmp(spike) != 0 {
		t.Fatalf("base fee of the next block = %v, %v; want %s", head.BaseFee, err, spike)
	}
}

func TestHardhatDropTransaction(t *testing.T) {
	n, c, ctx := startNode(t)
	n.SetAutomine(false)
	tx, err := transfer(ctx, c, n.FaucetKey, 0)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if _, pending, err := c.TransactionByHash(ctx, tx.Hash()); err != nil || !pending {
		t.Fatalf("with automine off the transaction is pending=%v, %v; want pending", pending, err)
	}
	if n.Head() != 0 {
		t.Fatalf("head %d with automine off, want 0", n.Head())
	}
	if !n.DropTransaction(tx.Hash()) {
		t.Fatal("DropTransaction of a pending transaction reported it unknown")
	}
	if _, _, err := c.TransactionByHash(ctx, tx.Hash()); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("dropped transaction: %v, want not found", err)
	}
	n.Mine(1)
	if _, err := c.TransactionReceipt(ctx, tx.Hash()); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("receipt of the dropped transaction after Mine: %v, want not found", err)
	}
	faucet := crypto.PubkeyToAddress(n.FaucetKey.PublicKey)
	if got, err := c.NonceAt(ctx, faucet, nil); err != nil || got != 0 {
		t.Fatalf("nonce after the drop = %d, %v; want 0", got, err)
	}
	if n.DropTransaction(tx.Hash()) {
		t.Fatal("DropTransaction of an unknown transaction reported it dropped")
	}

	// The same nonce sent again is mined by Mine, not before.
	again, err := transfer(ctx, c, n.FaucetKey, 0)
	if err != nil {
		t.Fatalf("send again: %v", err)
	}
	n.Mine(1)
	if r, err := c.TransactionReceipt(ctx, again.Hash()); err != nil || r.BlockNumber.Uint64() != 2 {
		t.Fatalf("receipt after Mine: %+v, %v; want block 2", r, err)
	}
}

func TestHardhatIntervalMining(t *testing.T) {
	n, _, _ := startNode(t)
	n.SetAutomine(false)
	n.SetIntervalMining(200)
	deadline := time.Now().Add(10 * time.Second)
	for n.Head() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("head %d 10s after SetIntervalMining(200), want 3 or more", n.Head())
		}
		time.Sleep(100 * time.Millisecond)
	}
	n.SetIntervalMining(0)
	stopped := n.Head()
	time.Sleep(time.Second)
	if h := n.Head(); h != stopped {
		t.Fatalf("head moved from %d to %d after SetIntervalMining(0)", stopped, h)
	}
}

// TestHardhatBehindProxy runs the fault proxy in front of the node: a
// transaction whose answer is lost is mined all the same, a refused send is
// not, and every call is counted.
func TestHardhatBehindProxy(t *testing.T) {
	n, direct, ctx := startNode(t)
	p := rpcproxy.Start(t, n.URL())
	c, err := ethclient.DialContext(ctx, p.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	p.LoseAnswer("eth_sendRawTransaction", 1)
	lost, err := transfer(ctx, c, n.FaucetKey, 0)
	if err == nil {
		t.Fatal("a send whose answer was lost reported success")
	}
	if r, err := direct.TransactionReceipt(ctx, lost.Hash()); err != nil || r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("the node's receipt of the send whose answer was lost: %+v, %v; want mined", r, err)
	}

	p.Refuse("eth_sendRawTransaction", 1, rpcproxy.Error{Code: -32003, Message: "transaction underpriced"})
	refused, err := transfer(ctx, c, n.FaucetKey, 1)
	if err == nil || err.Error() != "transaction underpriced" {
		t.Fatalf("refused send: %v, want the injected error", err)
	}
	if _, err := direct.TransactionReceipt(ctx, refused.Hash()); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("a refused send reached the node: %v", err)
	}
	if _, err := transfer(ctx, c, n.FaucetKey, 1); err != nil {
		t.Fatalf("the send after the refusal: %v", err)
	}
	if st := p.Stats(); st.Calls["eth_sendRawTransaction"] != 3 || st.Lost != 1 || st.Refused != 1 {
		t.Fatalf("proxy stats %+v; want 3 sends, 1 lost, 1 refused", st)
	}
	if got, err := direct.NonceAt(ctx, crypto.PubkeyToAddress(n.FaucetKey.PublicKey), nil); err != nil || got != 2 {
		t.Fatalf("faucet nonce %d, %v; want 2", got, err)
	}
}
