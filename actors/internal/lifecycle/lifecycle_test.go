package lifecycle

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

type (
	ping     struct{}
	boom     struct{}
	setTimer struct{ d time.Duration }
	stopAll  struct{}
)

// counter counts pings; it panics on boom. Each incarnation starts a
// ticker and stops it when it ends (Ends).
type counter struct {
	pings, started *atomic.Int64
	every          time.Duration
	ticker         Ticker
	timer          Timer
}

func (a *counter) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.started.Add(1)
		a.ticker.Start(c, a.every, ping{})
	case ping:
		a.pings.Add(1)
	case boom:
		panic("boom")
	case setTimer:
		a.timer.Set(c, m.d, ping{})
	case stopAll:
		a.ticker.Stop()
		a.timer.Stop()
	default:
		if Ends(m) {
			a.ticker.Stop()
			a.timer.Stop()
		}
	}
}

// TestRestartKeepsOneTicker: a panic restarts the actor (supervision
// declared by Props), the failed incarnation's ticker stops with it, and
// the new one ticks alone: the pings per period stay one.
func TestRestartKeepsOneTicker(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	var pings, started atomic.Int64
	const every = 20 * time.Millisecond
	pid := sys.Root.Spawn(Guarded(Props(func() actor.Actor { return &counter{pings: &pings, started: &started, every: every} })))
	defer func() { _ = sys.Root.StopFuture(pid).Wait() }()
	time.Sleep(5 * every)
	for range 3 {
		sys.Root.Send(pid, boom{})
	}
	deadline := time.Now().Add(10 * time.Second)
	for started.Load() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("started %d times after 3 panics, want 4 (restarted each time)", started.Load())
		}
		time.Sleep(every)
	}
	before := pings.Load()
	const window = 25 * every
	time.Sleep(window)
	got := pings.Load() - before
	t.Logf("%d pings in %s after 3 restarts (one ticker: about %d)", got, window, window/every)
	if got > int64(window/every)*3/2 || got == 0 {
		t.Fatalf("%d pings in %s: want about %d (one live ticker)", got, window, window/every)
	}
}

// TestStopStopsEverything: after Stop neither the ticker nor the timer
// sends anything.
func TestStopStopsEverything(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	var pings, started atomic.Int64
	const every = 10 * time.Millisecond
	pid := sys.Root.Spawn(Props(func() actor.Actor { return &counter{pings: &pings, started: &started, every: every} }))
	defer func() { _ = sys.Root.StopFuture(pid).Wait() }()
	sys.Root.Send(pid, setTimer{d: 30 * every})
	time.Sleep(3 * every)
	if _, err := sys.Root.RequestFuture(pid, stopAll{}, time.Second).Result(); err != nil && err != actor.ErrTimeout {
		t.Fatal(err)
	}
	time.Sleep(2 * every) // a firing already posted may land
	after := pings.Load()
	time.Sleep(40 * every) // past the timer's 30 periods
	if got := pings.Load(); got != after {
		t.Fatalf("%d pings after Stop", got-after)
	}
	if after == 0 {
		t.Fatal("the ticker never ticked")
	}
}

// TestTimerReplaces: setting a timer again replaces the pending message.
func TestTimerReplaces(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	var pings, started atomic.Int64
	pid := sys.Root.Spawn(Props(func() actor.Actor { return &counter{pings: &pings, started: &started, every: time.Hour} }))
	defer func() { _ = sys.Root.StopFuture(pid).Wait() }()
	for range 5 {
		sys.Root.Send(pid, setTimer{d: 50 * time.Millisecond})
	}
	time.Sleep(300 * time.Millisecond)
	if got := pings.Load(); got != 1 {
		t.Fatalf("%d pings from 5 sets of one timer, want 1", got)
	}
}
