package pools

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
)

// countingPending counts the reads of the pending pools.
type countingPending struct{ reads atomic.Int64 }

func (c *countingPending) PendingPools(context.Context, string) ([]string, error) {
	c.reads.Add(1)
	return nil, nil
}

// TestKeeperRescansOnlyWhenLeader: a keeper reads the pending pools when it
// starts and, as a network leader's (cluster mode: sends reach other
// nodes), at every look too.
func TestKeeperRescansOnlyWhenLeader(t *testing.T) {
	for _, rescan := range []bool{false, true} {
		store := &countingPending{}
		k := engine.NewPoolKeeper(engine.PoolKeeperConfig{Network: &engine.Network{Name: "dev"}})
		sys := actor.NewActorSystem()
		pid := sys.Root.Spawn(lifecycle.Guarded(Props(Config{Keeper: k, Network: "dev", Store: store,
			Log: slog.New(slog.DiscardHandler), Every: 20 * time.Millisecond, Rescan: rescan})))
		time.Sleep(300 * time.Millisecond)
		_ = sys.Root.StopFuture(pid).Wait()
		sys.Shutdown()
		n := store.reads.Load()
		if rescan && n < 5 || !rescan && n != 1 {
			t.Fatalf("rescan %v: %d reads of the pending pools in 300 ms of 20 ms looks", rescan, n)
		}
	}
}
