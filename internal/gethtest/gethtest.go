// Package gethtest runs a real geth node in --dev mode for tests: it finds
// geth on PATH or in <module root>/.cache/bin, or builds it there once with
// `go install github.com/ethereum/go-ethereum/cmd/geth@v1.17.8`, starts it on
// free loopback ports with its own data dir, funds a fresh key from the dev
// account, and can stop and restart it to simulate node outages.
package gethtest

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/txengine/txengine/internal/ci"
	"github.com/txengine/txengine/internal/toolcache"

	"github.com/txengine/txengine/internal/freeport"
	"github.com/txengine/txengine/internal/proc"
)

// Version is the geth release the harness builds.
const Version = "v1.17.8"

// Package is what `go install` builds.
const Package = "github.com/ethereum/go-ethereum/cmd/geth@" + Version

// ChainID is the chain id of geth --dev.
const ChainID = 1337

// FaucetBalance is what the harness gives the FaucetKey account: 100,000
// ETH (a faucet paying 0.1 ETH funds a million accounts with it).
var FaucetBalance = new(big.Int).Mul(big.NewInt(100_000), big.NewInt(1e18))

// Option changes how Start runs geth.
type Option func(*options)

type options struct {
	period      int
	args        []string
	defaultPool bool
	pool        *PoolLimits
}

// PoolLimits are geth's transaction pool limits (--txpool.accountslots,
// globalslots, accountqueue, globalqueue); a zero field takes geth's
// default (16, 5,120, 64, 1,024).
type PoolLimits struct {
	AccountSlots, GlobalSlots, AccountQueue, GlobalQueue int
}

// TxPool runs geth with the pool limits l, each flag given explicitly (a
// busy public node's: TxPool(PoolLimits{AccountSlots: 16})). A dev node's
// pool is never full, so geth still takes a sender's 17th transaction:
// rpcproxy.BusyMempool refuses it as a full pool does.
func TxPool(l PoolLimits) Option {
	l.AccountSlots = cmp.Or(l.AccountSlots, 16)
	l.GlobalSlots = cmp.Or(l.GlobalSlots, 5120)
	l.AccountQueue = cmp.Or(l.AccountQueue, 64)
	l.GlobalQueue = cmp.Or(l.GlobalQueue, 1024)
	return func(o *options) { o.pool = &l }
}

// Period sets --dev.period in seconds (default 1; 0 mines on demand).
func Period(seconds int) Option { return func(o *options) { o.period = seconds } }

// DefaultPool runs geth with its default transaction pool limits (16
// executable and 64 queued slots per account guaranteed, 5,120 and 1,024
// in all) instead of the raised ones the harness uses by default (1,024
// per account, 8,192 in all).
func DefaultPool() Option { return func(o *options) { o.defaultPool = true } }

// Args appends raw flags to geth's command line.
func Args(args ...string) Option { return func(o *options) { o.args = append(o.args, args...) } }

// Node is a running (or stopped) geth --dev node.
type Node struct {
	// HTTPURL and WSURL are the node's JSON-RPC endpoints; they stay the
	// same across Restart.
	HTTPURL, WSURL string
	// FaucetKey is a fresh key holding FaucetBalance.
	FaucetKey *ecdsa.PrivateKey
	// DataDir is the node's data directory (kept across Restart).
	DataDir string

	t    testing.TB
	proc *proc.Process
	args []string // geth's command line after the binary
}

