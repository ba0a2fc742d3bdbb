package storetest

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/subscribe"
)

// Event subscriptions (engine.SubscriptionStore,
// engine.SubscriptionProcessorStore) and the outbox rows of their
// deliveries.

// transferABI is the fragment of an ERC-20 Transfer event.
const transferABI = `[{"type":"event","name":"Transfer","anonymous":false,"inputs":[` +
	`{"name":"from","type":"address","indexed":true},{"name":"to","type":"address","indexed":true},` +
	`{"name":"value","type":"uint256","indexed":false}]}]`

// newSubscription returns an events subscription of owner on network
// created at at(sec), delivering to urls.
func newSubscription(t *testing.T, owner, network string, sec int, urls ...string) *engine.Subscription {
	t.Helper()
	return &engine.Subscription{
		ID: newID(), Owner: owner, Network: network, Kind: engine.SubscriptionEvents,
		Address: randomAddress(t), Event: "Transfer", Signature: "Transfer(address,address,uint256)",
		ABI:           json.RawMessage(transferABI),
		Filters:       map[string]json.RawMessage{"to": json.RawMessage(`["0x00000000000000000000000000000000000000aa"]`)},
		Topics:        [][]common.Hash{{engine.TransferTopic}, nil, {common.HexToHash("0xaa")}},
		Callbacks:     urls,
		Confirmations: 2, FromBlock: 10, Next: 10,
		Created: at(sec),
	}
}

// createSub inserts sub and returns it as read back.
func createSub(t *testing.T, s engine.Store, sub *engine.Subscription) *engine.Subscription {
	t.Helper()
	ctx := ctxOf(t)
	must(t, s.CreateSubscription(ctx, sub, nil))
	got, err := s.SubscriptionByID(ctx, sub.ID)
	must(t, err)
	return got
}

// wantSub fails unless got is want as stored (Seq aside).
func wantSub(t *testing.T, got, want *engine.Subscription) {
	t.Helper()
	wantTime(t, "subscription Created", got.Created, want.Created)
	g, w := *got, *want
	g.Created, w.Created, g.Seq, w.Seq = time.Time{}, time.Time{}, 0, 0
	if w.Callbacks == nil {
		w.Callbacks = []string{}
	}
	if len(w.Filters) == 0 {
		w.Filters = nil
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("subscription = %+v\nwant %+v", g, w)
	}
}

// delivery returns the delivery seq of sub in block (its hash) at log
// index li, created at at(sec).
func delivery(t *testing.T, sub *engine.Subscription, seq int64, block uint64, hash common.Hash, li uint, sec int) engine.SubscriptionEvent {
	t.Helper()
	ev := engine.SubscriptionEvent{ID: newID(), SubscriptionID: sub.ID, Seq: seq, BlockNumber: block, BlockHash: hash,
		TxHash: randomHash(t), LogIndex: li, Created: at(sec)}
	body, err := json.Marshal(subscribe.DeliveryView{ID: ev.ID, SubscriptionID: sub.ID, Sequence: seq,
		Network: sub.Network, Address: sub.Address.Hex(), Event: sub.Event, Signature: sub.Signature,
		BlockNumber: block, BlockHash: hash.Hex(), TransactionHash: ev.TxHash.Hex(), LogIndex: li,
		ReturnValues: map[string]any{"value": "1"}})
	must(t, err)
	ev.Body = body
	return ev
}

// wantEvents fails unless got are want, field by field (Body byte for byte).
func wantEvents(t *testing.T, what string, got, want []engine.SubscriptionEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d deliveries, want %d (%+v)", what, len(got), len(want), got)
	}
	for i := range want {
		wantTime(t, what+" Created", got[i].Created, want[i].Created)
		g, w := got[i], want[i]
		g.Created, w.Created = time.Time{}, time.Time{}
		if string(g.Body) != string(w.Body) {
			t.Fatalf("%s[%d]: body %s, want %s", what, i, g.Body, w.Body)
		}
		g.Body, w.Body = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s[%d] = %+v, want %+v", what, i, g, w)
		}
	}
}

