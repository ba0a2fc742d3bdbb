package e2e

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// TestPoolKillDuringBatches: a pool of 8 refilled first one member at a
// time while the treasury deploys its disperser and approves it for the
// token (two bursts), then, in a third burst of larger transfers, in
// batches (docs/pools.md#batches). The service is killed (SIGKILL) as soon as a
// batch of the token is accepted, and restarted on the same data: every
// transfer completes exactly once (checkMembers), and no top-up is paid
// twice: per member and asset, the treasury's payments on the node (one
// by one or as a recipient of a batch) are exactly the completed top-ups
// the service reports, and it sent nothing else.
func TestPoolKillDuringBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary, geth and PostgreSQL")
	}
	st := startPoolStack(t)
	head := st.head(t)
	poolID, members := st.createPool(t, "batches", 8)
	// Values in whole tokens: the treasury holds 1,000,000, enough for the
	// two bursts and the top-ups' headroom (up to 9 times a member's need).
	first := st.sendPool(t, 100, 1, 16, 0, map[string]any{"pool": poolID})
	st.waitEnded(t, first, 3*time.Minute)
	batchKey := engine.TopUpBatchKey(st.tokenAt.Hex())
	batchSent := func() bool {
		for _, tx := range st.poolTransactions(t, poolID) {
			if tx["orderingKey"] == batchKey {
				return true
			}
		}
		return false
	}
	// The disperser is deployed in the first burst's looks, approved in the
	// second's (once its deployment has a nonce); the third gets batches.
	second := st.sendPool(t, 100, 100, 16, 0, map[string]any{"pool": poolID})
	st.waitEnded(t, second, 3*time.Minute)
	third := st.sendPool(t, 100, 500, 16, 0, map[string]any{"pool": poolID})
	if t.Failed() {
		t.FailNow()
	}
	eventually(t, time.Minute, "a batch of the token accepted", batchSent)
	st.s.kill()
	st.restart(t)

	sent := append(append(first, second...), third...)
	st.waitEnded(t, sent, 3*time.Minute)
	chain := st.onChain(t, sent)
	st.checkMembers(t, poolID, members, sent, chain)
	eventually(t, time.Minute, "every top-up ended", func() bool {
		completed, all := st.topUpsOfService(t, poolID, members)
		return maps.Equal(completed, all)
	})
	completed, _ := st.topUpsOfService(t, poolID, members)
	onNode := st.topUpsOnChain(t, head+1, st.head(t), members)
	t.Logf("top-ups: the service %v, the node %v", completed, onNode)
	if completed["setup:disperser"] != 1 || completed["setup:approve"] != 1 {
		t.Fatalf("the service's completed setup: %d deployments, %d approvals, want one each", completed["setup:disperser"], completed["setup:approve"])
	}
	if !maps.Equal(completed, onNode) {
		t.Fatalf("the treasury's payments on the node %v, the service's completed top-ups %v: want the same (a top-up paid twice, or one the service does not know)", onNode, completed)
	}
	batches := 0
	for _, tx := range st.poolTransactions(t, poolID) {
		if k, _ := tx["orderingKey"].(string); strings.HasPrefix(k, engine.TopUpKeyPrefix+"batch:") && tx["status"] == "completed" {
			batches++
		}
	}
	if batches == 0 {
		t.Fatalf("no batch completed")
	}
}
