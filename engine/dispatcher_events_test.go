package engine_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// addEvent stores a subscription of a user with secret (when sub is new),
// one delivery of it with seq and body, and one pending row per URL; it
// returns the delivery and the row ids.
func (m *memOutbox) addEvent(subID, secret string, seq int64, body string, urls ...string) (*engine.SubscriptionEvent, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	owner := "owner-of-" + subID
	if _, ok := m.subs[subID]; !ok {
		sealed, err := testSecrets().SealCallbackSecret(owner, secret)
		if err != nil {
			panic(err)
		}
		m.users[owner] = &engine.User{ID: owner, CallbackSecret: sealed}
		m.subs[subID] = &engine.Subscription{ID: subID, Owner: owner, Network: "dev", Kind: engine.SubscriptionEvents, Callbacks: urls}
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	ev := &engine.SubscriptionEvent{ID: fmt.Sprintf("ev-%s-%d", subID, seq), SubscriptionID: subID, Seq: seq,
		Body: json.RawMessage(body), Created: now}
	m.events[ev.ID] = ev
	var ids []string
	for i, url := range urls {
		id := fmt.Sprintf("row-%s-%d-%d", subID, seq, i)
		m.rows[id] = &engine.Callback{ID: id, EventID: ev.ID, SubscriptionID: subID, EventSeq: seq, URL: url,
			Status: engine.CallbackPending, NextAttempt: now, Created: now}
		m.order = append(m.order, id)
		ids = append(ids, id)
	}
	return ev, ids
}

// outcomes records the calls of DispatcherConfig.Outcome.
type outcomes struct {
	mu  sync.Mutex
	got []string
}

func (o *outcomes) record(kind, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, kind+"/"+outcome)
}

func (o *outcomes) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.got)
}

// TestDispatcherDeliversEvents: an event row is POSTed as {"event": <the
// stored body>}, with X-Callback-Id the delivery's id (the same for every
// URL and every attempt), signed with the subscription owner's secret; the
// outcomes are reported by kind.
func TestDispatcherDeliversEvents(t *testing.T) {
	rc := newReceiver(t, func(n int, _ *http.Request) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	store := newMemOutbox()
	body := `{"id":"ev-sub-1-1","subscriptionId":"sub-1","sequence":1,"event":"Transfer","removed":false}`
	ev, ids := store.addEvent("sub-1", "event-secret", 1, body, rc.URL+"/a", rc.URL+"/b")
	tx, txIDs := store.add(engine.StatusCompleted, "tx-secret", rc.URL+"/tx")
	var seen outcomes
	d := engine.NewDispatcher(engine.DispatcherConfig{Store: store, Secrets: testSecrets(), AllowPrivate: true,
		Backoff: fastBackoff, Concurrency: 1, Outcome: seen.record})
	defer d.Close(time.Second)

	pump(t, d, 5*time.Second, store.settled(append(slices.Clone(ids), txIDs...)))
	for _, id := range ids {
		if row := store.row(id); row.Status != engine.CallbackDelivered {
			t.Fatalf("row %s = %+v, want delivered", id, row)
		}
	}
	wantBody, err := engine.EventCallbackBody(ev.Body)
	if err != nil {
		t.Fatal(err)
	}
	var eventReqs int
	for i, r := range rc.got() {
		if r.header.Get("X-Callback-Id") == txIDs[0] {
			txBody, _ := engine.CallbackBody(tx)
			if string(r.body) != string(txBody) {
				t.Errorf("transaction request body = %s", r.body)
			}
			continue
		}
		eventReqs++
		if got := r.header.Get("X-Callback-Id"); got != ev.ID {
			t.Errorf("request %d: X-Callback-Id = %q, want the delivery id %q", i+1, got, ev.ID)
		}
		if string(r.body) != string(wantBody) {
			t.Errorf("request %d: body = %s, want %s", i+1, r.body, wantBody)
		}
		var parsed struct {
			Event map[string]any `json:"event"`
		}
		if err := json.Unmarshal(r.body, &parsed); err != nil || parsed.Event["id"] != ev.ID {
			t.Errorf("request %d: body %s does not hold the event (%v)", i+1, r.body, err)
		}
		sig := r.header.Get("X-Callback-Signature")
		if err := engine.VerifySignature("event-secret", sig, r.body, time.Now(), time.Minute); err != nil {
			t.Errorf("request %d: signature: %v", i+1, err)
		}
		if engine.VerifySignature("tx-secret", sig, r.body, time.Now(), time.Minute) == nil {
			t.Errorf("request %d: signed with another user's secret", i+1)
		}
	}
	if eventReqs != 3 { // one URL failed once
		t.Errorf("receiver got %d event requests, want 3", eventReqs)
	}
	got := seen.list()
	slices.Sort(got)
	want := []string{"event/delivered", "event/delivered", "event/retry", "transaction/delivered"}
	if !slices.Equal(got, want) {
		t.Errorf("outcomes = %v, want %v", got, want)
	}
}

// TestDispatcherAbandonsEventsOfDeletedSubscriptions: the row of a deleted
// subscription is abandoned without a request.
func TestDispatcherAbandonsEventsOfDeletedSubscriptions(t *testing.T) {
	rc := newReceiver(t, func(int, *http.Request) int { return http.StatusOK })
	store := newMemOutbox()
	_, ids := store.addEvent("gone", "s", 1, `{"id":"x"}`, rc.URL)
	store.mu.Lock()
	delete(store.subs, "gone")
	store.mu.Unlock()
	var seen outcomes
	d := engine.NewDispatcher(engine.DispatcherConfig{Store: store, Secrets: testSecrets(), AllowPrivate: true,
		Backoff: fastBackoff, Outcome: seen.record})
	defer d.Close(time.Second)

	pump(t, d, 5*time.Second, store.settled(ids))
	if row := store.row(ids[0]); row.Status != engine.CallbackAbandoned || row.Attempts != 0 || row.LastError != "subscription deleted" {
		t.Fatalf("row = %+v, want abandoned without an attempt: subscription deleted", row)
	}
	if n := len(rc.got()); n != 0 {
		t.Fatalf("receiver got %d requests, want none", n)
	}
	if got := seen.list(); !slices.Equal(got, []string{"event/abandoned"}) {
		t.Fatalf("outcomes = %v", got)
	}
}
