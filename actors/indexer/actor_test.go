package indexer

import (
	"context"
	"errors"
	"log/slog"
	"math/big"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm"
	"github.com/txengine/txengine/engine/evm/evmtest"
	"github.com/txengine/txengine/persistence/sqlite"
)

// panickyStore is the store whose first IndexedBlocks (read by every
// poll) panics.
type panickyStore struct {
	*sqlite.Store
	panicked atomic.Bool
	polls    atomic.Int64
}

func (s *panickyStore) IndexedBlocks(ctx context.Context, network string, limit int) ([]engine.IndexedBlock, error) {
	s.polls.Add(1)
	if s.panicked.CompareAndSwap(false, true) {
		panic("injected: the store panicked")
	}
	return s.Store.IndexedBlocks(ctx, network, limit)
}

// TestIndexerRestartsAfterAPanic: a panic in a poll restarts the indexer
// (lifecycle supervision, as spawned in production); the next incarnation
// follows the chain (its head moves with the chain's) at one timer's pace.
func TestIndexerRestartsAfterAPanic(t *testing.T) {
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
	store := &panickyStore{Store: st}
	const interval = 100 * time.Millisecond
	net := &engine.Network{Name: "dev", ChainID: big.NewInt(1337), PollInterval: interval, Chain: client}
	props, err := Props(Config{Network: net, Store: store, Log: slog.New(slog.DiscardHandler), Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	pid := sys.Root.Spawn(lifecycle.Guarded(props))
	defer func() { _ = sys.Root.StopFuture(pid).Wait() }()
	status := func() *Status {
		res, err := sys.Root.RequestFuture(pid, &StatusRequest{}, 5*time.Second).Result()
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		return res.(*Status)
	}
	deadline := time.Now().Add(10 * time.Second)
	var first uint64
	for {
		if s := status(); store.panicked.Load() && s.Err == nil && s.Head > 0 {
			first = s.Head
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no poll after the panic (panicked %v, status %+v)", store.panicked.Load(), status())
		}
		time.Sleep(20 * time.Millisecond)
	}
	polls := store.polls.Load()
	const window = 2 * time.Second
	time.Sleep(window)
	s := status()
	n := store.polls.Load() - polls
	t.Logf("head %d -> %d, %d polls in %s after the restart (one timer: about %d)", first, s.Head, n, window, window/interval)
	if s.Head <= first {
		t.Errorf("head %d -> %d: the indexer does not follow the chain after the restart", first, s.Head)
	}
	if n > int64(window/interval)*3/2 {
		t.Errorf("%d polls in %s: more than one timer", n, window)
	}
}

// headChain is an IndexChain that answers the head only.
type headChain struct {
	engine.Node
	engine.IndexChain
}

func (headChain) HeaderByNumber(context.Context, *big.Int) (*types.Header, error) {
	return &types.Header{Number: big.NewInt(10)}, nil
}

// hangingStore is an IndexerStore whose reads hang until their context
// ends (a database connection that hung).
type hangingStore struct {
	engine.IndexerStore
	reads atomic.Int64
}

func (s *hangingStore) IndexedBlocks(ctx context.Context, _ string, _ int) ([]engine.IndexedBlock, error) {
	s.reads.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestIndexerPollHasADeadline: a poll whose database read hangs fails at
// PollTimeout (the actor answers, and polls again), instead of freezing
// the indexer.
func TestIndexerPollHasADeadline(t *testing.T) {
	store := &hangingStore{}
	net := &engine.Network{Name: "dev", ChainID: big.NewInt(1337), PollInterval: 10 * time.Millisecond, Chain: headChain{}}
	props, err := Props(Config{Network: net, Store: store, Log: slog.New(slog.DiscardHandler), PollTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	pid := sys.Root.Spawn(props)
	defer func() { _ = sys.Root.StopFuture(pid).Wait() }()
	deadline := time.Now().Add(3 * time.Second)
	for store.reads.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d polls in 3 s: a hung read holds the indexer", store.reads.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, err := sys.Root.RequestFuture(pid, &StatusRequest{}, time.Second).Result()
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	if s := res.(*Status); !errors.Is(s.Err, context.DeadlineExceeded) {
		t.Fatalf("status error %v, want the poll's deadline", s.Err)
	}
}
