package actors

import (
	"context"
	"io"
	"log/slog"
	"math/big"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/watcher"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm"
	"github.com/txengine/txengine/engine/evm/evmtest"
	"github.com/txengine/txengine/persistence/sqlite"
)

// Lease modes of flakyLeases.
const (
	leasesOK    = iota // the store answers
	leasesFail         // every acquisition fails at once
	leasesHang         // every acquisition hangs until its context ends
	leasesPanic        // the next acquisition panics (in the leader), then leasesOK
)

// flakyLeases is the store's LeaseStore whose AcquireNetworkLease can be
// made to fail or hang; it records when the last successful one was sent.
type flakyLeases struct {
	LeaseStore
	mu     sync.Mutex
	mode   int
	lastOK time.Time
	calls  int
}

// panicked reports whether the panic set with leasesPanic happened.
func (f *flakyLeases) panicked() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mode != leasesPanic
}

// acquisitions returns how many acquisitions were asked so far.
func (f *flakyLeases) acquisitions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *flakyLeases) set(mode int) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = mode
	return f.lastOK
}

func (f *flakyLeases) AcquireNetworkLease(ctx context.Context, network, node string, ttl time.Duration) (bool, int64, error) {
	sent := time.Now()
	f.mu.Lock()
	mode := f.mode
	f.calls++
	if mode == leasesPanic {
		f.mode = leasesOK
	}
	f.mu.Unlock()
	switch mode {
	case leasesPanic:
		panic("injected: the lease store panicked")
	case leasesFail:
		return false, 0, context.DeadlineExceeded
	case leasesHang:
		<-ctx.Done()
		return false, 0, ctx.Err()
	}
	held, epoch, err := f.LeaseStore.AcquireNetworkLease(ctx, network, node, ttl)
	if err == nil && held {
		f.mu.Lock()
		f.lastOK = sent
		f.mu.Unlock()
	}
	return held, epoch, err
}

// nopWaker wakes nothing.
type nopWaker struct{}

func (nopWaker) Wake(string, string, bool) {}

// leaderFixture is one network leader over an SQLite store and a simulated
// chain that mines a block every 50 ms.
type leaderFixture struct {
	t      *testing.T
	store  *sqlite.Store
	leases *flakyLeases
	sys    *actor.ActorSystem
	pid    *actor.PID
	// node is the System the leader belongs to.
	node *System
}

func newLeaderFixture(t *testing.T, ttl time.Duration) *leaderFixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	sim := evmtest.Start(t, 50*time.Millisecond)
	client, err := evm.Dial(ctx, sim.IPC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	net := &engine.Network{Name: "dev", ChainID: big.NewInt(1337), PollInterval: 20 * time.Millisecond, Chain: client}
	f := &leaderFixture{t: t, store: st, leases: &flakyLeases{LeaseStore: st}, sys: actor.NewActorSystem()}
	s := &System{cfg: Config{Store: st, Log: log, Clock: engine.SystemClock{}}, sys: f.sys}
	f.node = s
	cc := &ClusterConfig{Node: "node-a", Leases: f.leases, NetworkLeaseTTL: ttl, RecoverEvery: time.Hour}
	f.pid = f.sys.Root.Spawn(leaderProps(s, cc, net, watcher.Config{Network: net, Clock: engine.SystemClock{}, Log: log, Waker: nopWaker{}}))
	t.Cleanup(func() {
		_ = f.sys.Root.StopFuture(f.pid).Wait()
		f.sys.Shutdown()
	})
	return f
}

// state asks the leader for its state.
func (f *leaderFixture) state() leaderState {
	f.t.Helper()
	res, err := f.sys.Root.RequestFuture(f.pid, leaderStatus{}, 5*time.Second).Result()
	if err != nil {
		f.t.Fatalf("leader status: %v", err)
	}
	return res.(leaderState)
}

