package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
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
	body, err := json.Marshal(engine.SubscriptionEventView{ID: ev.ID, SubscriptionID: sub.ID, Sequence: seq,
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

// testSubscriptionStep: a step stores its deliveries, one outbox row per
// URL of each (with the event's fields), the subscriptions' next block and
// last seq, and the block hashes; a retraction takes deliveries out of
// LiveDeliveries; forgetting and pruning blocks.
func testSubscriptionStep(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	urls := []string{"https://a.example/cb", "https://b.example/cb"}
	a := createSub(t, s, newSubscription(t, f.user.ID, "dev", 1, urls...))
	b := createSub(t, s, newSubscription(t, f.user.ID, "dev", 2))
	elsewhere := createSub(t, s, newSubscription(t, f.user.ID, "other", 3, urls[0]))
	h10, h11 := randomHash(t), randomHash(t)
	a1, a2 := delivery(t, a, 1, 10, h10, 0, 10), delivery(t, a, 2, 11, h11, 3, 11)
	b1 := delivery(t, b, 1, 10, h10, 1, 10)
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{
		Network: "dev",
		Events:  []engine.SubscriptionEvent{a1, b1, a2},
		Next:    map[string]uint64{a.ID: 12, b.ID: 12},
		Blocks:  []engine.IndexedBlock{{Number: 10, Hash: h10}, {Number: 11, Hash: h11}},
	}))

	got, err := s.SubscriptionEvents(ctx, a.ID, 0, 10)
	must(t, err)
	wantEvents(t, "deliveries of a", got, []engine.SubscriptionEvent{a1, a2})
	got, err = s.SubscriptionEvents(ctx, a.ID, 1, 10)
	must(t, err)
	wantEvents(t, "deliveries of a after 1", got, []engine.SubscriptionEvent{a2})
	got, err = s.SubscriptionEvents(ctx, a.ID, 0, 1)
	must(t, err)
	wantEvents(t, "first delivery of a", got, []engine.SubscriptionEvent{a1})
	ev, err := s.SubscriptionEventByID(ctx, b1.ID)
	must(t, err)
	wantEvents(t, "delivery by id", []engine.SubscriptionEvent{*ev}, []engine.SubscriptionEvent{b1})
	_, err = s.SubscriptionEventByID(ctx, newID())
	wantCode(t, err, engine.CodeNotFound, "unknown delivery")

	for _, tt := range []struct {
		sub  *engine.Subscription
		next uint64
		last int64
	}{{a, 12, 2}, {b, 12, 1}, {elsewhere, 10, 0}} {
		sub, err := s.SubscriptionByID(ctx, tt.sub.ID)
		must(t, err)
		if sub.Next != tt.next || sub.LastSeq != tt.last {
			t.Errorf("subscription %s: next %d, last seq %d; want %d, %d", tt.sub.ID, sub.Next, sub.LastSeq, tt.next, tt.last)
		}
	}

	// a1 has one row per URL, due at its creation; a2 waits behind a1
	// (the ordering rule); b has no callbacks.
	rows := eventRows(t, s)
	if len(rows) != 1 || len(rows[a1.ID]) != 2 {
		t.Fatalf("due event rows = %+v, want the 2 of %s", rows, a1.ID)
	}
	var gotURLs []string
	for _, r := range rows[a1.ID] {
		gotURLs = append(gotURLs, r.URL)
		if r.TxID != "" || r.SubscriptionID != a.ID || r.EventSeq != 1 || r.ID == a1.ID || r.ID == "" ||
			r.Status != engine.CallbackPending || r.Attempts != 0 {
			t.Errorf("outbox row %+v is not a fresh row of delivery %s", r, a1.ID)
		}
		wantTime(t, "outbox row NextAttempt", r.NextAttempt, a1.Created)
	}
	slices.Sort(gotURLs)
	if !slices.Equal(gotURLs, urls) {
		t.Fatalf("outbox URLs = %v, want %v", gotURLs, urls)
	}
	wantPending(t, s, 4)

	live, err := s.LiveDeliveries(ctx, "dev", 0)
	must(t, err)
	want := []engine.SubscriptionEvent{a1, a2, b1}
	if b.ID < a.ID {
		want = []engine.SubscriptionEvent{b1, a1, a2}
	}
	wantEvents(t, "LiveDeliveries from 0", live, want)
	live, err = s.LiveDeliveries(ctx, "dev", 11)
	must(t, err)
	wantEvents(t, "LiveDeliveries from 11", live, []engine.SubscriptionEvent{a2})
	if live, err := s.LiveDeliveries(ctx, "other", 0); err != nil || len(live) != 0 {
		t.Fatalf("LiveDeliveries of another network = %+v, %v", live, err)
	}
	blocks, err := s.SubscriptionBlocks(ctx, "dev", 10)
	must(t, err)
	if !slices.Equal(blocks, []engine.IndexedBlock{{Number: 11, Hash: h11}, {Number: 10, Hash: h10}}) {
		t.Fatalf("SubscriptionBlocks = %+v", blocks)
	}

	// A reorg takes block 11 back: a2 is retracted (a3, removed), block 11
	// is forgotten and stored again with its new hash, with 12 and 13;
	// with KeepBlocks 2, block 10 is pruned (13 - 2 = 11).
	h11b, h12, h13 := randomHash(t), randomHash(t), randomHash(t)
	a3 := delivery(t, a, 3, 11, h11, 3, 20)
	a3.Removed = true
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{
		Network:    "dev",
		Events:     []engine.SubscriptionEvent{a3},
		Retracted:  []string{a2.ID},
		Next:       map[string]uint64{a.ID: 14, b.ID: 14},
		Blocks:     []engine.IndexedBlock{{Number: 11, Hash: h11b}, {Number: 12, Hash: h12}, {Number: 13, Hash: h13}},
		ForgetFrom: ptr(uint64(11)),
		KeepBlocks: 2,
	}))
	live, err = s.LiveDeliveries(ctx, "dev", 0)
	must(t, err)
	want = []engine.SubscriptionEvent{a1, b1}
	if b.ID < a.ID {
		want = []engine.SubscriptionEvent{b1, a1}
	}
	wantEvents(t, "LiveDeliveries after the retraction", live, want)
	got, err = s.SubscriptionEvents(ctx, a.ID, 0, 10)
	must(t, err)
	wantEvents(t, "deliveries of a after the retraction", got, []engine.SubscriptionEvent{a1, a2, a3})
	blocks, err = s.SubscriptionBlocks(ctx, "dev", 10)
	must(t, err)
	if !slices.Equal(blocks, []engine.IndexedBlock{{Number: 13, Hash: h13}, {Number: 12, Hash: h12}, {Number: 11, Hash: h11b}}) {
		t.Fatalf("SubscriptionBlocks after the reorg = %+v", blocks)
	}
	if sub, err := s.SubscriptionByID(ctx, a.ID); err != nil || sub.Next != 14 || sub.LastSeq != 3 {
		t.Fatalf("subscription a after the reorg = %+v, %v; want next 14, last seq 3", sub, err)
	}
	wantPending(t, s, 6)

	// A seq taken twice is a conflict, and the step stores nothing.
	dup := delivery(t, b, 1, 14, randomHash(t), 0, 30)
	fresh := delivery(t, a, 4, 14, dup.BlockHash, 1, 30)
	err = s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
		Events: []engine.SubscriptionEvent{fresh, dup}, Next: map[string]uint64{a.ID: 15}})
	wantCode(t, err, engine.CodeConflict, "a seq taken twice")
	if _, err := s.SubscriptionEventByID(ctx, fresh.ID); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a refused step stored %s: %v", fresh.ID, err)
	}
	if sub, err := s.SubscriptionByID(ctx, a.ID); err != nil || sub.Next != 14 || sub.LastSeq != 3 {
		t.Fatalf("a refused step moved a: %+v, %v", sub, err)
	}
	wantPending(t, s, 6)

	// The owners' addresses.
	second := newAccount(t, s, f.user.ID, 1, false)
	addrs, err := s.OwnerAddresses(ctx, []string{f.user.ID, newID()})
	must(t, err)
	if len(addrs) != 1 || !slices.Equal(addrs[f.user.ID], []common.Address{f.account.Address, second.Address}) {
		t.Fatalf("OwnerAddresses = %v, want %s's two accounts", addrs, f.user.ID)
	}
}

