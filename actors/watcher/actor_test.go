package watcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
)

// countingChain answers HeaderByNumber and counts the requests for the
// latest head (what every poll asks first); other methods are not used with
// an empty chain.
type countingChain struct {
	engine.Node
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

// Unmine has nothing to move back: nothing is ever mined here (the
// follower asks at its first poll, for rows a previous process may have
// left above the cursor).
func (s *cursorStore) Unmine(context.Context, string, uint64) ([]string, error) { return nil, nil }

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

// panickyChain is a countingChain whose poll number panicAt panics.
type panickyChain struct {
	countingChain
	panicAt int64
}

func (c *panickyChain) HeaderByNumber(ctx context.Context, n *big.Int) (*types.Header, error) {
	h, err := c.countingChain.HeaderByNumber(ctx, n)
	if n == nil && c.polls.Load() == c.panicAt {
		panic("injected: the node client panicked")
	}
	return h, err
}

// TestWatcherRestartsAfterAPanic: a panic in a poll restarts the watcher
// (lifecycle supervision, as it is spawned in production): the failed
// incarnation's head source is closed and a new one started, and polling
// goes on at one timer's pace (the failed incarnation's timer is gone).
func TestWatcherRestartsAfterAPanic(t *testing.T) {
	const interval = 5 * time.Millisecond
	chain := &panickyChain{panicAt: 3}
	net := &engine.Network{Name: "n", ChainID: big.NewInt(1), PollInterval: interval, Chain: chain}
	var mu sync.Mutex
	var sources []*fakeHeads
	cfg := Config{Network: net, Store: &cursorStore{}, Clock: engine.SystemClock{}, Log: slog.New(slog.DiscardHandler), Waker: noWaker{},
		NewHeads: func() Heads {
			mu.Lock()
			defer mu.Unlock()
			h := &fakeHeads{wake: make(chan struct{}, 1)}
			sources = append(sources, h)
			return h
		}}
	// Heads connected: the timer polls every SafetyPollFactor intervals.
	every := SafetyPollFactor * interval
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	pid := sys.Root.Spawn(lifecycle.Guarded(Props(cfg)))
	eventually(t, "a second head source (the restart)", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(sources) == 2
	})
	mu.Lock()
	first := sources[0]
	mu.Unlock()
	eventually(t, "the failed incarnation's head source closed", first.closed.Load)
	before := chain.polls.Load()
	window := 20 * every
	time.Sleep(window)
	polls := chain.polls.Load() - before
	t.Logf("%d polls in %s after the restart (one timer: about %d)", polls, window, window/every)
	if polls == 0 || polls > int64(window/every)*3/2 {
		t.Fatalf("%d polls in %s after the restart, want about %d", polls, window, window/every)
	}
	if err := sys.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !sources[1].closed.Load() {
		t.Fatal("the second head source is open after the stop")
	}
}

// rateLimitedChain answers its first failFor head requests with HTTP 429,
// as a busy hosted provider does, then like countingChain.
type rateLimitedChain struct {
	countingChain
	failFor int64
}

func (c *rateLimitedChain) HeaderByNumber(ctx context.Context, n *big.Int) (*types.Header, error) {
	h, err := c.countingChain.HeaderByNumber(ctx, n)
	if n == nil && c.polls.Load() <= c.failFor {
		return nil, fmt.Errorf("latest head: %w", rpc.HTTPError{StatusCode: 429, Status: "429 Too Many Requests", Body: []byte("rate limited")})
	}
	return h, err
}

