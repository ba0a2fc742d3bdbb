package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// The store of a network's subscription processor
// (engine.SubscriptionProcessorStore): the live subscriptions, the
// accounts of deposit subscribers, the processed blocks, and the step that
// stores deliveries with their outbox rows in one fenced transaction.

// LiveSubscriptions implements engine.SubscriptionProcessorStore: one range
// of subscriptions_network_live, whatever the number of subscriptions.
func (s *Store) LiveSubscriptions(ctx context.Context, network string) ([]*engine.Subscription, error) {
	var rows []subscriptionRow
	if err := s.r.Select(ctx, &rows, s.selectSubscriptions()+` WHERE network = ? AND deleted IS NULL
		ORDER BY created, `+s.seq, network); err != nil {
		return nil, s.wrap(err, "live subscriptions of %s", network)
	}
	out, err := subscriptions(rows)
	if err != nil {
		return nil, s.errorf("live subscriptions of %s: %w", network, err)
	}
	return out, nil
}

// SubscriptionsVersion implements engine.SubscriptionProcessorStore: one
// statement over the partial index of the network's live rows.
func (s *Store) SubscriptionsVersion(ctx context.Context, network string) (engine.SubscriptionsVersion, error) {
	var v struct {
		Count  int   `db:"n"`
		MaxSeq int64 `db:"m"`
	}
	if err := s.r.Get(ctx, &v, `SELECT COUNT(*) AS n, COALESCE(MAX(`+s.seq+`), 0) AS m
		FROM subscriptions WHERE network = ? AND deleted IS NULL`, network); err != nil {
		return engine.SubscriptionsVersion{}, s.wrap(err, "version of the subscriptions of %s", network)
	}
	return engine.SubscriptionsVersion{Count: v.Count, MaxSeq: v.MaxSeq}, nil
}

