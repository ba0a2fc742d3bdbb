// Package lifecycle gives every txengine actor the same supervision and the
// same timers.
//
// Supervision: an actor that panics is restarted, never stopped for good:
// after a delay that grows with the failures of the last minute (200 ms per
// failure, plus up to 0.5 s of noise), forever. Its mailbox waits
// meanwhile; the message it failed on is dropped (protoactor's rule), so an
// actor that resumes must find its work again from the store, as every
// txengine actor does on Started. The restart is announced to the failing
// instance with *actor.Restarting, which every actor treats as
// *actor.Stopping: its timers stop, its goroutines end, its children are
// stopped by protoactor; then *actor.Started reaches the new incarnation.
//
// Timers: Timer (one message after a delay) and Ticker (one message every
// period) post to their actor's mailbox from time.AfterFunc: no goroutine
// waits on them, and after Stop none fires again.
package lifecycle

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// restartEvery is the delay added per failure in the window before a
// restart; restartWindow is how long failures are remembered.
const (
	restartEvery  = 200 * time.Millisecond
	restartWindow = time.Minute
)

// strategy is the one supervision strategy of every txengine actor. It
// holds no state (protoactor keeps the failure counts per child), and the
// actor system keeps one guardian per strategy value: one value, one
// guardian for all the actors spawned from the root.
var strategy = actor.NewExponentialBackoffStrategy(restartWindow, restartEvery)

// Props returns the props of the actors that producer makes, with the
// supervision they apply to their children declared. An actor spawned from
// the root gets its own with Guarded.
func Props(producer actor.Producer) *actor.Props {
	return actor.PropsFromProducer(producer, actor.WithSupervisor(strategy))
}

// Guarded declares the supervision of an actor spawned from the root (its
// guardian) on p, and returns p. protoactor refuses it on a child's props.
func Guarded(p *actor.Props) *actor.Props {
	return p.Configure(actor.WithGuardian(strategy))
}

// Ends reports whether msg ends an incarnation of an actor: it is stopping,
// or restarting after a failure. Actors release what the incarnation holds
// (timers, goroutines, contexts) on either.
func Ends(msg any) bool {
	switch msg.(type) {
	case *actor.Stopping, *actor.Restarting:
		return true
	}
	return false
}

// Timer sends its actor one message after a delay. The zero value is
// stopped. Use it from the actor's Receive only.
type Timer struct {
	t *time.Timer
}

// Set sends msg to c's actor after d, replacing the message pending, if
// any.
func (t *Timer) Set(c actor.Context, d time.Duration, msg any) {
	t.Stop()
	root, self := c.ActorSystem().Root, c.Self()
	t.t = time.AfterFunc(d, func() { root.Send(self, msg) })
}

// IsSet reports whether the timer was set and not stopped since: the
// message may have been sent already (an actor that must know stops the
// timer when the message arrives).
func (t *Timer) IsSet() bool { return t.t != nil }

// Stop cancels the pending message, if any.
func (t *Timer) Stop() {
	if t.t != nil {
		t.t.Stop()
		t.t = nil
	}
}

// Ticker sends its actor one message every period. The zero value is
// stopped. Start and Stop are for the actor's Receive only.
type Ticker struct {
	run *tickRun
}

// tickRun is one Start's schedule: each firing sends and schedules the
// next one unless stopped, under mu so that no firing outlives Stop.
type tickRun struct {
	mu      sync.Mutex
	next    *time.Timer
	stopped bool
}

// Start sends msg to c's actor every every, replacing an earlier schedule.
func (t *Ticker) Start(c actor.Context, every time.Duration, msg any) {
	t.Stop()
	root, self := c.ActorSystem().Root, c.Self()
	run := &tickRun{}
	var fire func()
	fire = func() {
		run.mu.Lock()
		defer run.mu.Unlock()
		if run.stopped {
			return
		}
		root.Send(self, msg)
		run.next = time.AfterFunc(every, fire)
	}
	run.mu.Lock()
	run.next = time.AfterFunc(every, fire)
	run.mu.Unlock()
	t.run = run
}

// Stop ends the schedule: no message is sent after Stop returns.
func (t *Ticker) Stop() {
	if t.run == nil {
		return
	}
	t.run.mu.Lock()
	t.run.stopped = true
	t.run.next.Stop()
	t.run.mu.Unlock()
	t.run = nil
}