// testSubscriptionStepFenced: a step fenced by a tenure that is not the
// lease's stores nothing; the holder's goes through.
func testSubscriptionStepFenced(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	sub := createSub(t, s, newSubscription(t, u.ID, "dev", 1, "https://a.example/cb"))
	held, epoch, err := s.AcquireNetworkLease(ctx, "dev", "node-a", time.Minute)
	must(t, err)
	if !held {
		t.Fatal("node-a did not get the lease")
	}
	step := func() engine.SubscriptionStep {
		return engine.SubscriptionStep{Network: "dev",
			Events: []engine.SubscriptionEvent{delivery(t, sub, 1, 10, randomHash(t), 0, 2)},
			Next:   map[string]uint64{sub.ID: 11},
			Blocks: []engine.IndexedBlock{{Number: 10, Hash: randomHash(t)}}}
	}
	for _, f := range []engine.NetworkFence{
		{Network: "dev", Node: "node-b", Epoch: epoch},
		{Network: "dev", Node: "node-a", Epoch: epoch + 1},
		{Network: "other", Node: "node-a", Epoch: epoch},
	} {
		err := s.SaveSubscriptionStep(ctx, f, step())
		if err == nil {
			t.Fatalf("step fenced by %+v went through", f)
		}
		if f.Network == "dev" {
			wantLeaseLost(t, err, fmt.Sprintf("step fenced by %+v", f))
		}
		if evs, err := s.SubscriptionEvents(ctx, sub.ID, 0, 10); err != nil || len(evs) != 0 {
			t.Fatalf("a refused step stored deliveries: %+v, %v", evs, err)
		}
		if got, err := s.SubscriptionByID(ctx, sub.ID); err != nil || got.Next != 10 || got.LastSeq != 0 {
			t.Fatalf("a refused step moved the subscription: %+v, %v", got, err)
		}
		if blocks, err := s.SubscriptionBlocks(ctx, "dev", 10); err != nil || len(blocks) != 0 {
			t.Fatalf("a refused step stored blocks: %+v, %v", blocks, err)
		}
		wantPending(t, s, 0)
	}
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{Network: "dev", Node: "node-a", Epoch: epoch}, step()))
	if got, err := s.SubscriptionByID(ctx, sub.ID); err != nil || got.Next != 11 || got.LastSeq != 1 {
		t.Fatalf("the holder's step: %+v, %v", got, err)
	}
	wantPending(t, s, 1)
}

