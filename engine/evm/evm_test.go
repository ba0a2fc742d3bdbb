package evm

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"

	"github.com/txengine/txengine/contracts"
	"github.com/txengine/txengine/engine"
)

// ether returns n * 10^18.
func ether(n int64) *big.Int {
	return new(big.Int).Mul(big.NewInt(n), new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil))
}

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// newSimClient starts a simulated backend funding key's account, serving
// RPC on a unix socket that the returned Client dials, and a goroutine that
// commits a block every few milliseconds so that Transact can wait for
// receipts as on a real chain. All of it stops at the end of the test.
func newSimClient(t *testing.T, key *ecdsa.PrivateKey) *Client {
	t.Helper()
	ipc := filepath.Join(t.TempDir(), "sim.ipc")
	sim := simulated.NewBackend(types.GenesisAlloc{
		crypto.PubkeyToAddress(key.PublicKey): {Balance: ether(1000)},
	}, func(nodeConf *node.Config, _ *ethconfig.Config) { nodeConf.IPCPath = ipc })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		ticker := time.NewTicker(5 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				sim.Commit()
			}
		}
	})
	client, err := Dial(ctx, ipc)
	t.Cleanup(func() {
		if client != nil {
			client.Close()
		}
		cancel()
		wg.Wait()
		if err := sim.Close(); err != nil {
			t.Errorf("close simulated backend: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// token wraps calls to a deployed ERC-20.
type token struct {
	t    *testing.T
	abi  abi.ABI
	addr common.Address
}

func newToken(t *testing.T, addr common.Address) token {
	t.Helper()
	parsed, err := contracts.ERC20().ParsedABI()
	if err != nil {
		t.Fatal(err)
	}
	return token{t: t, abi: parsed, addr: addr}
}

func (tk token) pack(method string, args ...any) []byte {
	tk.t.Helper()
	data, err := tk.abi.Pack(method, args...)
	if err != nil {
		tk.t.Fatal(err)
	}
	return data
}

func (tk token) balanceOf(ctx context.Context, chain engine.Node, who common.Address) *big.Int {
	tk.t.Helper()
	out, err := chain.CallContract(ctx, ethereum.CallMsg{To: &tk.addr, Data: tk.pack("balanceOf", who)}, nil)
	if err != nil {
		tk.t.Fatalf("balanceOf(%s): %v", who, err)
	}
	vals, err := tk.abi.Unpack("balanceOf", out)
	if err != nil {
		tk.t.Fatalf("balanceOf(%s): unpack %x: %v", who, out, err)
	}
	return vals[0].(*big.Int)
}

// deployToken deploys the ERC-20 with supply minted to key's account.
func deployToken(ctx context.Context, t *testing.T, chain engine.Node, key *ecdsa.PrivateKey, supply *big.Int) token {
	t.Helper()
	data, err := contracts.ERC20().DeployData("Test Token", "TT", supply, crypto.PubkeyToAddress(key.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	addr, receipt, err := Deploy(ctx, chain, key, data)
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	t.Logf("deploy: gas used %d, block %d", receipt.GasUsed, receipt.BlockNumber)
	if addr == (common.Address{}) {
		t.Fatal("deploy returned no contract address")
	}
	return newToken(t, addr)
}

// transfer sends amount tokens from key's account to to and returns the receipt.
func (tk token) transfer(ctx context.Context, chain engine.Node, key *ecdsa.PrivateKey, to common.Address, amount *big.Int) *types.Receipt {
	tk.t.Helper()
	receipt, err := Transact(ctx, chain, key, &tk.addr, nil, tk.pack("transfer", to, amount))
	if err != nil {
		tk.t.Fatalf("transfer: %v", err)
	}
	tk.t.Logf("transfer: gas used %d, block %d", receipt.GasUsed, receipt.BlockNumber)
	return receipt
}

func TestSimulatedERC20(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := mustKey(t)
	owner := crypto.PubkeyToAddress(key.PublicKey)
	client := newSimClient(t, key)

	supply := ether(1_000_000)
	tk := deployToken(ctx, t, client, key, supply)
	if got := tk.balanceOf(ctx, client, owner); got.Cmp(supply) != 0 {
		t.Fatalf("owner balance after deploy = %s, want %s", got, supply)
	}

	to := common.HexToAddress("0x000000000000000000000000000000000000beef")
	amount := big.NewInt(1234)
	receipt := tk.transfer(ctx, client, key, to, amount)
	if got := tk.balanceOf(ctx, client, to); got.Cmp(amount) != 0 {
		t.Fatalf("recipient balance = %s, want %s", got, amount)
	}
	if got, want := tk.balanceOf(ctx, client, owner), new(big.Int).Sub(supply, amount); got.Cmp(want) != 0 {
		t.Fatalf("owner balance = %s, want %s", got, want)
	}

	// The transfer's receipt and its Transfer log, read by block.
	receipts, err := client.BlockReceipts(ctx, receipt.BlockNumber.Uint64())
	if err != nil {
		t.Fatal(err)
	}
	var found *types.Receipt
	for _, r := range receipts {
		if r.TxHash == receipt.TxHash {
			found = r
		}
	}
	if found == nil {
		t.Fatalf("block %d has %d receipts, none of tx %s", receipt.BlockNumber, len(receipts), receipt.TxHash)
	}
	transferEvent := tk.abi.Events["Transfer"]
	var logs int
	for _, l := range found.Logs {
		if l.Address != tk.addr || len(l.Topics) != 3 || l.Topics[0] != transferEvent.ID {
			continue
		}
		logs++
		from, dest := common.BytesToAddress(l.Topics[1][:]), common.BytesToAddress(l.Topics[2][:])
		value := new(big.Int).SetBytes(l.Data)
		if from != owner || dest != to || value.Cmp(amount) != 0 {
			t.Errorf("Transfer(%s, %s, %s), want Transfer(%s, %s, %s)", from, dest, value, owner, to, amount)
		}
	}
	if logs != 1 {
		t.Fatalf("receipt has %d Transfer logs, want 1 (logs: %d)", logs, len(found.Logs))
	}

	// A block that does not exist yet is NotFound.
	if _, err := client.BlockReceipts(ctx, receipt.BlockNumber.Uint64()+1_000_000); !errors.Is(err, ethereum.NotFound) {
		t.Errorf("BlockReceipts of a future block: err = %v, want ethereum.NotFound", err)
	}
	// A transfer beyond the balance reverts in estimation, before sending.
	nonce, err := client.PendingNonceAt(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Transact(ctx, client, key, &tk.addr, nil, tk.pack("transfer", to, new(big.Int).Add(supply, big.NewInt(1)))); err == nil {
		t.Fatal("transfer beyond the balance succeeded")
	}
	if after, err := client.PendingNonceAt(ctx, owner); err != nil || after != nonce {
		t.Fatalf("pending nonce after a failed estimation = %d (%v), want %d", after, err, nonce)
	}
}

func TestDevChainRestartKeepsState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "faucet.key")
	dataDir := filepath.Join(dir, "chain")

	start := func(period time.Duration) *DevChain {
		t.Helper()
		key, err := LoadOrCreateKey(keyPath)
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultDevChainConfig()
		cfg.DataDir, cfg.FaucetKey, cfg.Period = dataDir, key, period
		dc, err := StartDevChain(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return dc
	}

	// First run: mine on every transaction.
	dc := start(0)
	client := dc.Client()
	if got := dc.ChainID().Int64(); got != DevChainID {
		t.Fatalf("ChainID() = %d, want %d", got, DevChainID)
	}
	if id, err := client.ChainID(ctx); err != nil || id.Int64() != DevChainID {
		t.Fatalf("eth_chainId = %v (%v), want %d", id, err, DevChainID)
	}
	key, err := LoadOrCreateKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if dc.Faucet() != crypto.PubkeyToAddress(key.PublicKey) {
		t.Fatalf("Faucet() = %s, want the key's address", dc.Faucet())
	}
	supply := ether(1_000)
	tk := deployToken(ctx, t, client, key, supply)
	to := common.HexToAddress("0x000000000000000000000000000000000000cafe")
	amount := big.NewInt(777)
	transfer := tk.transfer(ctx, client, key, to, amount)
	if receipts, err := client.BlockReceipts(ctx, transfer.BlockNumber.Uint64()); err != nil || len(receipts) == 0 {
		t.Fatalf("BlockReceipts(%d) = %d receipts, %v", transfer.BlockNumber, len(receipts), err)
	}
	head, err := client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	headBefore := head.Number.Uint64()
	if headBefore < transfer.BlockNumber.Uint64() || headBefore == 0 {
		t.Fatalf("head %d is before the transfer's block %d", headBefore, transfer.BlockNumber)
	}
	if err := dc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dc.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	// A different faucet key cannot open the chain; the failed start must
	// release the data dir for the next one.
	cfg := DefaultDevChainConfig()
	cfg.DataDir, cfg.FaucetKey = dataDir, mustKey(t)
	bad, err := StartDevChain(cfg)
	if err == nil {
		bad.Close()
		t.Fatal("StartDevChain accepted a faucet key the chain was not created with")
	}
	t.Logf("start with another faucet key: %v", err)

	// Second run, with a block period: the same chain, and it moves on.
	dc = start(time.Second)
	defer dc.Close()
	client = dc.Client()
	head, err = client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	headAfter := head.Number.Uint64()
	t.Logf("head before restart %d, after %d", headBefore, headAfter)
	if headAfter < headBefore {
		t.Fatalf("head went back from %d to %d on restart", headBefore, headAfter)
	}
	if got := tk.balanceOf(ctx, client, to); got.Cmp(amount) != 0 {
		t.Fatalf("recipient balance after restart = %s, want %s", got, amount)
	}
	if got, want := tk.balanceOf(ctx, client, dc.Faucet()), new(big.Int).Sub(supply, amount); got.Cmp(want) != 0 {
		t.Fatalf("owner balance after restart = %s, want %s", got, want)
	}
	old, err := client.HeaderByNumber(ctx, transfer.BlockNumber)
	if err != nil || old.Hash() != transfer.BlockHash {
		t.Fatalf("block %d after restart: %v, hash %v, want %s", transfer.BlockNumber, err, old, transfer.BlockHash)
	}
	// Transactions still go through (nonce continuity), mined by the period.
	second := tk.transfer(ctx, client, key, to, amount)
	if second.BlockNumber.Uint64() <= headAfter {
		t.Fatalf("second transfer mined in block %d, not after the restart head %d", second.BlockNumber, headAfter)
	}
	if got, want := tk.balanceOf(ctx, client, to), new(big.Int).Mul(amount, big.NewInt(2)); got.Cmp(want) != 0 {
		t.Fatalf("recipient balance = %s, want %s", got, want)
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "faucet.key")
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("key file mode = %o, want 600", mode)
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.Equal(k2) {
		t.Fatal("second load returned a different key")
	}
	if err := os.WriteFile(path, []byte("not hex"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(path); err == nil {
		t.Fatal("a corrupt key file was accepted")
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil || len(entries) != 1 {
		t.Fatalf("key dir holds %d entries (%v), want only the key", len(entries), err)
	}
}

func TestDevChainConfigValidation(t *testing.T) {
	key := mustKey(t)
	for name, cfg := range map[string]DevChainConfig{
		"no data dir": {FaucetKey: key},
		"no key":      {DataDir: t.TempDir()},
		"sub-second":  {DataDir: t.TempDir(), FaucetKey: key, Period: 500 * time.Millisecond},
		"negative":    {DataDir: t.TempDir(), FaucetKey: key, Period: -time.Second},
	} {
		if dc, err := StartDevChain(cfg); err == nil {
			dc.Close()
			t.Errorf("%s: StartDevChain succeeded", name)
		}
	}
}

// call packs method, calls it on addr and unpacks the single result.
func call(ctx context.Context, t *testing.T, chain engine.Node, parsed abi.ABI, addr common.Address, method string, args ...any) any {
	t.Helper()
	data, err := parsed.Pack(method, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := chain.CallContract(ctx, ethereum.CallMsg{To: &addr, Data: data}, nil)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	vals, err := parsed.Unpack(method, out)
	if err != nil || len(vals) != 1 {
		t.Fatalf("%s: unpack %x: %v", method, out, err)
	}
	return vals[0]
}

// send packs method and sends it to addr from key's account.
func send(ctx context.Context, t *testing.T, chain engine.Node, key *ecdsa.PrivateKey, parsed abi.ABI, addr common.Address, method string, args ...any) error {
	t.Helper()
	data, err := parsed.Pack(method, args...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Transact(ctx, chain, key, &addr, nil, data)
	return err
}

func TestSimulatedSecurityTokenAndNFT(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := mustKey(t)
	owner := crypto.PubkeyToAddress(key.PublicKey)
	client := newSimClient(t, key)
	other := common.HexToAddress("0x00000000000000000000000000000000000000b0")

	// Security token: transfers need both ends on the allow-list.
	st := contracts.SecurityToken()
	stABI, err := st.ParsedABI()
	if err != nil {
		t.Fatal(err)
	}
	data, err := st.DeployData("Share", "SHR", big.NewInt(1000), owner)
	if err != nil {
		t.Fatal(err)
	}
	stAddr, _, err := Deploy(ctx, client, key, data)
	if err != nil {
		t.Fatal(err)
	}
	if !call(ctx, t, client, stABI, stAddr, "isAllowed", owner).(bool) {
		t.Fatal("owner is not allowed after construction")
	}
	if err := send(ctx, t, client, key, stABI, stAddr, "transfer", other, big.NewInt(10)); err == nil {
		t.Fatal("transfer to an address off the allow-list succeeded")
	}
	if err := send(ctx, t, client, key, stABI, stAddr, "allow", other); err != nil {
		t.Fatal(err)
	}
	if err := send(ctx, t, client, key, stABI, stAddr, "transfer", other, big.NewInt(10)); err != nil {
		t.Fatalf("transfer to an allowed address: %v", err)
	}
	if got := call(ctx, t, client, stABI, stAddr, "balanceOf", other).(*big.Int); got.Int64() != 10 {
		t.Fatalf("balance of allowed recipient = %s, want 10", got)
	}
	if got := call(ctx, t, client, stABI, stAddr, "balanceOf", owner).(*big.Int); got.Int64() != 990 {
		t.Fatalf("owner's balance = %s, want 990 (the initial supply minted once, less 10)", got)
	}
	if got := call(ctx, t, client, stABI, stAddr, "totalSupply").(*big.Int); got.Int64() != 1000 {
		t.Fatalf("total supply = %s, want 1000", got)
	}
	// The sender is checked too: a disallowed owner cannot send.
	if err := send(ctx, t, client, key, stABI, stAddr, "disallow", owner); err != nil {
		t.Fatal(err)
	}
	if err := send(ctx, t, client, key, stABI, stAddr, "transfer", other, big.NewInt(1)); err == nil {
		t.Fatal("transfer from a sender off the allow-list succeeded")
	}
	// Minting (TxToken's, through the same hook) needs an allowed recipient.
	stranger := common.HexToAddress("0x00000000000000000000000000000000000000b1")
	if err := send(ctx, t, client, key, stABI, stAddr, "mint", stranger, big.NewInt(5)); err == nil {
		t.Fatal("mint to an address off the allow-list succeeded")
	}
	if err := send(ctx, t, client, key, stABI, stAddr, "mint", other, big.NewInt(5)); err != nil {
		t.Fatalf("mint to an allowed address: %v", err)
	}
	if got := call(ctx, t, client, stABI, stAddr, "balanceOf", other).(*big.Int); got.Int64() != 15 {
		t.Fatalf("balance after mint = %s, want 15", got)
	}

	// NFT: the owner mints, ids are unique, ERC-721 is advertised.
	nft := contracts.SystemNFT()
	nftABI, err := nft.ParsedABI()
	if err != nil {
		t.Fatal(err)
	}
	data, err = nft.DeployData("System", "SYS", owner)
	if err != nil {
		t.Fatal(err)
	}
	nftAddr, _, err := Deploy(ctx, client, key, data)
	if err != nil {
		t.Fatal(err)
	}
	if !call(ctx, t, client, nftABI, nftAddr, "supportsInterface", [4]byte{0x80, 0xac, 0x58, 0xcd}).(bool) {
		t.Fatal("ERC-721 interface not supported")
	}
	if err := send(ctx, t, client, key, nftABI, nftAddr, "mint", other, big.NewInt(7)); err != nil {
		t.Fatal(err)
	}
	if got := call(ctx, t, client, nftABI, nftAddr, "ownerOf", big.NewInt(7)).(common.Address); got != other {
		t.Fatalf("ownerOf(7) = %s, want %s", got, other)
	}
	if err := send(ctx, t, client, key, nftABI, nftAddr, "mint", owner, big.NewInt(7)); err == nil {
		t.Fatal("minting an existing token id succeeded")
	}
}
