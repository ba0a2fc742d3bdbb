package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// Event subscriptions (migrations/0013_subscriptions.sql):
// engine.SubscriptionStore for the API and engine.SubscriptionProcessorStore
// for the network's subscription processor. A deleted subscription keeps
// its row (deleted is set) and its deliveries; its pending outbox rows are
// abandoned.

// subscriptionColumns are the columns of subscriptions, inserted and read
// (a read adds the insertion order as seq).
const subscriptionColumns = `id, owner, network, kind, contract_id, address, event, signature, abi, filters,
	topics, callbacks, confirmations, from_block, next_block, last_seq, created`

// subscriptionRow is a row of subscriptions.
type subscriptionRow struct {
	Seq           int64          `db:"seq"`
	ID            string         `db:"id"`
	Owner         string         `db:"owner"`
	Network       string         `db:"network"`
	Kind          string         `db:"kind"`
	ContractID    sql.NullString `db:"contract_id"`
	Address       string         `db:"address"`
	Event         string         `db:"event"`
	Signature     string         `db:"signature"`
	ABI           string         `db:"abi"`
	Filters       sql.NullString `db:"filters"`
	Topics        string         `db:"topics"`
	Callbacks     string         `db:"callbacks"`
	Confirmations int64          `db:"confirmations"`
	FromBlock     int64          `db:"from_block"`
	NextBlock     int64          `db:"next_block"`
	LastSeq       int64          `db:"last_seq"`
	Created       timeCol        `db:"created"`
}

// subscription converts the row.
func (r *subscriptionRow) subscription() (*engine.Subscription, error) {
	fail := func(err error) (*engine.Subscription, error) {
		return nil, fmt.Errorf("subscription %s: %w", r.ID, err)
	}
	sub := &engine.Subscription{
		ID: r.ID, Owner: r.Owner, Network: r.Network, Kind: r.Kind, ContractID: r.ContractID.String,
		Event: r.Event, Signature: r.Signature, ABI: json.RawMessage(r.ABI), LastSeq: r.LastSeq, Seq: r.Seq,
	}
	var err error
	if sub.Address, err = sqlrow.FromAddress("address", r.Address); err != nil {
		return fail(err)
	}
	if err := sqlrow.FromNullJSON("filters", r.Filters, &sub.Filters); err != nil {
		return fail(err)
	}
	if err := json.Unmarshal([]byte(r.Topics), &sub.Topics); err != nil {
		return fail(fmt.Errorf("topics: %w", err))
	}
	if err := json.Unmarshal([]byte(r.Callbacks), &sub.Callbacks); err != nil {
		return fail(fmt.Errorf("callbacks: %w", err))
	}
	if sub.Callbacks == nil {
		sub.Callbacks = []string{}
	}
	for _, f := range []struct {
		name string
		v    int64
		dst  *uint64
	}{{"confirmations", r.Confirmations, &sub.Confirmations}, {"from_block", r.FromBlock, &sub.FromBlock}, {"next_block", r.NextBlock, &sub.Next}} {
		if *f.dst, err = sqlrow.Uint64Of(f.name, f.v); err != nil {
			return fail(err)
		}
	}
	created, ok := r.Created.At()
	if !ok {
		return fail(fmt.Errorf("created is NULL"))
	}
	sub.Created = created
	return sub, nil
}

// subscriptions converts rows, in order.
func subscriptions(rows []subscriptionRow) ([]*engine.Subscription, error) {
	return sqlrow.Convert(rows, (*subscriptionRow).subscription)
}

// selectSubscriptions is the SELECT of subscriptions with the insertion
// order as seq; a WHERE clause follows.
func (s *Store) selectSubscriptions() string {
	return `SELECT ` + s.seq + ` AS seq, ` + subscriptionColumns + ` FROM subscriptions`
}

// CreateSubscription implements engine.SubscriptionStore.
func (s *Store) CreateSubscription(ctx context.Context, sub *engine.Subscription, idem *engine.IdempotencyRecord) error {
	args, err := s.subscriptionArgs(sub)
	if err != nil {
		return s.errorf("create subscription %s: %w", sub.ID, err)
	}
	return s.inTx(ctx, func(tx Conn) error {
		if _, err := tx.Exec(ctx, `INSERT INTO subscriptions (`+subscriptionColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
			return s.wrap(err, "create subscription %s", sub.ID)
		}
		return s.insertIdempotency(ctx, tx, idem)
	})
}

