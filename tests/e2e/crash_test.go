package e2e

import (
	"testing"
	"time"
)

// TestKillDuringBurstLosesAndDuplicatesNothing fires a burst of transfers,
// each to its own fresh address, kills the process with SIGKILL while the
// burst is being mined, restarts it on the same data dir, and checks that
// every transfer that got a 202 completes and that every address holds
// exactly its amount: nothing accepted is lost, nothing is sent twice (the
// embedded chain may also lose its newest blocks in the kill; the engine
// must notice and send their transactions again).
func TestKillDuringBurstLosesAndDuplicatesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	for _, b := range backends() {
		if b.network != "dev" {
			continue // the kill takes the embedded chain down with the service
		}
		t.Run(b.name, func(t *testing.T) { testKillDuringBurst(t, b) })
	}
}

func testKillDuringBurst(t *testing.T, b backend) {
	dir := t.TempDir()
	d := b.setup(t, dir)
	s := d.start(t, dir)
	id := demoToken(t, s)["id"].(string)

	accepted := sendBurst(t, s, id, 60, nil)
	if t.Failed() {
		return
	}
	// Let part of the burst reach the chain, then kill.
	deadline := time.Now().Add(30 * time.Second)
	for {
		tx := s.must(200, "GET", "/transactions/"+accepted[0].id, s.Token, nil).(map[string]any)
		if tx["status"] != "new" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1200 * time.Millisecond)
	s.kill()

	s2 := d.start(t, dir)
	checkBurstCompletedOnce(t, s2, id, accepted, 90*time.Second)
}
