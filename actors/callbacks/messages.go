// Package callbacks holds the callback dispatcher actor: one per process, it
// polls the durable callback outbox and hands due rows to an
// engine.Dispatcher, which delivers each in its own goroutine. The logic
// lives in engine.Dispatcher; this is its actor shell.
package callbacks

// tick is the actor's periodic poll of the outbox.
type tick struct{}

// prune is the actor's periodic pruning of ended outbox rows and old
// subscription deliveries.
type prune struct{}

// Nudge asks the actor to poll the outbox now (for example right after a
// transaction ended) instead of at its next tick.
type Nudge struct{}

// DepthRequest asks for the number of pending outbox rows and of deliveries
// in flight; the answer is *Depth.
type DepthRequest struct{}

// Depth answers DepthRequest.
type Depth struct {
	// Pending is the number of pending outbox rows (the outbox depth).
	Pending int
	// InFlight is the number of deliveries running.
	InFlight int
	Err      error
}