// waitFor polls the leader's state until ok holds, and returns when.
func (f *leaderFixture) waitFor(what string, timeout time.Duration, ok func(leaderState) bool) time.Time {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := f.state()
		if ok(st) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: not within %s (state %+v)", what, timeout, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// following waits until the leader holds the lease and runs its children,
// and the watcher has written its cursor under the lease.
func (f *leaderFixture) following() leaderState {
	f.t.Helper()
	f.waitFor("following the network", 10*time.Second, func(s leaderState) bool { return s.Held && s.Children == 4 })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok, err := f.store.Cursor(context.Background(), "dev"); err != nil {
			f.t.Fatal(err)
		} else if ok {
			return f.state()
		}
		if time.Now().After(deadline) {
			f.t.Fatal("the watcher wrote no cursor")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLeaderDemotesBeforeTTL: a leader whose renewal fails, or hangs, stops
// its watcher and indexer before the lease's ttl has passed since the last
// renewal that succeeded (counted from when it was sent, which is no later
// than when the database set the expiry).
func TestLeaderDemotesBeforeTTL(t *testing.T) {
	const ttl = 900 * time.Millisecond
	for _, c := range []struct {
		name string
		mode int
	}{{"fails", leasesFail}, {"hangs", leasesHang}} {
		t.Run(c.name, func(t *testing.T) {
			f := newLeaderFixture(t, ttl)
			if st := f.following(); st.Epoch != 1 {
				t.Fatalf("epoch = %d, want 1", st.Epoch)
			}
			lastOK := f.leases.set(c.mode)
			stopped := f.waitFor("stop following", 2*ttl, func(s leaderState) bool { return !s.Held && s.Children == 0 })
			after := stopped.Sub(lastOK)
			t.Logf("renewal %s: stopped following %s after the last successful renewal was sent (ttl %s)", c.name, after, ttl)
			if after >= ttl {
				t.Fatalf("stopped following %s after the last renewal, not before the ttl %s", after, ttl)
			}
			// The store answers again: the leader takes the lease again (at
			// epoch 1 if it had not expired, a later one otherwise) and
			// follows again.
			f.leases.set(leasesOK)
			f.waitFor("follow again", 5*time.Second, func(s leaderState) bool { return s.Held && s.Children == 4 })
		})
	}
}

// TestLeaderDemotesWhenTheWatcherIsFenced: when the lease goes to another
// tenure between two renewals, the watcher's next write is refused and the
// leader stops following at once, without waiting for its next renewal.
// While it leads, its pool keeper is the node's (PoolStatus and the views
// read its findings); after, the node has none.
func TestLeaderDemotesWhenTheWatcherIsFenced(t *testing.T) {
	const ttl = 30 * time.Second // renewals every 10 s: none in this test
	f := newLeaderFixture(t, ttl)
	f.following()
	if f.node.keeperOf("dev") == nil {
		t.Fatal("the leader's pool keeper is not the node's")
	}
	ctx := context.Background()
	if err := f.store.ReleaseNetworkLease(ctx, "dev", "node-a"); err != nil {
		t.Fatal(err)
	}
	if held, epoch, err := f.store.AcquireNetworkLease(ctx, "dev", "node-b", ttl); err != nil || !held || epoch != 2 {
		t.Fatalf("node-b's acquisition = %v, %d, %v; want held at epoch 2", held, epoch, err)
	}
	taken := time.Now()
	stopped := f.waitFor("stop following", 5*time.Second, func(s leaderState) bool { return !s.Held && s.Children == 0 })
	t.Logf("stopped following %s after the lease went to another node", stopped.Sub(taken))
	if f.node.keeperOf("dev") != nil {
		t.Error("the node still has the pool keeper of a network it no longer leads")
	}
	cursor, _, err := f.store.Cursor(ctx, "dev")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // blocks mined meanwhile: nothing written
	if again, _, err := f.store.Cursor(ctx, "dev"); err != nil || again != cursor {
		t.Fatalf("cursor moved after the leader stopped: %d -> %d (%v)", cursor, again, err)
	}
}

// TestLeaderRestartsAfterAPanic: a panic in the leader (here in its lease
// renewal) restarts it under its declared supervision; the lease is kept
// (same epoch), the watcher and indexer run again, the failed
// incarnation's ticker is gone (renewals keep their pace: one ticker), and
// the network is followed again (the cursor moves).
func TestLeaderRestartsAfterAPanic(t *testing.T) {
	const ttl = 900 * time.Millisecond // a renewal every 300 ms
	f := newLeaderFixture(t, ttl)
	before := f.following()
	f.leases.set(leasesPanic)
	deadline := time.Now().Add(5 * time.Second)
	for !f.leases.panicked() {
		if time.Now().After(deadline) {
			t.Fatal("the injected panic never happened")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.waitFor("follow after the restart", 10*time.Second, func(s leaderState) bool { return s.Held && s.Children == 4 })
	st := f.state()
	if st.Epoch != before.Epoch {
		t.Errorf("epoch %d after the restart, want %d (the lease kept)", st.Epoch, before.Epoch)
	}
	ctx := context.Background()
	cursor, _, err := f.store.Cursor(ctx, "dev")
	if err != nil {
		t.Fatal(err)
	}
	n0 := f.leases.acquisitions()
	const window = 3 * time.Second
	time.Sleep(window)
	renewals := f.leases.acquisitions() - n0
	t.Logf("%d renewals in %s after the restart (one ticker: about %d)", renewals, window, int(window/(ttl/3)))
	if limit := int(window/(ttl/3)) * 3 / 2; renewals > limit {
		t.Errorf("%d renewals in %s, more than %d: the failed incarnation's ticker still runs", renewals, window, limit)
	}
	if again, _, err := f.store.Cursor(ctx, "dev"); err != nil || again <= cursor {
		t.Errorf("cursor %d -> %d (%v) after the restart: the network is not followed", cursor, again, err)
	}
}
