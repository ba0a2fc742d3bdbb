package engine

import (
	"context"
	"fmt"
	"time"
)

// OutboxPruner deletes the rows the outbox and the subscriptions no longer
// need, in bounded batches (each one statement).
type OutboxPruner interface {
	// PruneCallbacks deletes at most limit outbox rows that are delivered
	// or abandoned and were created before before; it returns how many.
	// A pending row is never deleted.
	PruneCallbacks(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneSubscriptionEvents deletes at most limit subscription
	// deliveries (GET /subscriptions/{id}/events) created before before
	// that no outbox row refers to any more (their callbacks ended and
	// were pruned); it returns how many.
	PruneSubscriptionEvents(ctx context.Context, before time.Time, limit int) (int, error)
}

// DefaultRetention is how long delivered and abandoned callbacks and the
// subscriptions' stored deliveries are kept by default.
const DefaultRetention = 7 * 24 * time.Hour

// Pruned counts what one PruneStep deleted.
type Pruned struct {
	Callbacks, Events int
}

// Full reports whether a batch came back full: more rows may be due.
func (p Pruned) Full(batch int) bool { return p.Callbacks == batch || p.Events == batch }

// PruneStep deletes one batch of at most batch ended outbox rows, then one
// batch of subscription deliveries, older than before; each statement has
// its own deadline timeout. Callers repeat it while Pruned.Full.
func PruneStep(ctx context.Context, store OutboxPruner, before time.Time, batch int, timeout time.Duration) (Pruned, error) {
	var p Pruned
	cctx, cancel := context.WithTimeout(ctx, timeout)
	n, err := store.PruneCallbacks(cctx, before, batch)
	cancel()
	if err != nil {
		return p, fmt.Errorf("prune callbacks: %w", err)
	}
	p.Callbacks = n
	ectx, cancel := context.WithTimeout(ctx, timeout)
	n, err = store.PruneSubscriptionEvents(ectx, before, batch)
	cancel()
	if err != nil {
		return p, fmt.Errorf("prune subscription deliveries: %w", err)
	}
	p.Events = n
	return p, nil
}
