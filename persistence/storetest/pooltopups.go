package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/txengine/txengine/engine"
)

// testPoolTopUps: PoolTopUps counts the treasury's top-ups of the pool
// (keys starting with engine.TopUpKeyPrefix) whatever their status, lists
// the keys of those not ended, and counts nothing else: another pool's
// top-ups from the same treasury, the treasury's other sends through the
// pool, a member's sends. A pool without a treasury has none; a deleted
// pool keeps its count; an unknown pool is ErrNotFound.
func testPoolTopUps(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	treasury := newAccount(t, s, u.ID, 0, true)
	p, m := newPool(t, s, u.ID, treasury.ID, 1, 2)
	q, qm := newPool(t, s, u.ID, treasury.ID, 2, 1)
	bare, _ := newPool(t, s, u.ID, "", 3, 1)

	topUp := func(pool *engine.Pool, member *engine.Account, sec int, asset string, st engine.TxStatus) *engine.Transaction {
		tx := poolTx(u, treasury, pool, sec, engine.AssetETH, -1, st)
		tx.OrderingKey = engine.TopUpKeyPrefix + member.ID + ":" + asset
		return tx
	}
	token := randomAddress(t).Hex()
	done := topUp(p, m[0], 4, engine.AssetETH, engine.StatusCompleted)
	inFlight := topUp(p, m[1], 5, engine.AssetETH, engine.StatusSubmitted)
	queued := topUp(p, m[0], 6, token, engine.StatusNew)
	other := topUp(q, qm[0], 7, engine.AssetETH, engine.StatusNew)
	own := poolTx(u, treasury, p, 8, engine.AssetETH, 1, engine.StatusNew)
	own.OrderingKey = "txengine:topu"
	send := poolTx(u, m[0], p, 9, engine.AssetETH, 1, engine.StatusNew)
	insert(t, s, done, inFlight, queued, other, own, send)

	want := func(what string, pool *engine.Pool, sent int, pending ...string) {
		t.Helper()
		got, err := s.PoolTopUps(ctx, pool.ID)
		must(t, err)
		slices.Sort(got.Pending)
		slices.Sort(pending)
		if got.Sent != sent || !slices.Equal(got.Pending, pending) || got.Pending == nil {
			t.Errorf("%s: PoolTopUps = %+v, want %d sent, pending %v", what, got, sent, pending)
		}
	}
	want("pool", p, 3, inFlight.OrderingKey, queued.OrderingKey)
	want("other pool of the treasury", q, 1, other.OrderingKey)
	want("pool without a treasury", bare, 0)

	for _, tx := range []*engine.Transaction{inFlight, queued} {
		if _, err := s.CancelTransaction(ctx, tx.ID, &engine.TxError{Code: engine.TxCancelled, Message: "cancelled"}, at(10)); err != nil &&
			!errors.Is(err, engine.ErrConflict) {
			t.Fatal(err)
		}
	}
	want("after the queued one was cancelled", p, 3, inFlight.OrderingKey) // a submitted one cannot be cancelled
	must(t, s.DeletePool(ctx, p.ID))
	want("deleted pool", p, 3, inFlight.OrderingKey)
	if _, err := s.PoolTopUps(ctx, newID()); !engine.IsNotFound(err) {
		t.Errorf("PoolTopUps of an unknown pool: %v, want not found", err)
	}
}
