//go:build !race

package sim

// Without the race detector the default run (go test ./tests/sim/) has
// more seeds; make sim runs 10,000. The steps are the same in both, so a
// seed replays alike.
const (
	defaultSeeds = 300
	defaultSteps = 160
)
