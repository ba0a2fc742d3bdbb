// Package hardhattest runs Hardhat's node (npm hardhat@2) for tests: it
// installs the Hardhat pinned by node/package-lock.json once into
// <module root>/.cache/hardhat with `npm ci`, starts `hardhat node` on a free
// loopback port with node/hardhat.config.js, and drives the node's test
// controls (mining, snapshots, dropped transactions, fee spikes, nonces and
// balances set from outside) so tests can make a real node misbehave.
package hardhattest

import (
	"context"
	"crypto/ecdsa"
	_ "embed"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/txengine/txengine/internal/ci"
	"github.com/txengine/txengine/internal/toolcache"

	"github.com/txengine/txengine/internal/freeport"
	"github.com/txengine/txengine/internal/proc"
)

// Version is the Hardhat release node/package-lock.json pins.
const Version = "2.29.1"

// ChainID is the chain id node/hardhat.config.js gives the node.
const ChainID = 31337

// FaucetKeyHex is the private key of Hardhat's account #0, the same on every
// Hardhat node (publicly known: never use it on a real network). Tests use it
// as the faucet.
const FaucetKeyHex = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"

// FaucetAddress is the address of FaucetKeyHex.
const FaucetAddress = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"

// FaucetBalance is what each of Hardhat's default accounts holds at genesis:
// 10000 ETH.
var FaucetBalance = new(big.Int).Mul(big.NewInt(10000), big.NewInt(1e18))

// The project's npm files: Install copies them into the cache and runs
// `npm ci` there; Start runs the node with the config.
var (
	//go:embed node/package.json
	packageJSON []byte
	//go:embed node/package-lock.json
	packageLock []byte
	//go:embed node/.npmrc
	npmrc []byte
	//go:embed node/hardhat.config.js
	hardhatConfig []byte
)

// Node is a running (or stopped) Hardhat node. Its state lives in memory:
// it is gone once the node stops.
type Node struct {
	// HTTPURL and WSURL are the node's JSON-RPC endpoints (Hardhat serves
	// both on one port).
	HTTPURL, WSURL string
	// FaucetKey is the key of FaucetKeyHex, holding FaucetBalance at start.
	FaucetKey *ecdsa.PrivateKey

	t    testing.TB
	rpc  *rpc.Client
	proc *proc.Process
}

// Start installs Hardhat if needed, starts its node on a free loopback port
// and waits until it answers eth_chainId. It skips the test when Node.js or
// npm is missing or the install fails, unless CI=true, where that fails the
// test. The node stops at the end of the test.
func Start(t testing.TB) *Node {
	t.Helper()
	bin, err := Install()
	if err != nil {
		ci.SkipOrFail(t, "hardhattest: %v\nto enable: install Node.js (20 or later) and npm; the harness installs hardhat@%s into <module root>/.cache/hardhat itself", err, Version)
	}
	key, err := crypto.HexToECDSA(FaucetKeyHex)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The node runs in a project of its own: the config, and the cached
	// node_modules, where Hardhat looks for itself.
	if err := os.WriteFile(filepath.Join(dir, "hardhat.config.js"), hardhatConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(filepath.Dir(bin)), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	n := &Node{FaucetKey: key, t: t}
	logPath := filepath.Join(dir, "hardhat.log")
	t.Cleanup(func() {
		if n.proc != nil {
			_ = n.proc.Stop()
		}
		if n.rpc != nil {
			n.rpc.Close()
		}
		if t.Failed() {
			t.Logf("hardhat log (tail):\n%s", n.LogTail(60))
		}
	})
	// A free port may be taken between the probe and the node's listen:
	// try a few.
	var startErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := freeport.Get(t)
		n.HTTPURL = fmt.Sprintf("http://127.0.0.1:%d", port)
		n.WSURL = fmt.Sprintf("ws://127.0.0.1:%d", port)
		n.proc = newProcess(bin, dir, logPath, port)
		if startErr = n.proc.Start(); startErr == nil {
			break
		}
	}
	if startErr != nil {
		t.Fatalf("hardhattest: %v\n%s", startErr, toolcache.FileTail(logPath, 40))
	}
	c, err := rpc.Dial(n.HTTPURL)
	if err != nil {
		t.Fatalf("hardhattest: dial %s: %v", n.HTTPURL, err)
	}
	n.rpc = c
	return n
}

// URL returns the node's HTTP JSON-RPC endpoint (HTTPURL).
func (n *Node) URL() string { return n.HTTPURL }

// Stop kills the node (its process group) and waits until it has exited; its
// port stops answering and its chain is gone. It is a no-op on a stopped
// node.
func (n *Node) Stop() {
	n.t.Helper()
	if err := n.proc.Stop(); err != nil {
		n.t.Fatalf("hardhattest: stop: %v", err)
	}
}

// LogTail returns the last lines of the node's output (it logs every
// JSON-RPC method it serves).
func (n *Node) LogTail(lines int) string {
	return n.proc.LogTail(lines)
}

// Call sends one JSON-RPC request to the node. Unlike the control methods
// below it reports errors instead of failing the test, so it may be used
// from any goroutine.
func (n *Node) Call(ctx context.Context, result any, method string, args ...any) error {
	if err := n.rpc.CallContext(ctx, result, method, args...); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// The control methods fail the test on error: call them from the test's
// goroutine (or use Call).

// call is Call with a timeout that fails the test on error.
func (n *Node) call(result any, method string, args ...any) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Call(ctx, result, method, args...); err != nil {
		n.t.Fatalf("hardhattest: %v", err)
	}
}