// Start starts geth --dev on free ports and waits until it answers
// JSON-RPC. It skips the test when geth can be neither found nor built,
// unless CI=true, where that fails the test. The node stops at the end of the
// test.
func Start(t testing.TB, opts ...Option) *Node {
	t.Helper()
	o := options{period: 1}
	for _, opt := range opts {
		opt(&o)
	}
	bin, err := Binary()
	if err != nil {
		ci.SkipOrFail(t, "gethtest: %v\nto enable: GOBIN=<module root>/.cache/bin go install %s, or put geth %s on PATH", err, Package, Version)
	}
	dir := t.TempDir()
	httpPort, wsPort := freeport.Get(t), freeport.Get(t)
	n := &Node{
		HTTPURL: fmt.Sprintf("http://127.0.0.1:%d", httpPort),
		WSURL:   fmt.Sprintf("ws://127.0.0.1:%d", wsPort),
		DataDir: filepath.Join(dir, "geth"),
		t:       t,
	}
	args := append([]string{
		"--dev", "--dev.period", strconv.Itoa(o.period), "--dev.gaslimit", "60000000",
		"--datadir", n.DataDir,
		"--http", "--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(httpPort),
		"--http.api", "eth,net,web3,txpool,debug",
		"--ws", "--ws.addr", "127.0.0.1", "--ws.port", strconv.Itoa(wsPort), "--ws.api", "eth,net,web3",
		"--nodiscover", "--maxpeers", "0", "--ipcdisable",
	}, o.args...)
	switch {
	case o.pool != nil:
		args = append(args,
			"--txpool.accountslots", strconv.Itoa(o.pool.AccountSlots), "--txpool.globalslots", strconv.Itoa(o.pool.GlobalSlots),
			"--txpool.accountqueue", strconv.Itoa(o.pool.AccountQueue), "--txpool.globalqueue", strconv.Itoa(o.pool.GlobalQueue))
	case !o.defaultPool:
		args = append(args,
			"--txpool.accountslots", "1024", "--txpool.globalslots", "8192",
			"--txpool.accountqueue", "1024", "--txpool.globalqueue", "8192")
	}
	n.args = args
	n.proc = proc.New(proc.Spec{
		Name:    "geth",
		Command: func() *exec.Cmd { return exec.Command(bin, args...) },
		LogPath: filepath.Join(dir, "geth.log"),
		Ready:   n.ping,
	})
	t.Cleanup(func() {
		_ = n.proc.Stop()
		if t.Failed() {
			t.Logf("geth log (tail):\n%s", n.LogTail(60))
		}
	})
	if err := n.proc.Start(); err != nil {
		t.Fatalf("gethtest: %v\n%s", err, n.LogTail(40))
	}
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.fund(crypto.PubkeyToAddress(key.PublicKey), FaucetBalance); err != nil {
		t.Fatalf("gethtest: fund the faucet key: %v\n%s", err, n.LogTail(40))
	}
	n.FaucetKey = key
	return n
}

// Stop shuts geth down cleanly (SIGTERM) and waits until it has exited; its
// ports stop answering. It is a no-op on a stopped node.
func (n *Node) Stop() {
	n.t.Helper()
	if err := n.proc.Stop(); err != nil {
		n.t.Fatalf("gethtest: stop: %v", err)
	}
}

// Restart starts a stopped node again on the same data dir and ports and
// waits until it answers JSON-RPC.
func (n *Node) Restart() {
	n.t.Helper()
	n.Stop()
	if err := n.proc.Start(); err != nil {
		n.t.Fatalf("gethtest: restart: %v\n%s", err, n.LogTail(40))
	}
}

// LogTail returns the last lines of geth's output.
func (n *Node) LogTail(lines int) string {
	return n.proc.LogTail(lines)
}

func (n *Node) ping(ctx context.Context) error {
	c, err := rpc.DialContext(ctx, n.HTTPURL)
	if err != nil {
		return err
	}
	defer c.Close()
	var head hexutil.Uint64
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.CallContext(cctx, &head, "eth_blockNumber")
}

// fund sends value from geth's unlocked dev account to addr and waits until
// it is mined.
func (n *Node) fund(addr common.Address, value *big.Int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := rpc.DialContext(ctx, n.HTTPURL)
	if err != nil {
		return err
	}
	defer c.Close()
	var accounts []common.Address
	if err := c.CallContext(ctx, &accounts, "eth_accounts"); err != nil {
		return fmt.Errorf("eth_accounts: %w", err)
	}
	if len(accounts) == 0 {
		return errors.New("geth has no dev account")
	}
	var hash common.Hash
	tx := map[string]any{"from": accounts[0], "to": addr, "value": (*hexutil.Big)(value)}
	if err := c.CallContext(ctx, &hash, "eth_sendTransaction", tx); err != nil {
		return fmt.Errorf("eth_sendTransaction: %w", err)
	}
	for {
		var r *types.Receipt
		if err := c.CallContext(ctx, &r, "eth_getTransactionReceipt", hash); err == nil && r != nil {
			if r.Status != types.ReceiptStatusSuccessful {
				return fmt.Errorf("funding transaction %s failed", hash)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("funding transaction %s not mined: %w", hash, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Binary returns the path of a geth to run: geth on PATH, else
// <module root>/.cache/bin/geth, which it builds with go install the first
// time. A file lock keeps concurrent test binaries from building twice.
func Binary() (string, error) { return toolcache.GoInstall("geth", Package) }