// eventRows returns the due outbox rows of event deliveries (those the
// ordering rule lets through), by delivery id.
func eventRows(t *testing.T, s engine.Store) map[string][]engine.Callback {
	t.Helper()
	rows, err := s.DueCallbacks(ctxOf(t), farFuture, 1000)
	must(t, err)
	out := map[string][]engine.Callback{}
	for _, r := range rows {
		if r.EventID != "" {
			out[r.EventID] = append(out[r.EventID], r)
		}
	}
	return out
}

// testSubscriptionRoundTrip: what CreateSubscription stores is read back
// as given; a taken id conflicts; an unknown id is not found.
func testSubscriptionRoundTrip(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	full := newSubscription(t, u.ID, "dev", 1, "https://a.example/cb", "https://b.example/cb")
	c := &engine.Contract{ID: newID(), Owner: u.ID, Name: "tok", Network: "dev", Address: full.Address, Created: at(0)}
	must(t, s.CreateContract(ctx, c))
	full.ContractID = c.ID
	idem := &engine.IdempotencyRecord{UserID: u.ID, Key: "sub-1", RequestHash: "h", Status: 201, Body: []byte("{}"), Created: at(1)}
	must(t, s.CreateSubscription(ctx, full, idem))
	got, err := s.SubscriptionByID(ctx, full.ID)
	must(t, err)
	wantSub(t, got, full)
	if rec, err := s.IdempotencyRecord(ctx, u.ID, "sub-1"); err != nil || rec.Status != 201 {
		t.Fatalf("idempotency record = %+v, %v", rec, err)
	}

	deposits := &engine.Subscription{ID: newID(), Owner: u.ID, Network: "dev", Kind: engine.SubscriptionDeposits,
		Event: "Transfer", Signature: "Transfer(address,address,uint256)", ABI: json.RawMessage(transferABI),
		Topics: [][]common.Hash{{engine.TransferTopic}}, Confirmations: 0, FromBlock: 7, Next: 9, LastSeq: 0, Created: at(2)}
	got = createSub(t, s, deposits)
	wantSub(t, got, deposits)
	if got.Callbacks == nil || got.Filters != nil || got.ContractID != "" {
		t.Fatalf("deposits subscription = %+v: want [] callbacks, nil filters, no contract", got)
	}

	wantCode(t, s.CreateSubscription(ctx, newSubscriptionWithID(t, full.ID, u.ID), nil), engine.CodeConflict, "create a taken id")
	_, err = s.SubscriptionByID(ctx, newID())
	wantCode(t, err, engine.CodeNotFound, "unknown subscription")
	// An idempotency key that is taken stores nothing.
	again := newSubscription(t, u.ID, "dev", 3)
	wantCode(t, s.CreateSubscription(ctx, again, idem), engine.CodeConflict, "taken idempotency key")
	_, err = s.SubscriptionByID(ctx, again.ID)
	wantCode(t, err, engine.CodeNotFound, "subscription of a refused create")
	// An owner that does not exist.
	wantCode(t, s.CreateSubscription(ctx, newSubscription(t, newID(), "dev", 3), nil), engine.CodeNotFound, "unknown owner")
}

// newSubscriptionWithID is newSubscription with a given id.
func newSubscriptionWithID(t *testing.T, id, owner string) *engine.Subscription {
	sub := newSubscription(t, owner, "dev", 5)
	sub.ID = id
	return sub
}