// testEventOutboxOrder: the rows of one subscription and URL are due one
// at a time, in seq order, in DueCallbacks and ClaimDueCallbacks; another
// URL, another subscription and transactions' rows are independent.
func testEventOutboxOrder(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	u1, u2 := "https://a.example/1", "https://b.example/2"
	sub := createSub(t, s, newSubscription(t, f.user.ID, "dev", 1, u1, u2))
	solo := createSub(t, s, newSubscription(t, f.user.ID, "dev", 2, u1))
	h := randomHash(t)
	e1, e2, e3 := delivery(t, sub, 1, 10, h, 0, 5), delivery(t, sub, 2, 10, h, 1, 5), delivery(t, sub, 3, 11, h, 0, 6)
	s1 := delivery(t, solo, 1, 10, h, 2, 5)
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
		Events: []engine.SubscriptionEvent{e1, e2, e3, s1}}))
	tx := f.tx("dev", 3)
	tx.Callbacks = []string{u1}
	insert(t, s, tx)
	must(t, s.MarkFailed(ctx, tx.ID, &engine.TxError{Code: engine.TxReverted, Message: "x"}, at(4)))
	wantPending(t, s, 8)

	// due returns the (delivery seq of sub, URL) pairs due, and whether
	// the rows of solo and tx are among them.
	type key struct {
		seq int64
		url string
	}
	due := func(rows []engine.Callback) (map[key]string, bool, bool) {
		out := map[key]string{}
		soloDue, txDue := false, false
		for _, r := range rows {
			switch {
			case r.TxID == tx.ID:
				txDue = true
			case r.SubscriptionID == solo.ID:
				soloDue = true
			case r.SubscriptionID == sub.ID:
				out[key{r.EventSeq, r.URL}] = r.ID
			}
		}
		return out, soloDue, txDue
	}
	check := func(what string, want ...key) map[key]string {
		t.Helper()
		rows, err := s.DueCallbacks(ctx, farFuture, 100)
		must(t, err)
		got, soloDue, txDue := due(rows)
		if !soloDue || !txDue {
			t.Fatalf("%s: the rows of another subscription (%v) or of a transaction (%v) are not due", what, soloDue, txDue)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: due %v, want %v", what, got, want)
		}
		for _, k := range want {
			if got[k] == "" {
				t.Fatalf("%s: due %v, want %v", what, got, want)
			}
		}
		return got
	}
	rows := check("at first", key{1, u1}, key{1, u2})
	firstToU1 := rows[key{1, u1}]
	// A failed attempt of seq 1 to u1 (retry later) still holds back seq 2
	// to u1, even while that retry is not due.
	must(t, s.MarkCallbackRetry(ctx, firstToU1, 1, farFuture.Add(time.Hour), "HTTP status 500"))
	check("after a retry of 1 to u1", key{1, u2})
	must(t, s.MarkCallbackDelivered(ctx, rows[key{1, u2}], 1, at(7)))
	rows = check("after 1 to u2 was delivered", key{2, u2})

	// ClaimDueCallbacks follows the same rule.
	claimed, err := s.ClaimDueCallbacks(ctx, "node-a", farFuture, time.Minute, 100)
	must(t, err)
	got, _, _ := due(claimed)
	if len(got) != 1 || got[key{2, u2}] == "" {
		t.Fatalf("claimed %v, want only 2 to u2", got)
	}
	must(t, s.MarkCallbackAbandoned(ctx, firstToU1, 2, "gave up"))
	rows = check("after 1 to u1 was abandoned", key{2, u1}, key{2, u2})
	claimed, err = s.ClaimDueCallbacks(ctx, "node-b", farFuture, time.Minute, 100)
	must(t, err)
	got, _, _ = due(claimed)
	if len(got) != 1 || got[key{2, u1}] == "" {
		t.Fatalf("node-b claimed %v, want only 2 to u1 (2 to u2 is node-a's)", got)
	}
	must(t, s.MarkCallbackDelivered(ctx, rows[key{2, u1}], 1, at(8)))
	must(t, s.MarkCallbackDelivered(ctx, rows[key{2, u2}], 1, at(8)))
	rows = check("after 2 was delivered", key{3, u1}, key{3, u2})

	// A later step's rows wait behind the pending ones too, and are due
	// once those are delivered; a pair without pending rows is due at once.
	e4 := delivery(t, sub, 4, 12, h, 0, 9)
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
		Events: []engine.SubscriptionEvent{e4}}))
	check("after a step added 4", key{3, u1}, key{3, u2})
	must(t, s.MarkCallbackDelivered(ctx, rows[key{3, u1}], 1, at(10)))
	check("after 3 to u1 was delivered", key{4, u1}, key{3, u2})
	pending, err := s.PendingCallbacks(ctx)
	must(t, err)
	all, err := s.DueCallbacks(ctx, farFuture, 100)
	must(t, err)
	for _, r := range all {
		if r.SubscriptionID == solo.ID {
			must(t, s.MarkCallbackDelivered(ctx, r.ID, 1, at(10)))
		}
	}
	s2 := delivery(t, solo, 2, 12, h, 1, 11)
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
		Events: []engine.SubscriptionEvent{s2}}))
	if rows := eventRows(t, s); len(rows[s2.ID]) != 1 {
		t.Fatalf("the row of a subscription without pending rows is not due: %+v", rows)
	}
	wantPending(t, s, pending)
}

