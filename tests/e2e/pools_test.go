package e2e

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// The end-to-end tests of sender pools (issue 30, docs/pools.md), on
// PostgreSQL and geth --dev behind a busy mempool (poolStack: a sender's
// 17th pending transaction is refused with geth's "txpool is full").

// TestPoolBurst: the same burst of transfers from one account, then
// through a pool of 8 whose treasury is that account. Every transfer
// through the pool completes exactly once (on the node: mined with status
// 1 as the service reports it, each recipient holds exactly its value),
// from a member of the pool, each member's nonces on the node are 0..k-1
// and it sent nothing else; and the pool drains in fewer blocks than the
// one account, which the busy mempool holds to 16 a block (blocks, not
// wall time: from the head before the first request, the pool's creation
// and top-ups included, to the block of the last transfer).
func TestPoolBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary, geth and PostgreSQL")
	}
	const n = 240
	st := startPoolStack(t)

	head := st.head(t)
	single := st.sendPool(t, n, 1000, 16, 0, nil)
	if t.Failed() {
		t.FailNow()
	}
	st.waitEnded(t, single, 3*time.Minute)
	singleBlocks := lastBlock(st.onChain(t, single)) - head
	refusedSingle := st.proxy.Stats().PoolFull

	head = st.head(t)
	poolID, members := st.createPool(t, "burst", 8)
	sent := st.sendPool(t, n, 5000, 16, 0, map[string]any{"pool": poolID})
	if t.Failed() {
		t.FailNow()
	}
	st.waitEnded(t, sent, 3*time.Minute)
	chain := st.onChain(t, sent)
	per := st.checkMembers(t, poolID, members, sent, chain)
	poolBlocks := lastBlock(chain) - head
	t.Logf("%d transfers: one account %d blocks (%d refusals of the busy mempool); a pool of 8 %d blocks (creation and top-ups included; %d refusals), per member %v",
		n, singleBlocks, refusedSingle, poolBlocks, st.proxy.Stats().PoolFull-refusedSingle, slices.Sorted(maps.Values(per)))
	if refusedSingle == 0 {
		t.Errorf("the busy mempool refused none of one account's burst: it is not busy")
	}
	if len(per) < 2 {
		t.Errorf("the pool's transfers came from %d member(s), want them spread", len(per))
	}
	if poolBlocks >= singleBlocks {
		t.Errorf("the pool drained in %d blocks, one account in %d: want fewer", poolBlocks, singleBlocks)
	}
}

// TestPoolOrderingKey: transfers through a pool of 4 with 6 ordering keys,
// each key's sent one after the other, beside transfers without a key:
// every key's transfers complete in request order (by block, then index
// in the block, on the node), and each carries its key.
func TestPoolOrderingKey(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary, geth and PostgreSQL")
	}
	st := startPoolStack(t)
	poolID, members := st.createPool(t, "ordered", 4)
	done := make(chan []*poolSent, 1)
	go func() { // owned by the test: it waits on done
		done <- st.sendPool(t, 60, 9000, 4, 0, map[string]any{"pool": poolID})
	}()
	keyed := st.sendPool(t, 6*10, 1000, 6, 6, map[string]any{"pool": poolID})
	unkeyed := <-done
	if t.Failed() {
		t.FailNow()
	}
	all := append(slices.Clone(keyed), unkeyed...)
	st.waitEnded(t, all, 3*time.Minute)
	chain := st.onChain(t, all)
	st.checkMembers(t, poolID, members, all, chain)
	last := map[string]*poolSent{}
	for _, p := range keyed { // request order per key
		if p.tx["orderingKey"] != p.key {
			t.Fatalf("transfer %s: orderingKey %v, want %s", p.id, p.tx["orderingKey"], p.key)
		}
		if prev := last[p.key]; prev != nil {
			a, b := chain[prev.id], chain[p.id]
			if b.block < a.block || (b.block == a.block && b.index <= a.index) {
				t.Errorf("key %s: transfer %d (block %d index %d) completed before transfer %d requested before it (block %d index %d)",
					p.key, p.value, b.block, b.index, prev.value, a.block, a.index)
			}
		}
		last[p.key] = p
	}
}

// TestPoolKillDuringBurst: the service is killed (SIGKILL) while a burst
// through a pool of 8 is being sent and topped up, and restarted on the
// same data: every accepted transfer completes exactly once (nothing
// lost, nothing duplicated on the node: recipients hold exactly their
// value, each member's confirmed nonce is its transfers'), and no top-up
// is paid twice: the treasury's transactions on the node, per member and
// asset, are exactly the completed top-ups the service reports, and it
// sent nothing else.
func TestPoolKillDuringBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary, geth and PostgreSQL")
	}
	st := startPoolStack(t)
	head := st.head(t)
	poolID, members := st.createPool(t, "crash", 8)
	sent := st.sendPool(t, 200, 1000, 16, 0, map[string]any{"pool": poolID})
	if t.Failed() {
		t.FailNow()
	}
	// Let the top-ups and part of the burst reach the chain, then kill.
	eventually(t, time.Minute, "a transfer of the pool mined", func() bool {
		tx := st.s.must(200, "GET", "/transactions/"+sent[0].id, st.s.Token, nil).(map[string]any)
		return tx["status"] != "new" && tx["status"] != "waiting"
	})
	time.Sleep(1200 * time.Millisecond)
	st.s.kill()
	st.restart(t)

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
	if len(completed) == 0 {
		t.Fatalf("the service reports no top-up of the pool's members")
	}
	if !maps.Equal(completed, onNode) {
		t.Fatalf("the treasury's transactions on the node %v, the service's completed top-ups %v: want the same (a top-up paid twice, or one the service does not know)", onNode, completed)
	}
}