// subscriptionArgs encodes sub in the order of subscriptionColumns.
func (s *Store) subscriptionArgs(sub *engine.Subscription) ([]any, error) {
	filters, err := sqlrow.NullJSON("filters", sub.Filters, len(sub.Filters) == 0)
	if err != nil {
		return nil, err
	}
	topics, err := json.Marshal(sub.Topics)
	if err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	callbacks := sub.Callbacks
	if callbacks == nil {
		callbacks = []string{}
	}
	cbs, err := json.Marshal(callbacks)
	if err != nil {
		return nil, fmt.Errorf("callbacks: %w", err)
	}
	abi := string(sub.ABI)
	if !json.Valid(sub.ABI) {
		return nil, fmt.Errorf("abi is not JSON")
	}
	var nums [3]int64
	for i, f := range []struct {
		name string
		v    uint64
	}{{"confirmations", sub.Confirmations}, {"fromBlock", sub.FromBlock}, {"next", sub.Next}} {
		if nums[i], err = sqlrow.Int64Of(f.name, f.v); err != nil {
			return nil, err
		}
	}
	return []any{sub.ID, sub.Owner, sub.Network, sub.Kind, sqlrow.NullString(sub.ContractID), sqlrow.Address(sub.Address),
		sub.Event, sub.Signature, abi, filters, string(topics), string(cbs), nums[0], nums[1], nums[2], sub.LastSeq,
		s.ts(sub.Created)}, nil
}

// SubscriptionByID implements engine.SubscriptionStore.
func (s *Store) SubscriptionByID(ctx context.Context, id string) (*engine.Subscription, error) {
	var r subscriptionRow
	if err := s.r.Get(ctx, &r, s.selectSubscriptions()+` WHERE id = ? AND deleted IS NULL`, id); err != nil {
		return nil, s.wrap(err, "subscription %s", id)
	}
	return decoded(r.subscription())
}

// ListSubscriptions implements engine.SubscriptionStore: keyset pagination
// on (created, insertion order), one range of subscriptions_owner_created.
func (s *Store) ListSubscriptions(ctx context.Context, owner string, after *engine.SubscriptionCursor, limit int) ([]*engine.Subscription, error) {
	if limit <= 0 {
		return []*engine.Subscription{}, nil
	}
	q, args := s.selectSubscriptions()+` WHERE owner = ? AND deleted IS NULL`, []any{owner}
	if after != nil {
		q += ` AND (created, ` + s.seq + `) > (?, ?)`
		args = append(args, s.ts(after.Created), after.Seq)
	}
	var rows []subscriptionRow
	if err := s.r.Select(ctx, &rows, q+` ORDER BY created, `+s.seq+` LIMIT ?`, append(args, limit)...); err != nil {
		return nil, s.wrap(err, "list the subscriptions of %s", owner)
	}
	out, err := subscriptions(rows)
	if err != nil {
		return nil, s.errorf("list the subscriptions of %s: %w", owner, err)
	}
	return out, nil
}

// DeleteSubscription implements engine.SubscriptionStore: the soft delete
// and the abandon of the subscription's pending outbox rows, in one
// database transaction.
func (s *Store) DeleteSubscription(ctx context.Context, owner, id string) error {
	return s.inTx(ctx, func(tx Conn) error {
		res, err := tx.Exec(ctx, `UPDATE subscriptions SET deleted = `+s.d.Now()+` WHERE id = ? AND owner = ? AND deleted IS NULL`,
			id, owner)
		if err != nil {
			return s.wrap(err, "delete subscription %s", id)
		}
		if n, err := res.RowsAffected(); err != nil {
			return s.wrap(err, "delete subscription %s", id)
		} else if n == 0 {
			return s.notFound("delete subscription %s of %s: no such subscription", id, owner)
		}
		if _, err := tx.Exec(ctx, `UPDATE callback_outbox SET status = ?, last_error = ?, claimed_by = NULL, claimed_until = NULL
			WHERE subscription_id = ? AND status = '`+string(engine.CallbackPending)+`'`,
			string(engine.CallbackAbandoned), engine.SubscriptionDeletedError, id); err != nil {
			return s.wrap(err, "abandon the callbacks of subscription %s", id)
		}
		return nil
	})
}