// Outbox0013 is the migration test of 0013: an outbox row of a transaction
// stored before (with its attempts, error and claim) survives the rebuild
// of the table; new rows of transactions and deliveries go in after it.
// old is the store at version 12, exec runs a statement on it, reopen
// returns it migrated.
func Outbox0013(t *testing.T, old engine.Store, exec func(q string, args ...any) error, reopen func() engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, old)
	tx := f.tx("dev", 1)
	tx.Callbacks = []string{"https://a.example/cb"}
	insert(t, old, tx)
	// The row as 0005 and 0008 wrote it (the times those of the
	// transaction, in the database's encoding).
	must(t, exec(`INSERT INTO callback_outbox (id, tx_id, url, status, attempts, next_attempt, last_error, created, claimed_by, claimed_until)
		SELECT 'row-0013', id, 'https://a.example/cb', 'pending', 2, created, 'HTTP status 500', created, 'node-x', created
		FROM transactions WHERE id = ?`, tx.ID))
	must(t, exec(`INSERT INTO callback_outbox (id, tx_id, url, status, attempts, next_attempt, last_error, created, delivered)
		SELECT 'done-0013', id, 'https://b.example/cb', 'delivered', 1, created, '', created, created
		FROM transactions WHERE id = ?`, tx.ID))
	s := reopen()
	rows, err := s.DueCallbacks(ctx, farFuture, 10)
	must(t, err)
	if len(rows) != 1 {
		t.Fatalf("due rows after 0013 = %+v, want the pending one", rows)
	}
	r := rows[0]
	if r.ID != "row-0013" || r.TxID != tx.ID || r.EventID != "" || r.SubscriptionID != "" || r.EventSeq != 0 ||
		r.URL != "https://a.example/cb" || r.Status != engine.CallbackPending || r.Attempts != 2 || r.LastError != "HTTP status 500" {
		t.Fatalf("row after 0013 = %+v", r)
	}
	wantTime(t, "migrated NextAttempt", r.NextAttempt, tx.Created)
	// Its claim survived: another node cannot take it before it ends (it
	// ended at the transaction's creation, so it can now).
	claimed, err := s.ClaimDueCallbacks(ctx, "node-y", farFuture, time.Minute, 10)
	must(t, err)
	if len(claimed) != 1 || claimed[0].ID != "row-0013" {
		t.Fatalf("claimed after 0013 = %+v", claimed)
	}
	wantCode(t, s.MarkCallbackDelivered(ctx, "done-0013", 2, at(9)), engine.CodeConflict, "the delivered row stays delivered")
	must(t, s.MarkCallbackDelivered(ctx, "row-0013", 3, at(9)))
	// New rows go in after the migration, of both kinds.
	must(t, s.MarkFailed(ctx, tx.ID, &engine.TxError{Code: engine.TxReverted, Message: "x"}, at(10)))
	sub := createSub(t, s, newSubscription(t, f.user.ID, "dev", 11, "https://c.example/cb"))
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
		Events: []engine.SubscriptionEvent{delivery(t, sub, 1, 10, randomHash(t), 0, 12)}}))
	wantPending(t, s, 2)
}