// testListSubscriptions: an owner's live subscriptions, oldest first, in
// pages whose cursor is the last row's (Created, Seq); deleted ones and
// other owners' are not listed.
func testListSubscriptions(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u, other := newUser(t, s, 0), newUser(t, s, 0)
	var want []string
	for _, sec := range []int{5, 1, 3, 3, 3, 7} {
		sub := createSub(t, s, newSubscription(t, u.ID, "dev", sec))
		want = append(want, sub.ID)
	}
	createSub(t, s, newSubscription(t, other.ID, "dev", 2))
	// Oldest first; ties in insertion order.
	order := []int{1, 2, 3, 4, 0, 5}
	ordered := make([]string, len(order))
	for i, j := range order {
		ordered[i] = want[j]
	}
	must(t, s.DeleteSubscription(ctx, u.ID, ordered[3]))
	ordered = slices.Delete(ordered, 3, 4)

	var got []string
	var after *engine.SubscriptionCursor
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("listing does not end")
		}
		page, err := s.ListSubscriptions(ctx, u.ID, after, 2)
		must(t, err)
		for _, sub := range page {
			if sub.Owner != u.ID {
				t.Fatalf("listed %s of %s", sub.ID, sub.Owner)
			}
			got = append(got, sub.ID)
		}
		if len(page) < 2 {
			break
		}
		last := page[len(page)-1]
		after = &engine.SubscriptionCursor{Created: last.Created, Seq: last.Seq}
	}
	if !slices.Equal(got, ordered) {
		t.Fatalf("listed %v, want %v", got, ordered)
	}
	if page, err := s.ListSubscriptions(ctx, newID(), nil, 10); err != nil || len(page) != 0 {
		t.Fatalf("listing of a user without subscriptions = %v, %v", page, err)
	}
}

// testDeleteSubscription: only the owner deletes; a deleted subscription
// is not read, listed, counted or processed, and deleting it again is not
// found; its pending outbox rows are abandoned, delivered ones stay.
func testDeleteSubscription(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u, other := newUser(t, s, 0), newUser(t, s, 0)
	sub := createSub(t, s, newSubscription(t, u.ID, "dev", 1, "https://a.example/1", "https://b.example/2"))
	keep := createSub(t, s, newSubscription(t, u.ID, "dev", 2, "https://a.example/1"))
	h := randomHash(t)
	e1, e2, k1 := delivery(t, sub, 1, 10, h, 0, 3), delivery(t, sub, 2, 10, h, 1, 3), delivery(t, keep, 1, 10, h, 2, 3)
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
		Events: []engine.SubscriptionEvent{e1, e2, k1}, Next: map[string]uint64{sub.ID: 11, keep.ID: 11}}))
	wantPending(t, s, 5)
	delivered := eventRows(t, s)[e1.ID][0]
	must(t, s.MarkCallbackDelivered(ctx, delivered.ID, 1, at(4)))
	wantPending(t, s, 4)

	wantCode(t, s.DeleteSubscription(ctx, other.ID, sub.ID), engine.CodeNotFound, "delete another user's subscription")
	if _, err := s.SubscriptionByID(ctx, sub.ID); err != nil {
		t.Fatalf("another user's delete removed the subscription: %v", err)
	}
	wantPending(t, s, 4)
	must(t, s.DeleteSubscription(ctx, u.ID, sub.ID))
	_, err := s.SubscriptionByID(ctx, sub.ID)
	wantCode(t, err, engine.CodeNotFound, "read a deleted subscription")
	wantCode(t, s.DeleteSubscription(ctx, u.ID, sub.ID), engine.CodeNotFound, "delete twice")
	wantCode(t, s.DeleteSubscription(ctx, u.ID, newID()), engine.CodeNotFound, "delete an unknown subscription")
	// The three pending rows of sub are abandoned; keep's stays.
	wantPending(t, s, 1)
	if rows := eventRows(t, s); len(rows) != 1 || len(rows[k1.ID]) != 1 {
		t.Fatalf("due event rows after the delete = %+v, want the one of %s", rows, k1.ID)
	}
	wantCode(t, s.MarkCallbackDelivered(ctx, delivered.ID, 2, at(5)), engine.CodeConflict, "the delivered row stays delivered")
	live, err := s.LiveSubscriptions(ctx, "dev")
	must(t, err)
	if len(live) != 1 || live[0].ID != keep.ID {
		t.Fatalf("LiveSubscriptions = %+v, want only %s", live, keep.ID)
	}
	page, err := s.ListSubscriptions(ctx, u.ID, nil, 10)
	must(t, err)
	if len(page) != 1 || page[0].ID != keep.ID {
		t.Fatalf("listing after the delete = %+v", page)
	}
	if n, err := s.CountSubscriptions(ctx, u.ID); err != nil || n != 1 {
		t.Fatalf("CountSubscriptions = %d, %v; want 1", n, err)
	}
	// The deliveries stay readable by id (the API checks the subscription).
	if ev, err := s.SubscriptionEventByID(ctx, e2.ID); err != nil || ev.Seq != 2 {
		t.Fatalf("delivery of a deleted subscription = %+v, %v", ev, err)
	}
	// A later step writes no outbox row for the deleted subscription.
	e3 := delivery(t, sub, 3, 11, randomHash(t), 0, 6)
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
		Events: []engine.SubscriptionEvent{e3}}))
	wantPending(t, s, 1)
}

