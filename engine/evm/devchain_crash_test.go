package evm

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// crashHelperEnv names the environment variable that turns
// TestDevChainCrashHelper into the process the crash test kills: its value
// is the directory holding the chain and the faucet key.
const crashHelperEnv = "TXENGINE_DEVCHAIN_CRASH_DIR"

// crashPeriodEnv carries the block period of the helper, in seconds.
const crashPeriodEnv = "TXENGINE_DEVCHAIN_CRASH_PERIOD"

// TestDevChainCrashHelper is not a test: run by TestDevChainKill9 with
// crashHelperEnv set, it opens the dev chain and sends a burst of
// transfers from the faucet until it is killed, reporting on stdout every
// head it sees ("head <number> <hash>") after a "ready" line.
func TestDevChainCrashHelper(t *testing.T) {
	dir := os.Getenv(crashHelperEnv)
	if dir == "" {
		t.Skip("helper process of TestDevChainKill9")
	}
	period, err := strconv.Atoi(os.Getenv(crashPeriodEnv))
	if err != nil {
		t.Fatalf("%s: %v", crashPeriodEnv, err)
	}
	dc, key := startCrashChain(t, dir, time.Duration(period)*time.Second)
	client := dc.Client()
	ctx := context.Background()
	from := dc.Faucet()
	nonce, err := client.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	signer := types.LatestSignerForChainID(dc.ChainID())
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	var last uint64
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	for i := 0; ; i++ {
		// Bursts of up to 40 transfers, a look at the head, then a pause,
		// sometimes long enough for empty blocks.
		for range 1 + rng.IntN(40) {
			tx := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{
				ChainID: dc.ChainID(), Nonce: nonce, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(100e9),
				Gas: 21_000, To: &common.Address{0xca, 0xfe, byte(i)}, Value: big.NewInt(1),
			})
			if err := client.SendTransaction(ctx, tx); err != nil {
				t.Fatalf("send nonce %d: %v", nonce, err)
			}
			nonce++
		}
		head, err := client.HeaderByNumber(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for n := last + 1; n <= head.Number.Uint64(); n++ {
			h, err := client.HeaderByNumber(ctx, new(big.Int).SetUint64(n))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(out, "head %d %s\n", n, h.Hash())
			last = n
		}
		out.Flush()
		pause := time.Duration(rng.IntN(300)) * time.Millisecond
		if rng.IntN(4) == 0 {
			pause = time.Duration(1500+rng.IntN(1500)) * time.Millisecond
		}
		time.Sleep(pause)
	}
}

// startCrashChain opens the dev chain in dir with the faucet key kept there.
func startCrashChain(t *testing.T, dir string, period time.Duration) (*DevChain, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := LoadOrCreateKey(filepath.Join(dir, "faucet.key"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultDevChainConfig()
	cfg.DataDir, cfg.FaucetKey, cfg.Period = filepath.Join(dir, "chain"), key, period
	dc, err := StartDevChain(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dc, key
}

// TestDevChainKill9 kills a process sending a burst on the dev chain at
// random points (SIGKILL, nothing flushed) and reopens the chain after each:
// its head, every block's receipts and the faucet's nonce must agree, the
// blocks the killed process saw must not be replaced by others, and the
// reopened chain must go on mining new transactions.
func TestDevChainKill9(t *testing.T) {
	if os.Getenv(crashHelperEnv) != "" {
		t.Skip("in the helper process")
	}
	rounds := 10
	if testing.Short() {
		rounds = 4
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	dir := t.TempDir()
	seen := map[uint64]common.Hash{} // blocks reported by killed helpers
	for round := range rounds {
		period := 1 // the service's default
		if round%3 == 2 {
			period = 0 // a block per transaction
		}
		delay := time.Duration(100+rng.IntN(3900)) * time.Millisecond
		heads := runAndKill(t, dir, period, delay)
		for n, h := range heads {
			seen[n] = h
		}
		checkReopened(t, dir, round, period, delay, seen)
	}
}

// maxLost is how many blocks that a client saw a kill may lose: those set
// between the last sync and the kill. At a one-second period that is the
// newest; mining on every transaction sets heads faster than syncs end.
func maxLost(period int) int {
	if period == 0 {
		return 3
	}
	return 1
}

// runAndKill runs the helper on dir, kills it delay after it is ready and
// returns the heads it reported.
func runAndKill(t *testing.T, dir string, period int, delay time.Duration) map[uint64]common.Hash {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDevChainCrashHelper$", "-test.v")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+dir, crashPeriodEnv+"="+strconv.Itoa(period))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() { // ends at the helper's EOF, which the kill brings
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	heads := map[uint64]common.Hash{}
	read := func(line string) {
		var n uint64
		var h string
		// The kill may cut the last line short: a hash that is not whole
		// was not seen whole (HexToHash would pad it into another one).
		if _, err := fmt.Sscanf(line, "head %d %s", &n, &h); err == nil && len(h) == 2+2*common.HashLength {
			heads[n] = common.HexToHash(h)
		}
	}
	// Opening a chain with a log index takes a second, and far longer
	// under -race (reading the head filter map).
	ready := time.After(2 * time.Minute)
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("helper ended before it was ready")
			}
			if line == "ready" {
				break wait
			}
		case <-ready:
			// SIGQUIT: the helper dumps its goroutines on stderr.
			_ = cmd.Process.Signal(syscall.SIGQUIT)
			time.Sleep(2 * time.Second)
			_ = cmd.Process.Kill()
			t.Fatal("helper not ready after 2m")
		}
	}
	timer := time.After(delay)
kill:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("helper ended before it was killed")
			}
			read(line)
		case <-timer:
			break kill
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for line := range lines {
		read(line)
	}
	_ = cmd.Wait()
	return heads
}

