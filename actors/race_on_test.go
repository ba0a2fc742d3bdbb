//go:build race

package actors_test

import "time"

// blockInterval is how often the simulated chain of the fixture mines.
// Under the race detector the watcher follows far fewer blocks per second
// (about 15 seen on a loaded machine) than 10 ms blocks make, falls ever
// further behind the head and never reaches the blocks of a burst: mine
// slower there.
const blockInterval = 100 * time.Millisecond

// raceDetector reports whether the tests run under -race.
const raceDetector = true