// testCountSubscriptions: the live subscriptions of the users of a tree.
func testCountSubscriptions(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	root := &engine.User{ID: newID(), Created: at(0)}
	must(t, s.CreateUser(ctx, root, nil, nil))
	child := &engine.User{ID: newID(), Owner: root.ID, Root: root.ID, Created: at(1)}
	must(t, s.CreateUser(ctx, child, nil, nil))
	other := newUser(t, s, 2)
	for _, owner := range []string{root.ID, child.ID, child.ID, other.ID} {
		createSub(t, s, newSubscription(t, owner, "dev", 3))
	}
	gone := createSub(t, s, newSubscription(t, child.ID, "other", 4))
	must(t, s.DeleteSubscription(ctx, child.ID, gone.ID))
	for _, tt := range []struct {
		root string
		want int
	}{{root.ID, 3}, {other.ID, 1}, {newID(), 0}} {
		if n, err := s.CountSubscriptions(ctx, tt.root); err != nil || n != tt.want {
			t.Errorf("CountSubscriptions(%s) = %d, %v; want %d", tt.root, n, err, tt.want)
		}
	}
}

// testSubscriptionsVersion: the version of a network's live subscriptions
// changes with every creation and deletion (also a deletion and a creation
// together), not with a step, and not with another network's changes.
func testSubscriptionsVersion(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	net := "version-" + newID()
	version := func() engine.SubscriptionsVersion {
		t.Helper()
		v, err := s.SubscriptionsVersion(ctx, net)
		must(t, err)
		return v
	}
	empty := version()
	if empty != (engine.SubscriptionsVersion{}) {
		t.Fatalf("version without subscriptions = %+v", empty)
	}
	a := createSub(t, s, newSubscription(t, u.ID, net, 1))
	v1 := version()
	b := createSub(t, s, newSubscription(t, u.ID, net, 2))
	v2 := version()
	if v1 == empty || v2 == v1 || v2.Count != 2 {
		t.Fatalf("versions %+v, %+v, %+v: creations must change it", empty, v1, v2)
	}
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: net,
		Events: []engine.SubscriptionEvent{delivery(t, a, 1, 10, randomHash(t), 0, 3)}, Next: map[string]uint64{a.ID: 11, b.ID: 11}}))
	createSub(t, s, newSubscription(t, u.ID, "another-"+newID(), 4))
	if v := version(); v != v2 {
		t.Fatalf("version %+v after a step and another network's creation, want %+v", v, v2)
	}
	must(t, s.DeleteSubscription(ctx, u.ID, a.ID))
	v3 := version()
	if v3 == v2 || v3.Count != 1 {
		t.Fatalf("version %+v after a deletion (was %+v)", v3, v2)
	}
	// The newest deleted and one created: the count is back, the version
	// is not.
	must(t, s.DeleteSubscription(ctx, u.ID, b.ID))
	createSub(t, s, newSubscription(t, u.ID, net, 5))
	if v := version(); v == v3 || v.Count != 1 {
		t.Fatalf("version %+v after a deletion and a creation, was %+v", v, v3)
	}
}
