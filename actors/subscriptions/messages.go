// Package subscriptions holds the subscription processor actor: one per
// network (on the holder of the network's lease in cluster mode), it
// delivers the network's logs to the event subscriptions, reorgs included.
// The logic lives in subscribe.Processor; this is its actor shell,
// woken by the network's watcher on each new head and by its own timer.
package subscriptions

// tick asks the processor to poll.
type tick struct{}

// NewHead tells the processor that the network's head is Number.
type NewHead struct{ Number uint64 }
