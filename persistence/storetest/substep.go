package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// The step of a network's subscription processor
// (engine.SubscriptionProcessorStore.SaveSubscriptionStep).

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

// testSubscriptionRewindChunks: what the processor's retraction in chunks
// (issue 27, finding 8) relies on. A chunk that retracts some deliveries
// and rewinds their subscriptions, without blocks and without ForgetFrom,
// commits that alone: the orphaned block hashes stay (the next poll sees
// the reorg again) and LiveDeliveries returns only what is left; the last
// chunk forgets the orphaned hashes.
func testSubscriptionRewindChunks(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	a := createSub(t, s, newSubscription(t, f.user.ID, "dev", 1))
	b := createSub(t, s, newSubscription(t, f.user.ID, "dev", 2))
	h9, h10, h11 := randomHash(t), randomHash(t), randomHash(t)
	a1, a2 := delivery(t, a, 1, 10, h10, 0, 10), delivery(t, a, 2, 11, h11, 0, 11)
	b1 := delivery(t, b, 1, 11, h11, 1, 11)
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{
		Network: "dev", Events: []engine.SubscriptionEvent{a1, a2, b1},
		Next:   map[string]uint64{a.ID: 12, b.ID: 12},
		Blocks: []engine.IndexedBlock{{Number: 9, Hash: h9}, {Number: 10, Hash: h10}, {Number: 11, Hash: h11}},
	}))
	// A reorg from block 10: the first chunk retracts a's two deliveries
	// and rewinds a.
	r2, r1 := delivery(t, a, 3, 11, h11, 0, 20), delivery(t, a, 4, 10, h10, 0, 20)
	r2.Removed, r1.Removed = true, true
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{
		Network: "dev", Events: []engine.SubscriptionEvent{r2, r1}, Retracted: []string{a2.ID, a1.ID},
		Next: map[string]uint64{a.ID: 10}, KeepBlocks: 256,
	}))
	blocks, err := s.SubscriptionBlocks(ctx, "dev", 10)
	must(t, err)
	if len(blocks) != 3 || blocks[0] != (engine.IndexedBlock{Number: 11, Hash: h11}) {
		t.Fatalf("blocks after a chunk without ForgetFrom = %+v, want 11, 10, 9 as stored", blocks)
	}
	live, err := s.LiveDeliveries(ctx, "dev", 10)
	must(t, err)
	wantEvents(t, "LiveDeliveries after the first chunk", live, []engine.SubscriptionEvent{b1})
	if sub, err := s.SubscriptionByID(ctx, a.ID); err != nil || sub.Next != 10 || sub.LastSeq != 4 {
		t.Fatalf("a after its chunk = %+v, %v; want next 10, last seq 4", sub, err)
	}
	if sub, err := s.SubscriptionByID(ctx, b.ID); err != nil || sub.Next != 12 || sub.LastSeq != 1 {
		t.Fatalf("b before its chunk = %+v, %v; want next 12, last seq 1", sub, err)
	}
	// The last chunk: b's retraction, and the orphaned hashes forgotten.
	rb := delivery(t, b, 2, 11, h11, 1, 21)
	rb.Removed = true
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{
		Network: "dev", Events: []engine.SubscriptionEvent{rb}, Retracted: []string{b1.ID},
		Next: map[string]uint64{b.ID: 10}, ForgetFrom: ptr(uint64(10)), KeepBlocks: 256,
	}))
	blocks, err = s.SubscriptionBlocks(ctx, "dev", 10)
	must(t, err)
	if !slices.Equal(blocks, []engine.IndexedBlock{{Number: 9, Hash: h9}}) {
		t.Fatalf("blocks after the last chunk = %+v, want 9 alone", blocks)
	}
	if live, err := s.LiveDeliveries(ctx, "dev", 0); err != nil || len(live) != 0 {
		t.Fatalf("LiveDeliveries after the last chunk = %+v, %v", live, err)
	}
}