// OwnerAddresses implements engine.SubscriptionProcessorStore: one
// statement per chunk of owners; an owner without accounts is absent.
func (s *Store) OwnerAddresses(ctx context.Context, owners []string) (map[string][]common.Address, error) {
	out := map[string][]common.Address{}
	err := s.list("owner", owners, func(c Chunk) error {
		var rows []struct {
			Owner   string `db:"owner"`
			Address string `db:"address"`
		}
		if err := s.r.Select(ctx, &rows, `SELECT owner, address FROM accounts WHERE `+c.Cond+`
			ORDER BY owner, created, id`, c.Args...); err != nil {
			return s.wrap(err, "addresses of %d owners", len(owners))
		}
		for _, r := range rows {
			a, err := sqlrow.FromAddress("address", r.Address)
			if err != nil {
				return s.errorf("addresses of %s: %w", r.Owner, err)
			}
			out[r.Owner] = append(out[r.Owner], a)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SubscriptionBlocks implements engine.SubscriptionProcessorStore.
func (s *Store) SubscriptionBlocks(ctx context.Context, network string, limit int) ([]engine.IndexedBlock, error) {
	return s.blocks(ctx, "subscription_blocks", "subscription blocks", network, limit)
}

// LiveDeliveries implements engine.SubscriptionProcessorStore: the
// deliveries of the network's live subscriptions (a deleted one's are not
// retracted any more), by subscription and seq, each subscription's from
// subscription_events_block.
func (s *Store) LiveDeliveries(ctx context.Context, network string, from uint64) ([]engine.SubscriptionEvent, error) {
	fromBlock, err := sqlrow.Int64Of("from", from)
	if err != nil {
		return nil, s.errorf("live deliveries of %s: %w", network, err)
	}
	var rows []subscriptionEventRow
	if err := s.r.Select(ctx, &rows, `SELECT `+sqlrow.Prefixed("e.", subscriptionEventColumns)+`
		FROM subscriptions s JOIN subscription_events e ON e.subscription_id = s.id
		WHERE s.network = ? AND s.deleted IS NULL AND e.block_number >= ?
			AND e.removed = `+s.no+` AND e.retracted = `+s.no+`
		ORDER BY e.subscription_id, e.seq`, network, fromBlock); err != nil {
		return nil, s.wrap(err, "live deliveries of %s from %d", network, from)
	}
	out, err := subscriptionEvents(rows)
	if err != nil {
		return nil, s.errorf("live deliveries of %s: %w", network, err)
	}
	return out, nil
}

// SaveSubscriptionStep implements engine.SubscriptionProcessorStore: in one
// database transaction, fenced (lockNetworkFence), the deliveries with one
// outbox row per callback URL of their subscription (none for a deleted
// subscription), the retractions, each subscription's next block and last
// seq, and the block hashes.
func (s *Store) SaveSubscriptionStep(ctx context.Context, f engine.NetworkFence, step engine.SubscriptionStep) error {
	network := step.Network
	if !f.IsZero() && f.Network != network {
		return s.errorf("save the subscription step of %s: fenced by the lease of %s", network, f.Network)
	}
	events, err := deliveryRows(step.Events)
	if err != nil {
		return s.errorf("save the subscription step of %s: %w", network, err)
	}
	return s.inTx(ctx, func(tx Conn) error {
		if err := s.lockNetworkFence(ctx, tx, f); err != nil {
			return err
		}
		if err := s.lockSubscriptions(ctx, tx, subscriptionIDs(step.Events)); err != nil {
			return err
		}
		if err := s.insertDeliveries(ctx, tx, events); err != nil {
			return s.wrap(err, "save %d deliveries of %s", len(events), network)
		}
		if err := s.enqueueDeliveries(ctx, tx, step.Events); err != nil {
			return err
		}
		err := s.list("id", step.Retracted, func(c Chunk) error {
			_, err := tx.Exec(ctx, `UPDATE subscription_events SET retracted = `+s.yes+` WHERE `+c.Cond, c.Args...)
			return s.wrap(err, "retract %d deliveries", len(step.Retracted))
		})
		if err != nil {
			return err
		}
		if err := s.advanceSubscriptions(ctx, tx, step); err != nil {
			return err
		}
		return s.saveSubscriptionBlocks(ctx, tx, step)
	})
}

// DeliveryRow is one row of subscription_events to insert, in the
// columns' encodings.
type DeliveryRow struct {
	ID, SubscriptionID string
	Seq, BlockNumber   int64
	BlockHash, TxHash  string
	LogIndex           int64
	Removed            bool
	Body               string
	Created            time.Time
}

// DeliveryWriter is the optional bulk statement of a Dialect that inserts
// the deliveries of a subscription step in tx, in a fixed number of
// statements whatever their number (a backfill step may hold thousands).
// Without it, the store runs a prepared statement per row.
type DeliveryWriter interface {
	InsertDeliveries(ctx context.Context, tx Conn, rows []DeliveryRow) error
}

// insertDeliveries inserts rows (DeliveryWriter, or one prepared statement
// per row).
func (s *Store) insertDeliveries(ctx context.Context, tx Conn, rows []DeliveryRow) error {
	if len(rows) == 0 {
		return nil
	}
	if w, ok := s.d.(DeliveryWriter); ok {
		return w.InsertDeliveries(ctx, tx, rows)
	}
	return eachRow(ctx, tx, `INSERT INTO subscription_events (`+subscriptionEventColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, rows, func(r DeliveryRow) []any {
		return []any{r.ID, r.SubscriptionID, r.Seq, r.BlockNumber, r.BlockHash, r.TxHash, r.LogIndex, r.Removed,
			r.Body, s.ts(r.Created)}
	})
}

// deliveryRows encodes events.
func deliveryRows(events []engine.SubscriptionEvent) ([]DeliveryRow, error) {
	out := make([]DeliveryRow, len(events))
	for i, ev := range events {
		if ev.ID == "" || ev.SubscriptionID == "" || ev.Seq <= 0 {
			return nil, fmt.Errorf("delivery %q of subscription %q: id, subscription and a positive seq (%d) are required",
				ev.ID, ev.SubscriptionID, ev.Seq)
		}
		if !json.Valid(ev.Body) {
			return nil, fmt.Errorf("delivery %s: body is not JSON", ev.ID)
		}
		bn, err := sqlrow.Int64Of("blockNumber", ev.BlockNumber)
		if err != nil {
			return nil, fmt.Errorf("delivery %s: %w", ev.ID, err)
		}
		li, err := sqlrow.Int64Of("logIndex", uint64(ev.LogIndex))
		if err != nil {
			return nil, fmt.Errorf("delivery %s: %w", ev.ID, err)
		}
		out[i] = DeliveryRow{ID: ev.ID, SubscriptionID: ev.SubscriptionID, Seq: ev.Seq, BlockNumber: bn,
			BlockHash: ev.BlockHash.Hex(), TxHash: ev.TxHash.Hex(), LogIndex: li, Removed: ev.Removed,
			Body: string(ev.Body), Created: createdOrNow(ev.Created)}
	}
	return out, nil
}

// subscriptionIDs returns the subscriptions of events, each once, in order.
func subscriptionIDs(events []engine.SubscriptionEvent) []string {
	var ids []string
	seen := map[string]bool{}
	for _, ev := range events {
		if !seen[ev.SubscriptionID] {
			seen[ev.SubscriptionID] = true
			ids = append(ids, ev.SubscriptionID)
		}
	}
	return ids
}

// createdOrNow is t, or now when t is zero.
func createdOrNow(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

// lockSubscriptions locks the rows of subscriptions ids in tx, in id
// order: the writes that decide which outbox rows of a subscription are
// held (SaveSubscriptionStep, and releaseNext after a row left pending)
// take it first, one after the other.
func (s *Store) lockSubscriptions(ctx context.Context, tx Conn, ids []string) error {
	lock := s.d.Lock(LockNoKeyUpdate)
	if lock == "" {
		return nil // writers are serialised
	}
	sorted := slices.Sorted(slices.Values(ids))
	return s.list("id", sorted, func(c Chunk) error {
		var locked []string
		err := tx.Select(ctx, &locked, `SELECT id FROM subscriptions WHERE `+c.Cond+` ORDER BY id`+lock, c.Args...)
		return s.wrap(err, "lock %d subscriptions", len(ids))
	})
}

// enqueueDeliveries inserts, in order, one pending outbox row per callback
// URL of each delivery's subscription, due when the delivery was created,
// with a fresh id (X-Callback-Id is the delivery's id). The rows of a
// deleted subscription are not enqueued. A row is held when a pending row
// of its subscription and URL comes before it: one stored already (at most
// one of those is not held, the lowest, so the held ones need not be
// read), or one of events. The caller locked the subscriptions' rows.
func (s *Store) enqueueDeliveries(ctx context.Context, tx Conn, events []engine.SubscriptionEvent) error {
	ids := subscriptionIDs(events)
	urls := map[string][]string{}
	type pair struct{ sub, url string }
	queued := map[pair]bool{}
	err := s.list("subscription_id", ids, func(c Chunk) error {
		var rows []struct {
			Sub string `db:"subscription_id"`
			URL string `db:"url"`
		}
		if err := tx.Select(ctx, &rows, `SELECT subscription_id, url FROM callback_outbox
			WHERE status = '`+string(engine.CallbackPending)+`' AND held = `+s.no+` AND `+c.Cond, c.Args...); err != nil {
			return s.wrap(err, "pending callbacks of %d subscriptions", len(ids))
		}
		for _, r := range rows {
			queued[pair{r.Sub, r.URL}] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = s.list("id", ids, func(c Chunk) error {
		var rows []struct {
			ID        string `db:"id"`
			Callbacks string `db:"callbacks"`
		}
		if err := tx.Select(ctx, &rows, `SELECT id, callbacks FROM subscriptions WHERE deleted IS NULL AND `+c.Cond,
			c.Args...); err != nil {
			return s.wrap(err, "callbacks of %d subscriptions", len(ids))
		}
		for _, r := range rows {
			var list []string
			if err := json.Unmarshal([]byte(r.Callbacks), &list); err != nil {
				return s.errorf("callbacks of subscription %s: %w", r.ID, err)
			}
			urls[r.ID] = list
		}
		return nil
	})
	if err != nil {
		return err
	}
	var rows []OutboxRow
	for _, ev := range events {
		for _, u := range urls[ev.SubscriptionID] {
			p := pair{ev.SubscriptionID, u}
			rows = append(rows, OutboxRow{ID: engine.NewID(), EventID: ev.ID, SubscriptionID: ev.SubscriptionID,
				EventSeq: ev.Seq, URL: u, Held: queued[p], At: createdOrNow(ev.Created)})
			queued[p] = true
		}
	}
	return s.insertOutbox(ctx, tx, rows)
}

// advanceSubscriptions sets the next block of the subscriptions of
// step.Next, one statement per distinct value (the subscriptions of one
// confirmation depth share it), and the last seq of those with deliveries.
func (s *Store) advanceSubscriptions(ctx context.Context, tx Conn, step engine.SubscriptionStep) error {
	byNext := map[uint64][]string{}
	for id, next := range step.Next {
		byNext[next] = append(byNext[next], id)
	}
	nexts := make([]uint64, 0, len(byNext))
	for n := range byNext {
		nexts = append(nexts, n)
	}
	slices.Sort(nexts)
	for _, next := range nexts {
		ids := byNext[next]
		slices.Sort(ids)
		n, err := sqlrow.Int64Of("next", next)
		if err != nil {
			return s.errorf("advance subscriptions of %s: %w", step.Network, err)
		}
		err = s.list("id", ids, func(c Chunk) error {
			_, err := tx.Exec(ctx, `UPDATE subscriptions SET next_block = ? WHERE `+c.Cond, append([]any{n}, c.Args...)...)
			return s.wrap(err, "advance %d subscriptions of %s to %d", len(ids), step.Network, next)
		})
		if err != nil {
			return err
		}
	}
	// The deliveries just inserted hold each subscription's highest seq:
	// one statement per chunk sets last_seq to it (the unique
	// (subscription_id, seq) serves the MAX).
	ids := subscriptionIDs(step.Events)
	return s.list("id", ids, func(c Chunk) error {
		_, err := tx.Exec(ctx, `UPDATE subscriptions SET last_seq = (SELECT MAX(e.seq) FROM subscription_events e
			WHERE e.subscription_id = subscriptions.id) WHERE `+c.Cond, c.Args...)
		return s.wrap(err, "set the last seq of %d subscriptions", len(ids))
	})
}

// saveSubscriptionBlocks forgets the blocks at or above step.ForgetFrom,
// stores step.Blocks (a number stored again takes the new hash) and prunes
// those more than step.KeepBlocks below the highest.
func (s *Store) saveSubscriptionBlocks(ctx context.Context, tx Conn, step engine.SubscriptionStep) error {
	if step.ForgetFrom != nil {
		from, err := sqlrow.Int64Of("forgetFrom", *step.ForgetFrom)
		if err != nil {
			return s.errorf("forget subscription blocks of %s: %w", step.Network, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM subscription_blocks WHERE network = ? AND number >= ?`,
			step.Network, from); err != nil {
			return s.wrap(err, "forget subscription blocks of %s from %d", step.Network, from)
		}
	}
	blocks := make([]sqlrow.Block, 0, len(step.Blocks))
	for _, b := range step.Blocks {
		n, err := sqlrow.Int64Of("number", b.Number)
		if err != nil {
			return s.errorf("subscription blocks of %s: %w", step.Network, err)
		}
		blocks = append(blocks, sqlrow.Block{Number: n, Hash: b.Hash.Hex()})
	}
	if err := putBlocks(ctx, tx, "subscription_blocks", step.Network, blocks); err != nil {
		return s.wrap(err, "save %d subscription blocks of %s", len(blocks), step.Network)
	}
	if step.KeepBlocks > 0 {
		keep, err := sqlrow.Int64Of("keepBlocks", step.KeepBlocks)
		if err != nil {
			return s.errorf("prune subscription blocks of %s: %w", step.Network, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM subscription_blocks WHERE network = ?
			AND number < (SELECT MAX(number) FROM subscription_blocks WHERE network = ?) - ?`,
			step.Network, step.Network, keep); err != nil {
			return s.wrap(err, "prune subscription blocks of %s", step.Network)
		}
	}
	return nil
}
