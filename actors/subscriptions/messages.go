// Package subscriptions holds the subscription processor actor: one per
// network (on the holder of the network's lease in cluster mode), it
// delivers the network's logs to the event subscriptions, reorgs included.
// The logic lives in engine.SubscriptionProcessor; this is its actor shell,
// woken by the network's watcher on each new head and by its own timer.
package subscriptions

import "github.com/txengine/txengine/engine"

// tick asks the processor to poll.
type tick struct{}

// NewHead tells the processor that the network's head is Number.
type NewHead struct{ Number uint64 }

// StatusRequest asks for the processor's last poll; the answer is *Status.
type StatusRequest struct{}

// Status answers StatusRequest.
type Status struct {
	Result engine.SubscriptionResult
	Err    error
}