// TestRateLimitedPollRetriesInSeconds: a poll refused with HTTP 429 (or one
// whose answer came too late) is retried after a short jittered pause, at
// most 2 s however many came in a row, not after the 15 s of a node that is
// down (ENGINE.md promise 13); other failures back off as before.
func TestRateLimitedPollRetriesInSeconds(t *testing.T) {
	a := &Actor{cfg: Config{Network: &engine.Network{PollInterval: time.Second}}}
	limited := fmt.Errorf("poll: %w", rpc.HTTPError{StatusCode: 429, Status: "429 Too Many Requests"})
	slow := fmt.Errorf("poll: %w", context.DeadlineExceeded)
	for _, err := range []error{limited, slow} {
		for n := 1; n <= 12; n++ {
			a.failures = n
			for range 20 {
				if got := a.nextPoll(err); got <= 0 || got > maxQuickBackoff {
					t.Fatalf("%v, %d in a row: next poll in %s, want in (0, %s]", err, n, got, maxQuickBackoff)
				}
			}
		}
	}
	a.failures = 6
	if got := a.nextPoll(errors.New("connection refused")); got != maxPollBackoff {
		t.Fatalf("node down, 6 in a row: next poll in %s, want %s", got, maxPollBackoff)
	}
}

// TestWatcherGetsPastRateLimits: four rate-limited polls in a row delay the
// watcher by seconds (four short pauses), not by 1+2+4+8 s.
func TestWatcherGetsPastRateLimits(t *testing.T) {
	chain := &rateLimitedChain{failFor: 4}
	net := &engine.Network{Name: "n", ChainID: big.NewInt(1), PollInterval: time.Second, Chain: chain}
	cfg := Config{Network: net, Store: &cursorStore{}, Clock: engine.SystemClock{}, Log: slog.New(slog.DiscardHandler), Waker: noWaker{}}
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	began := time.Now()
	pid := sys.Root.Spawn(Props(cfg))
	deadline := time.Now().Add(7 * time.Second)
	for chain.polls.Load() < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("%d polls in %s, want the fifth (after 4 rate limits) within 7 s", chain.polls.Load(), time.Since(began))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("past 4 rate-limited polls in %s", time.Since(began))
	if err := sys.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
}

// hangingConditions is a ConditionStore whose reads wait for their
// context (a database connection that hung), or for release.
type hangingConditions struct {
	engine.ConditionStore
	release chan struct{}
	calls   atomic.Int64
}

func (s *hangingConditions) ExpireWaiting(ctx context.Context, _ string, _ time.Time, _ int) ([]string, error) {
	s.calls.Add(1)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.release:
		return nil, errors.New("released")
	}
}

func (s *hangingConditions) Waiting(ctx context.Context, _, _ string, _ int) ([]*engine.Transaction, error) {
	s.calls.Add(1)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.release:
		return nil, errors.New("released")
	}
}

func (s *hangingConditions) Dependents(ctx context.Context, _ []string) ([]*engine.Transaction, error) {
	return s.Waiting(ctx, "", "", 0)
}

// TestWatcherConditionsHaveADeadline: a database that does not answer the
// sweep of waiting transactions holds the watcher for ConditionsTimeout,
// not for ever: it still answers and polls.
func TestWatcherConditionsHaveADeadline(t *testing.T) {
	store := &hangingConditions{release: make(chan struct{})}
	defer close(store.release)
	chain := &countingChain{}
	net := &engine.Network{Name: "n", ChainID: big.NewInt(1), PollInterval: 20 * time.Millisecond, Chain: chain}
	log := slog.New(slog.DiscardHandler)
	cfg := Config{Network: net, Store: &cursorStore{}, Clock: engine.SystemClock{}, Log: log, Waker: noWaker{},
		Conditions: engine.NewConditions(store, engine.SystemClock{}, log), ConditionsTimeout: 50 * time.Millisecond}
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	pid := sys.Root.Spawn(Props(cfg))
	eventually(t, "a sweep", func() bool { return store.calls.Load() >= 1 })
	if _, err := sys.Root.RequestFuture(pid, &HeadRequest{}, time.Second).Result(); err != nil {
		t.Fatalf("the watcher does not answer while the sweep hangs: %v", err)
	}
	eventually(t, "polls go on", func() bool { return chain.polls.Load() >= 3 })
}
