package sim

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Environment of the simulation test (the Makefile's sim target sets them).
const (
	envSeeds   = "TXENGINE_SIM_SEEDS"   // how many seeds (default defaultSeeds)
	envSeed    = "TXENGINE_SIM_SEED"    // one seed only (a replay)
	envFirst   = "TXENGINE_SIM_FIRST"   // the first seed of the range (default 1)
	envVerbose = "TXENGINE_SIM_VERBOSE" // the engine's log on stderr
)

// defaultSeeds is what go test ./tests/sim/ runs (part of make test).
const defaultSeeds = 200

// baseConfig is the configuration of every seed of the test.
func baseConfig(t *testing.T, seed int64) Config {
	cfg := Config{Seed: seed, Dir: t.TempDir(), Steps: 240, QuietBlocks: 150, Disabled: knownFindings()}
	if os.Getenv(envVerbose) != "" {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return cfg
}

// knownFindings are the fault kinds left out of the runs until the fix of
// the finding of issue 27 that they trip is merged; each has a regression
// seed in TestSimulationKnownFindings.
func knownFindings() map[string]string {
	const f2 = "finding 2 (engine/submit.go actOnSend): a give-back of a refused tail's nonce that fails returns before s.next is set; the next batch skips the freed nonce, a gap nothing repairs"
	const f3b = "finding 3b (engine/submit.go fundsReserved): an insufficient-funds refusal without amounts (Hardhat, Anvil) while others are pending is taken as funds reserved (transient) forever: the transaction keeps its nonce, never ends, and the account's later ones wait"
	const doctor = "issue 27 item 2 (nonce doctor, not merged): a nonce the chain went back below (a foreign transaction dropped by a reorg) is never filled; the account's transactions above it wait forever"
	const f4 = "finding 4 (engine/submit.go, revert.go): an estimate error that is neither a revert nor insufficient funds (geth's \"gas required exceeds allowance\") leaves the transaction new, retried forever, and the account's later transactions wait behind it"
	return map[string]string{
		VariantKey(refGasAllowance, "geth"):         f4,
		FaultReorgDropsForeign:                      doctor,
		VariantKey(refInsufficientFunds, "hardhat"): f3b,
		VariantKey(refInsufficientFunds, "anvil"):   f3b,
		FaultStoreLost + "@ReleaseNonce":            f2,
		FaultStoreTransient + "@ReleaseNonce":       f2,
		FaultStoreSlow + "@ReleaseNonce":            f2,
		FaultCrashCall + "@ReleaseNonce":            f2,
	}
}

// seeds returns the seeds to run: the one of envSeed, or envSeeds from envFirst.
func seeds(t *testing.T) []int64 {
	if s := os.Getenv(envSeed); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", envSeed, s, err)
		}
		return []int64{n}
	}
	count, first := int64(defaultSeeds), int64(1)
	for env, v := range map[string]*int64{envSeeds: &count, envFirst: &first} {
		if s := os.Getenv(env); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("%s=%q: %v", env, s, err)
			}
			*v = n
		}
	}
	out := make([]int64, count)
	for i := range out {
		out[i] = first + int64(i)
	}
	return out
}

// TestSimulation runs the engine under faults for many seeds and checks
// the invariants of every run; a failing seed is printed with the command
// that replays it.
func TestSimulation(t *testing.T) {
	list := seeds(t)
	began := time.Now()
	results := make([]Result, len(list))
	errs := make([]error, len(list))
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() { // owned by the test: it waits for them
			defer wg.Done()
			for {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= len(list) {
					return
				}
				results[k], errs[k] = Run(context.Background(), baseConfig(t, list[k]))
			}
		}()
	}
	wg.Wait()
	report(t, list, results, errs, time.Since(began))
}

// report prints the totals and fails for each seed with violations.
func report(t *testing.T, list []int64, results []Result, errs []error, took time.Duration) {
	t.Helper()
	total := map[string]int{}
	var violations, accepted, completed, failed, restarts int
	var maxQuiet uint64
	for k, res := range results {
		if errs[k] != nil {
			t.Errorf("seed %d: %v (replay: make sim SEED=%d)", list[k], errs[k], list[k])
			continue
		}
		for kind, n := range res.Faults {
			total[kind] += n
		}
		accepted, completed, failed, restarts = accepted+res.Accepted, completed+res.Completed, failed+res.Failed, restarts+res.Restarts
		maxQuiet = max(maxQuiet, res.QuietBlocks)
		if len(res.Violations) > 0 {
			violations += len(res.Violations)
			t.Errorf("seed %d: %d invariant violations (replay: make sim SEED=%d):\n  %s\n  faults: %s",
				res.Seed, len(res.Violations), res.Seed, strings.Join(res.Violations, "\n  "), FormatCounts(res.Faults))
		}
	}
	t.Logf("simulation: %d seeds in %v; transactions %d (completed %d, failed %d); restarts %d; quiet phase took at most %d blocks; invariant violations %d",
		len(list), took.Round(time.Millisecond), accepted, completed, failed, restarts, maxQuiet, violations)
	t.Logf("faults injected: %s", FormatCounts(total))
	if disabled := knownFindings(); len(disabled) > 0 {
		t.Logf("left out (known findings): %s", fmt.Sprint(disabled))
	}
}