// testSubscriptionStepLarge: a step of more deliveries and outbox rows
// than one bulk statement carries stores them all, in order.
func testSubscriptionStepLarge(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	a := createSub(t, s, newSubscription(t, u.ID, "dev", 1, "https://a.example/cb"))
	b := createSub(t, s, newSubscription(t, u.ID, "dev", 2, "https://a.example/cb", "https://b.example/cb"))
	const n = 5100 // more than one bulk statement carries (5000) on PostgreSQL
	events := make([]engine.SubscriptionEvent, 0, n)
	h := randomHash(t)
	for i := range n {
		sub := a
		if i%3 == 0 {
			sub = b
		}
		seq := int64(i/3 + 1)
		if sub == a {
			seq = int64(i - i/3)
		}
		events = append(events, delivery(t, sub, seq, 100+uint64(i/100), h, uint(i%100), 3))
	}
	start := time.Now()
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev", Events: events,
		Next: map[string]uint64{a.ID: 200, b.ID: 200}}))
	t.Logf("a step of %d deliveries took %s", n, time.Since(start))
	wantPending(t, s, n/3*2+n/3*2)
	for _, tt := range []struct {
		sub  *engine.Subscription
		want int64
	}{{a, n / 3 * 2}, {b, n / 3}} {
		got, err := s.SubscriptionByID(ctx, tt.sub.ID)
		must(t, err)
		if got.LastSeq != tt.want || got.Next != 200 {
			t.Fatalf("subscription after a large step: last seq %d, next %d; want %d, 200", got.LastSeq, got.Next, tt.want)
		}
		var seq int64
		for {
			page, err := s.SubscriptionEvents(ctx, tt.sub.ID, seq, 1000)
			must(t, err)
			if len(page) == 0 {
				break
			}
			for _, ev := range page {
				if ev.Seq != seq+1 {
					t.Fatalf("seq %d after %d", ev.Seq, seq)
				}
				seq = ev.Seq
			}
		}
		if seq != tt.want {
			t.Fatalf("read %d deliveries of %s, want %d", seq, tt.sub.ID, tt.want)
		}
	}
}

