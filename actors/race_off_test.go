//go:build !race

package actors_test

import "time"

// blockInterval is how often the simulated chain of the fixture mines.
const blockInterval = 10 * time.Millisecond

// raceDetector reports whether the tests run under -race.
const raceDetector = false