// Head returns the number of the node's latest block.
func (n *Node) Head() uint64 {
	n.t.Helper()
	var head hexutil.Uint64
	n.call(&head, "eth_blockNumber")
	return uint64(head)
}

// Mine mines blocks blocks at once (hardhat_mine); the first takes what the
// mempool holds.
func (n *Node) Mine(blocks int) {
	n.t.Helper()
	n.call(nil, "hardhat_mine", hexutil.Uint64(blocks))
}

// Snapshot saves the chain's state (evm_snapshot) and returns its id for
// Revert. Mining new blocks after a Revert replaces the reverted ones: a
// reorg.
func (n *Node) Snapshot() string {
	n.t.Helper()
	var id string
	n.call(&id, "evm_snapshot")
	return id
}

// Revert returns the chain to snapshot id (evm_revert), dropping every block
// and pending transaction since. A snapshot can be reverted to once.
func (n *Node) Revert(id string) {
	n.t.Helper()
	var ok bool
	n.call(&ok, "evm_revert", id)
	if !ok {
		n.t.Fatalf("hardhattest: evm_revert %s: no such snapshot", id)
	}
}

// SetAutomine switches mining a block for each transaction on or off
// (evm_setAutomine). With it off and interval mining off, transactions wait
// in the mempool until Mine.
func (n *Node) SetAutomine(on bool) {
	n.t.Helper()
	n.call(nil, "evm_setAutomine", on)
}

// SetIntervalMining mines a block every ms milliseconds
// (evm_setIntervalMining); 0 turns interval mining off.
func (n *Node) SetIntervalMining(ms int) {
	n.t.Helper()
	n.call(nil, "evm_setIntervalMining", ms)
}

// DropTransaction removes a pending transaction from the mempool
// (hardhat_dropTransaction), as a node that forgets it would. It reports
// whether the node held it; a mined transaction cannot be dropped.
func (n *Node) DropTransaction(hash common.Hash) bool {
	n.t.Helper()
	var dropped bool
	n.call(&dropped, "hardhat_dropTransaction", hash)
	return dropped
}

// SetNextBlockBaseFeePerGas sets the base fee of the next block
// (hardhat_setNextBlockBaseFeePerGas): a fee spike.
func (n *Node) SetNextBlockBaseFeePerGas(wei *big.Int) {
	n.t.Helper()
	n.call(nil, "hardhat_setNextBlockBaseFeePerGas", (*hexutil.Big)(wei))
}

// SetNonce sets addr's nonce (hardhat_setNonce), as if its key had sent
// transactions elsewhere. Hardhat refuses to lower a nonce.
func (n *Node) SetNonce(addr common.Address, nonce uint64) {
	n.t.Helper()
	n.call(nil, "hardhat_setNonce", addr, hexutil.Uint64(nonce))
}

// SetBalance sets addr's balance (hardhat_setBalance).
func (n *Node) SetBalance(addr common.Address, wei *big.Int) {
	n.t.Helper()
	n.call(nil, "hardhat_setBalance", addr, (*hexutil.Big)(wei))
}

// SetBlockGasLimit sets the gas limit of the blocks to come
// (evm_setBlockGasLimit); the node then refuses a transaction whose gas
// exceeds it.
func (n *Node) SetBlockGasLimit(gas uint64) {
	n.t.Helper()
	n.call(nil, "evm_setBlockGasLimit", hexutil.Uint64(gas))
}

// newProcess returns the process of `hardhat node` in dir on port, ready
// once it answers eth_chainId with ChainID. Its state is in memory: it
// stops with SIGKILL, to its process group (the node and what it spawned).
func newProcess(bin, dir, logPath string, port int) *proc.Process {
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	return proc.New(proc.Spec{
		Name: "hardhat node",
		Command: func() *exec.Cmd {
			cmd := exec.Command(bin, "node", "--hostname", "127.0.0.1", "--port", strconv.Itoa(port))
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "HARDHAT_DISABLE_TELEMETRY_PROMPT=true")
			return cmd
		},
		LogPath: logPath,
		Ready: func(ctx context.Context) error {
			id, err := chainID(ctx, url)
			if err == nil && id != ChainID {
				return fmt.Errorf("the node on %s has chain id %d, want %d", url, id, ChainID)
			}
			return err
		},
		StopSignal: syscall.SIGKILL,
		Group:      true,
	})
}

func chainID(ctx context.Context, url string) (uint64, error) {
	c, err := rpc.DialContext(ctx, url)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	var id hexutil.Uint64
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.CallContext(cctx, &id, "eth_chainId"); err != nil {
		return 0, err
	}
	return uint64(id), nil
}

// Install returns the path of the hardhat executable in
// <module root>/.cache/hardhat/node_modules/.bin, installing it there first
// (node/package.json and node/package-lock.json copied in, then `npm ci`)
// when it is missing or was installed from other files (toolcache.NPMInstall).
func Install() (string, error) {
	const bin = "node_modules/.bin/hardhat"
	dir, err := toolcache.NPMInstall("hardhat", map[string][]byte{
		"package.json": packageJSON, "package-lock.json": packageLock, ".npmrc": npmrc,
	}, bin)
	if err != nil {
		return "", fmt.Errorf("install hardhat@%s: %w", Version, err)
	}
	return filepath.Join(dir, bin), nil
}
