package sim

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
)

// Fault kinds, as counted in a run's report.
const (
	// Node: on any call.
	FaultNode429     = "node.http_429"
	FaultNode5xx     = "node.http_5xx"
	FaultNodeTimeout = "node.timeout"
	FaultNodeRPCRate = "node.rpc_rate_limit"
	// Node: on a broadcast.
	FaultRefusedForNow  = "node.refused_for_now"    // pool full, rate limit in the JSON-RPC error
	FaultLostAnswer     = "node.answer_lost"        // applied, then the answer lost
	FaultSilentDrop     = "node.silent_drop"        // "ok", but the pool dropped it
	FaultRefusedForGood = "node.refused_for_good"   // one request the node always refuses at broadcast
	FaultGasAllowance   = "node.estimate_allowance" // one request the node always refuses at estimation
	// Chain events, decided by the simulation between steps.
	FaultReorg = "chain.reorg"
	// FaultReorgDropsForeign lets a reorg drop for good a transaction
	// signed elsewhere: the chain's nonce of the account goes back and
	// nobody ever sends that nonce again.
	FaultReorgDropsForeign = "chain.reorg_drops_foreign_tx"
	FaultConsumed          = "chain.nonce_consumed_elsewhere"
	FaultPoolDrop          = "chain.pool_eviction"
	FaultPoolForget        = "chain.node_restart_forgets_pool"
	FaultHeadStall         = "chain.head_stall"
	FaultHeadJump          = "chain.head_jump"
	FaultBaseFeeJump       = "chain.base_fee_jump"
	// Store: on any call; lost commits on writes only.
	FaultStoreTransient = "store.transient"
	FaultStoreSlow      = "store.slow"
	FaultStoreLost      = "store.commit_answer_lost"
	// Crashes: between steps, or inside a node or store call (before or
	// after it took effect).
	FaultCrash     = "crash.between_steps"
	FaultCrashCall = "crash.mid_call"
)

// rates are the odds of each per-call fault, per mille, while faults are on.
var rates = map[string]int{
	FaultNode429: 20, FaultNode5xx: 12, FaultNodeTimeout: 12, FaultNodeRPCRate: 8,
	FaultRefusedForNow: 30, FaultLostAnswer: 30, FaultSilentDrop: 15,
	FaultStoreTransient: 8, FaultStoreSlow: 8, FaultStoreLost: 12,
	FaultCrashCall: 2,
}

// Faults decides, from the run's rng, which faults happen, and counts them.
// While Off (the quiet phase at the end of a run) nothing is injected and
// the rng is not drawn, so the quiet phase is as deterministic as the rest.
type Faults struct {
	rng *rand.Rand
	Off bool
	// disabled are kinds left out of this run (known, unfixed findings).
	disabled map[string]string
	counts   map[string]int
	// client is the node client whose wording the run's refusals use.
	client string
}

func newFaults(rng *rand.Rand, disabled map[string]string) *Faults {
	return &Faults{rng: rng, disabled: disabled, counts: map[string]int{}, client: clients[rng.Intn(len(clients))]}
}

// Enabled reports whether kind may happen in this run.
func (f *Faults) Enabled(kind string) bool {
	_, off := f.disabled[kind]
	return !off
}

// enabledAt reports whether kind may happen in this run at where (a store
// method, a node method): a disabled key is a kind, or "kind@where".
func (f *Faults) enabledAt(kind, where string) bool {
	_, off := f.disabled[kind+"@"+where]
	return !off && f.Enabled(kind)
}

// roll draws whether kind happens now at where, at its per-call rate, and
// counts it.
func (f *Faults) roll(kind, where string) bool {
	if f.Off || !f.enabledAt(kind, where) {
		return false
	}
	if f.rng.Intn(1000) >= rates[kind] {
		return false
	}
	f.counts[kind]++
	return true
}

// count records that kind happened (for faults decided elsewhere).
func (f *Faults) count(kind string) { f.counts[kind]++ }

// Counts returns the faults injected so far, by kind.
func (f *Faults) Counts() map[string]int {
	out := make(map[string]int, len(f.counts))
	for k, v := range f.counts {
		out[k] = v
	}
	return out
}

// crashed is what a crash inside a call panics with; the simulation
// recovers it and restarts the engine from the store.
type crashed struct{ where string }

func (c crashed) String() string { return "crash in " + c.where }

// maybeCrash panics with crashed at FaultCrashCall's rate; where is the
// store's or the node's method (as in the keys of Config.Disabled).
func (f *Faults) maybeCrash(where string) {
	if f.roll(FaultCrashCall, where) {
		panic(crashed{where: where})
	}
}

// FormatCounts prints counts sorted by kind, "kind=n" separated by spaces.
func FormatCounts(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", k, counts[k])
	}
	return b.String()
}