// CountSubscriptions implements engine.SubscriptionStore.
func (s *Store) CountSubscriptions(ctx context.Context, root string) (int, error) {
	var n int
	if err := s.r.Get(ctx, &n, `SELECT COUNT(*) FROM subscriptions s JOIN users u ON u.id = s.owner
		WHERE (u.root_id = ? OR u.id = ?) AND s.deleted IS NULL`, root, root); err != nil {
		return 0, s.wrap(err, "count the subscriptions of root %s", root)
	}
	return n, nil
}

// subscriptionEventColumns are the columns of subscription_events, inserted
// and read.
const subscriptionEventColumns = `id, subscription_id, seq, block_number, block_hash, tx_hash, log_index, removed, body, created`

// subscriptionEventRow is a row of subscription_events.
type subscriptionEventRow struct {
	ID             string  `db:"id"`
	SubscriptionID string  `db:"subscription_id"`
	Seq            int64   `db:"seq"`
	BlockNumber    int64   `db:"block_number"`
	BlockHash      string  `db:"block_hash"`
	TxHash         string  `db:"tx_hash"`
	LogIndex       int64   `db:"log_index"`
	Removed        bool    `db:"removed"`
	Body           string  `db:"body"`
	Created        timeCol `db:"created"`
}

// event converts the row.
func (r *subscriptionEventRow) event() (engine.SubscriptionEvent, error) {
	fail := func(err error) (engine.SubscriptionEvent, error) {
		return engine.SubscriptionEvent{}, fmt.Errorf("delivery %s: %w", r.ID, err)
	}
	ev := engine.SubscriptionEvent{ID: r.ID, SubscriptionID: r.SubscriptionID, Seq: r.Seq, Removed: r.Removed,
		Body: json.RawMessage(r.Body)}
	var err error
	if ev.BlockNumber, err = sqlrow.Uint64Of("block_number", r.BlockNumber); err != nil {
		return fail(err)
	}
	li, err := sqlrow.Uint64Of("log_index", r.LogIndex)
	if err != nil {
		return fail(err)
	}
	ev.LogIndex = uint(li)
	for _, h := range []struct {
		name string
		v    string
		dst  *common.Hash
	}{{"block_hash", r.BlockHash, &ev.BlockHash}, {"tx_hash", r.TxHash, &ev.TxHash}} {
		b, err := sqlrow.HexBytes(h.v)
		if err != nil || len(b) != common.HashLength {
			return fail(fmt.Errorf("%s %q is not a hash", h.name, h.v))
		}
		*h.dst = common.BytesToHash(b)
	}
	created, ok := r.Created.At()
	if !ok {
		return fail(fmt.Errorf("created is NULL"))
	}
	ev.Created = created
	return ev, nil
}

// subscriptionEvents converts rows, in order (an empty slice for none).
func subscriptionEvents(rows []subscriptionEventRow) ([]engine.SubscriptionEvent, error) {
	return sqlrow.Convert(rows, (*subscriptionEventRow).event)
}

// SubscriptionEvents implements engine.SubscriptionStore: one range of the
// unique (subscription_id, seq).
func (s *Store) SubscriptionEvents(ctx context.Context, id string, afterSeq int64, limit int) ([]engine.SubscriptionEvent, error) {
	if limit <= 0 {
		return []engine.SubscriptionEvent{}, nil
	}
	var rows []subscriptionEventRow
	if err := s.r.Select(ctx, &rows, `SELECT `+subscriptionEventColumns+` FROM subscription_events
		WHERE subscription_id = ? AND seq > ? ORDER BY seq LIMIT ?`, id, afterSeq, limit); err != nil {
		return nil, s.wrap(err, "deliveries of subscription %s", id)
	}
	out, err := subscriptionEvents(rows)
	if err != nil {
		return nil, s.errorf("deliveries of subscription %s: %w", id, err)
	}
	return out, nil
}

// SubscriptionEventByID implements engine.SubscriptionStore.
func (s *Store) SubscriptionEventByID(ctx context.Context, id string) (*engine.SubscriptionEvent, error) {
	var r subscriptionEventRow
	if err := s.r.Get(ctx, &r, `SELECT `+subscriptionEventColumns+` FROM subscription_events WHERE id = ?`, id); err != nil {
		return nil, s.wrap(err, "delivery %s", id)
	}
	ev, err := r.event()
	if err != nil {
		return nil, s.errorf("delivery %s: %w", id, err)
	}
	return &ev, nil
}
