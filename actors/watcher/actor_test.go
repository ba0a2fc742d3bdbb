package watcher

import (
	"context"
	"errors"
	"log/slog"
	"math/big"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine"
)

// countingChain answers HeaderByNumber and counts the requests for the
// latest head (what every poll asks first); other methods are not used with
// an empty chain.
type countingChain struct {
	engine.Chain
	polls atomic.Int64
}

func (c *countingChain) HeaderByNumber(_ context.Context, n *big.Int) (*types.Header, error) {
	if n == nil {
		c.polls.Add(1)
	}
	return &types.Header{Number: big.NewInt(5)}, nil
}

// cursorStore holds the cursor; nothing is ever submitted.
type cursorStore struct {
	engine.FollowerStore
	mu     sync.Mutex
	cursor uint64
	hash   common.Hash
	set    bool
}

func (s *cursorStore) Cursor(context.Context, string) (uint64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursor, s.set, nil
}
func (s *cursorStore) SetCursor(_ context.Context, _ string, n uint64, h common.Hash) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cursor, s.set, s.hash = n, true, h
	return nil
}
func (s *cursorStore) ProcessedHash(_ context.Context, _ string, n uint64) (common.Hash, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hash, s.set && n == s.cursor, nil
}
func (s *cursorStore) SubmittedByHash(context.Context, string, []common.Hash) ([]*engine.Transaction, error) {
	return nil, nil
}

type fakeHeads struct {
	wake            chan struct{}
	started, closed atomic.Bool
}

func (h *fakeHeads) Start(context.Context)    { h.started.Store(true) }
func (h *fakeHeads) C() <-chan struct{}       { return h.wake }
func (h *fakeHeads) Connected() (bool, error) { return true, nil }
func (h *fakeHeads) Close()                   { h.closed.Store(true) }

type noWaker struct{}

func (noWaker) Wake(string, string, bool) {}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWatcherPollsOnHeads: with a head source the watcher polls on every
// wake-up, not on its (here one hour) timer, and closes the source when it
// stops.
func TestWatcherPollsOnHeads(t *testing.T) {
	for _, withHeads := range []bool{false, true} {
		chain := &countingChain{}
		net := &engine.Network{Name: "n", ChainID: big.NewInt(1), PollInterval: time.Hour, Chain: chain}
		heads := &fakeHeads{wake: make(chan struct{}, 1)}
		cfg := Config{Network: net, Store: &cursorStore{}, Clock: engine.SystemClock{}, Log: slog.New(slog.DiscardHandler), Waker: noWaker{}}
		if withHeads {
			cfg.NewHeads = func() Heads { return heads }
		}
		sys := actor.NewActorSystem()
		pid := sys.Root.Spawn(Props(cfg))
		eventually(t, "the first poll", func() bool { return chain.polls.Load() == 1 })
		for i := 0; withHeads && i < 3; i++ {
			select {
			case heads.wake <- struct{}{}:
			case <-time.After(time.Second):
				t.Fatal("wake-up not taken")
			}
			want := int64(i + 2)
			eventually(t, "a poll on the head", func() bool { return chain.polls.Load() == want })
		}
		time.Sleep(50 * time.Millisecond)
		if !withHeads && chain.polls.Load() != 1 {
			t.Fatalf("without a head source: %d polls, want 1 (timer of an hour)", chain.polls.Load())
		}
		if err := sys.Root.StopFuture(pid).Wait(); err != nil {
			t.Fatal(err)
		}
		if withHeads && (!heads.started.Load() || !heads.closed.Load()) {
			t.Fatalf("head source started %v closed %v", heads.started.Load(), heads.closed.Load())
		}
		sys.Shutdown()
	}
}

// TestPollBacksOffWhileFailing: after failed polls the pause doubles from
// the poll interval up to 15 s, and a successful poll goes back to it.
func TestPollBacksOffWhileFailing(t *testing.T) {
	a := &Actor{cfg: Config{Network: &engine.Network{PollInterval: time.Second}}}
	fail := errors.New("connection refused")
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 15 * time.Second, 15 * time.Second} {
		a.failures = i + 1
		if got := a.nextPoll(fail); got != want {
			t.Errorf("after %d failures: next poll in %s, want %s", i+1, got, want)
		}
	}
	a.failures = 0
	if got := a.nextPoll(nil); got != time.Second {
		t.Errorf("after a success: next poll in %s, want 1s", got)
	}
}
