//go:build race

package sim

// Under the race detector (make test) a run costs several times more CPU
// (the pure-Go SQLite above all): the default run has fewer seeds.
const (
	defaultSeeds = 40
	defaultSteps = 160
)