// testEventOutboxRace: steps that add rows of a subscription and URL while
// its pending row is delivered concurrently never leave a row held without
// one to release it: after each round exactly the lowest pending row of the
// pair is due, and the queue drains.
func testEventOutboxRace(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	sub := createSub(t, s, newSubscription(t, u.ID, "dev", 1, "https://a.example/cb"))
	h := randomHash(t)
	seq := int64(1)
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
		Events: []engine.SubscriptionEvent{delivery(t, sub, seq, 10, h, 0, 2)}}))
	lowestDue := func(what string) (engine.Callback, bool) {
		t.Helper()
		n, err := s.PendingCallbacks(ctx)
		must(t, err)
		rows := eventRows(t, s)
		if n == 0 {
			if len(rows) != 0 {
				t.Fatalf("%s: due rows %+v without pending ones", what, rows)
			}
			return engine.Callback{}, false
		}
		if len(rows) != 1 {
			t.Fatalf("%s: %d pending rows, due %+v: want exactly the lowest", what, n, rows)
		}
		for _, r := range rows {
			return r[0], true
		}
		return engine.Callback{}, false
	}
	for round := range 25 {
		head, ok := lowestDue(fmt.Sprintf("round %d", round))
		seq++
		ev := delivery(t, sub, seq, 10+uint64(seq), h, 0, 3)
		errs := make(chan error, 2)
		go func() {
			errs <- s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
				Events: []engine.SubscriptionEvent{ev}})
		}()
		go func() {
			if !ok {
				errs <- nil
				return
			}
			errs <- s.MarkCallbackDelivered(ctx, head.ID, 1, at(4))
		}()
		must(t, <-errs)
		must(t, <-errs)
	}
	var last int64
	for range 100 {
		head, ok := lowestDue("draining")
		if !ok {
			return
		}
		if head.EventSeq <= last {
			t.Fatalf("due seq %d after %d", head.EventSeq, last)
		}
		last = head.EventSeq
		must(t, s.MarkCallbackDelivered(ctx, head.ID, 1, at(5)))
	}
	t.Fatal("the queue does not drain")
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