// checkReopened opens the chain in dir after a kill and checks that it is
// consistent and goes on.
func checkReopened(t *testing.T, dir string, round, period int, delay time.Duration, seen map[uint64]common.Hash) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // -race is slow
	defer cancel()
	dc, key := startCrashChain(t, dir, 0)
	defer dc.Close()
	client := dc.Client()
	from := dc.Faucet()
	head, err := client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := head.Number.Uint64()
	maxSeen := uint64(0)
	for s := range seen {
		maxSeen = max(maxSeen, s)
	}
	t.Logf("round %d (period %ds, killed after %s): head %d, the killed process saw up to %d", round, period, delay, n, maxSeen)
	// Every head is synced as it is set: a kill loses at most what was set
	// while the last sync ran (one block at a one-second period).
	if lost := int(maxSeen) - int(n); lost > maxLost(period) {
		t.Errorf("round %d: reopened at head %d, but the killed process had seen block %d", round, n, maxSeen)
	}
	var txs uint64
	for i := uint64(1); i <= n; i++ {
		block, err := client.BlockByNumber(ctx, new(big.Int).SetUint64(i))
		if err != nil {
			t.Fatalf("round %d: block %d of head %d: %v", round, i, n, err)
		}
		if h, ok := seen[i]; ok && h != block.Hash() {
			t.Errorf("round %d: block %d is %s, the killed process saw %s", round, i, block.Hash(), h)
		}
		receipts, err := client.BlockReceipts(ctx, i)
		if err != nil {
			t.Fatalf("round %d: receipts of block %d: %v", round, i, err)
		}
		if len(receipts) != len(block.Transactions()) {
			t.Errorf("round %d: block %d has %d transactions and %d receipts", round, i, len(block.Transactions()), len(receipts))
		}
		for _, tx := range block.Transactions() {
			sender, err := types.Sender(types.LatestSignerForChainID(dc.ChainID()), tx)
			if err != nil {
				t.Fatal(err)
			}
			if sender == from {
				txs++
			}
		}
	}
	// Blocks the killed process saw past the head are gone; drop them so
	// that the next round may see others at those numbers.
	for s := range seen {
		if s > n {
			delete(seen, s)
		}
	}
	nonce, err := client.NonceAt(ctx, from, nil)
	if err != nil {
		t.Fatalf("round %d: nonce at head %d: %v", round, n, err)
	}
	if nonce != txs {
		t.Fatalf("round %d: nonce at head %d is %d, but blocks 1..%d hold %d of its transactions", round, n, nonce, n, txs)
	}
	pending, err := client.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	if pending < nonce {
		t.Fatalf("round %d: pending nonce %d below the nonce at head %d", round, pending, nonce)
	}
	// The reopened chain goes on: a transfer at the pending nonce is mined,
	// with every one before it.
	receipt, err := Transact(ctx, client, key, &common.Address{0xbe, 0xef}, big.NewInt(1), nil)
	if err != nil {
		t.Fatalf("round %d: transfer after reopening: %v", round, err)
	}
	if receipt.BlockNumber.Uint64() <= n {
		t.Fatalf("round %d: transfer mined in block %d, not after the head %d", round, receipt.BlockNumber, n)
	}
	if got, err := client.NonceAt(ctx, from, receipt.BlockNumber); err != nil || got < pending+1 {
		t.Fatalf("round %d: nonce after the transfer = %d (%v), want at least %d", round, got, err, pending+1)
	}
	if err := dc.Close(); err != nil {
		t.Fatal(err)
	}
}
