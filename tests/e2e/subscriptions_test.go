package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// pullEvents reads every delivery of subscription id after cursor (""
// from the first) with GET /subscriptions/{id}/events in pages of limit,
// and returns them with the cursor to continue from.
func pullEvents(t *testing.T, s *service, token, id, cursor string, limit int) ([]map[string]any, string) {
	t.Helper()
	var out []map[string]any
	for {
		path := fmt.Sprintf("/subscriptions/%s/events?limit=%d", id, limit)
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := s.call("GET", path, token, nil)
		if r.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Raw)
		}
		rows, _ := r.Body["data"].([]any)
		next, ok := r.Body["next"].(string)
		if !ok || next == "" {
			t.Fatalf("GET %s: no next cursor in %s", path, r.Raw)
		}
		for _, row := range rows {
			out = append(out, row.(map[string]any))
		}
		cursor = next
		if len(rows) < limit {
			return out, cursor
		}
	}
}

// wantSequence checks that deliveries are numbered 1..n in order, without
// gaps, are of subscription id, and that non-removed ones come in block and
// log order.
func wantSequence(t *testing.T, id string, evs []map[string]any) {
	t.Helper()
	var lastBlock, lastLog float64 = -1, -1
	for i, ev := range evs {
		if seq := ev["sequence"].(float64); int(seq) != i+1 {
			t.Fatalf("delivery %d has sequence %v, want %d (no gaps): %v", i, seq, i+1, ev)
		}
		if ev["subscriptionId"] != id {
			t.Fatalf("delivery %v of subscription %v, want %s", ev["id"], ev["subscriptionId"], id)
		}
		if ev["removed"] == true {
			continue
		}
		b, l := ev["blockNumber"].(float64), ev["logIndex"].(float64)
		if b < lastBlock || (b == lastBlock && l <= lastLog) {
			t.Fatalf("delivery %d at block %v log %v after block %v log %v: not in chain order", i+1, b, l, lastBlock, lastLog)
		}
		lastBlock, lastLog = b, l
	}
}

// txHashes returns the transactionHash of every non-removed delivery.
func txHashes(evs []map[string]any) map[string]int {
	out := map[string]int{}
	for _, ev := range evs {
		if ev["removed"] != true {
			out[strings.ToLower(ev["transactionHash"].(string))]++
		}
	}
	return out
}

// eventCallbacks decodes the event callbacks a receiver got at path:
// {"event": <delivery>} each, its X-Callback-Id the delivery's id.
func eventCallbacks(t *testing.T, rc *hookReceiver, secret, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, k := range rc.at(path) {
		verifySignature(t, secret, k)
		var body map[string]map[string]any
		if err := json.Unmarshal(k.body, &body); err != nil || len(body) != 1 || body["event"] == nil {
			t.Fatalf("event callback body %s: want {\"event\": ...} (%v)", k.body, err)
		}
		ev := body["event"]
		if got := k.header.Get("X-Callback-Id"); got != ev["id"] {
			t.Fatalf("X-Callback-Id %q, delivery id %v", got, ev["id"])
		}
		out = append(out, ev)
	}
	return out
}

// dedupe keeps the first of deliveries with the same id (callbacks are at
// least once).
func dedupe(evs []map[string]any) []map[string]any {
	seen := map[any]bool{}
	var out []map[string]any
	for _, ev := range evs {
		if !seen[ev["id"]] {
			seen[ev["id"]] = true
			out = append(out, ev)
		}
	}
	return out
}

// TestSubscriptions: on the embedded default and on geth, an events
// subscription with a filter delivers exactly the matching Transfer logs to
// its callback (signed, in order, numbered without gaps) and to pull
// clients, a deposits subscription sees transfers to the user's accounts,
// new ones included, another user's subscription is invisible, and a
// deleted one delivers no more.
func TestSubscriptions(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and a chain")
	}
	for _, b := range apiBackends() {
		t.Run(b.name, func(t *testing.T) { testSubscriptions(t, b) })
	}
}

func testSubscriptions(t *testing.T, b backend) {
	h := startHooked(t, b, flakyOnce)
	s, rc, secret := h.service, h.rc, h.secret
	tok := operatorToken(t, s, b.network)
	tokID := tok["id"].(string)
	x, y := hhAddress(), hhAddress()

	sub := s.must(201, "POST", "/subscriptions", s.Token, map[string]any{
		"contractId": tokID, "event": "Transfer", "filters": map[string]any{"to": x},
		"callbacks": []string{rc.URL + "/x", rc.URL + "/flaky"}, "confirmations": 0,
	}).(map[string]any)
	subID := sub["id"].(string)
	if sub["kind"] != "events" || sub["network"] != b.network || sub["event"] != "Transfer" ||
		sub["signature"] != "Transfer(address,address,uint256)" {
		t.Fatalf("created subscription: %v", sub)
	}
	if got := s.must(200, "GET", "/subscriptions/"+subID, s.Token, nil).(map[string]any); got["id"] != subID {
		t.Fatalf("GET the subscription: %v", got)
	}

	user := s.must(201, "POST", "/users", s.Token, map[string]any{"auth": true, "account": true}).(map[string]any)
	userTok := user["token"].(string)
	userAcct := user["account"].(map[string]any)["address"].(string)
	deposits := s.must(201, "POST", "/subscriptions", userTok, map[string]any{"kind": "deposits", "network": b.network}).(map[string]any)
	depID := deposits["id"].(string)
	if deposits["kind"] != "deposits" {
		t.Fatalf("deposits subscription: %v", deposits)
	}
	// Another user's subscriptions are invisible.
	for _, p := range []string{"/subscriptions/" + subID, "/subscriptions/" + subID + "/events"} {
		if r := s.call("GET", p, userTok, nil); r.Status != 404 {
			t.Fatalf("another user's GET %s: %d %s, want 404", p, r.Status, r.Raw)
		}
	}
	if r := s.call("DELETE", "/subscriptions/"+subID, userTok, nil); r.Status != 404 {
		t.Fatalf("another user's DELETE: %d %s, want 404", r.Status, r.Raw)
	}
	if list := s.must(200, "GET", "/subscriptions", userTok, nil).([]any); len(list) != 1 {
		t.Fatalf("the user lists %d subscriptions, want its own 1: %v", len(list), list)
	}

	send := func(to, value string) string {
		tx := s.must(202, "POST", "/tokens/"+tokID+"/transfers", s.Token, map[string]any{"to": to, "value": value}).(map[string]any)
		return tx["id"].(string)
	}
	wantHash := func(ids ...string) map[string]int {
		out := map[string]int{}
		for _, id := range ids {
			tx := s.waitTerminal(id, s.Token, 90*time.Second)
			if tx["status"] != "completed" {
				t.Fatalf("transfer %s ended %v: %v", id, tx["status"], tx["error"])
			}
			out[strings.ToLower(tx["transactionHash"].(string))]++
		}
		return out
	}
	toX := []string{send(x, "1"), send(y, "2"), send(x, "3"), send(userAcct, "4"), send(x, "5")}
	// An account the user creates after subscribing gets deposits too.
	later := s.must(201, "POST", "/accounts", userTok, nil).(map[string]any)["address"].(string)
	toLater := send(later, "6")
	xHashes := wantHash(toX[0], toX[2], toX[4])
	depHashes := wantHash(toX[3], toLater)
	wantHash(toX[1])

	var pulled []map[string]any
	eventually(t, 30*time.Second, "three deliveries to x", func() bool {
		pulled, _ = pullEvents(t, s, s.Token, subID, "", 100)
		return len(pulled) >= 3
	})
	time.Sleep(2 * time.Second) // nothing more may come
	pulled, cursor := pullEvents(t, s, s.Token, subID, "", 2)
	if len(pulled) != 3 {
		t.Fatalf("%d deliveries to x, want 3: %v", len(pulled), pulled)
	}
	wantSequence(t, subID, pulled)
	for h := range xHashes {
		if txHashes(pulled)[h] != 1 {
			t.Fatalf("transfer %s delivered %d times, want once: %v", h, txHashes(pulled)[h], pulled)
		}
	}
	for i, ev := range pulled {
		rv := ev["returnValues"].(map[string]any)
		if ev["event"] != "Transfer" || ev["network"] != b.network || ev["contractId"] != tokID || ev["removed"] != false ||
			!strings.EqualFold(rv["to"].(string), x) || !strings.EqualFold(ev["address"].(string), tok["address"].(string)) {
			t.Fatalf("delivery %d: %v", i+1, ev)
		}
		if want := []string{"1", "3", "5"}[i]; fmt.Sprint(rv["value"]) != want {
			t.Fatalf("delivery %d carries value %v, want %s", i+1, rv["value"], want)
		}
	}
	// The cursor is where a poller continues: nothing new yet.
	if more, _ := pullEvents(t, s, s.Token, subID, cursor, 10); len(more) != 0 {
		t.Fatalf("after the last cursor: %v", more)
	}

	// Callbacks: the same deliveries, in order, signed; the flaky URL
	// answered 503 once and gets them all in order anyway.
	eventually(t, 30*time.Second, "callbacks of the three deliveries", func() bool {
		return len(dedupe(eventCallbacks(t, rc, secret, "/x"))) == 3 && len(dedupe(eventCallbacks(t, rc, secret, "/flaky"))) == 3
	})
	for _, path := range []string{"/x", "/flaky"} {
		got := dedupe(eventCallbacks(t, rc, secret, path))
		for i := range got {
			if got[i]["id"] != pulled[i]["id"] || got[i]["sequence"] != pulled[i]["sequence"] || got[i]["transactionHash"] != pulled[i]["transactionHash"] {
				t.Fatalf("callback %d at %s is %v, pull says %v", i+1, path, got[i], pulled[i])
			}
		}
	}
	if n := len(rc.at("/flaky")); n < 4 {
		t.Fatalf("the flaky receiver got %d requests, want its first again after a 503", n)
	}

	var deps []map[string]any
	eventually(t, 30*time.Second, "two deposits", func() bool {
		deps, _ = pullEvents(t, s, userTok, depID, "", 100)
		return len(deps) >= 2
	})
	wantSequence(t, depID, deps)
	if len(deps) != 2 || len(txHashes(deps)) != 2 {
		t.Fatalf("deposits: %v", deps)
	}
	for h := range depHashes {
		if txHashes(deps)[h] != 1 {
			t.Fatalf("deposit %s delivered %d times: %v", h, txHashes(deps)[h], deps)
		}
	}

	// Deleted: gone, and no more deliveries.
	if r := s.call("DELETE", "/subscriptions/"+subID, s.Token, nil); r.Status >= 300 {
		t.Fatalf("DELETE: %d %s", r.Status, r.Raw)
	}
	if r := s.call("GET", "/subscriptions/"+subID, s.Token, nil); r.Status != 404 {
		t.Fatalf("GET a deleted subscription: %d %s", r.Status, r.Raw)
	}
	wantHash(send(x, "7"))
	time.Sleep(2 * time.Second)
	if got := dedupe(eventCallbacks(t, rc, secret, "/x")); len(got) != 3 {
		t.Fatalf("%d callbacks after the deletion, want still 3", len(got))
	}
}

// TestSubscriptionsSurviveKill: on geth, a subscription's deliveries go on
// across a kill -9 of the service in the middle of a stream of transfers
// (the chain goes on without it) and across a graceful restart: every
// transfer is delivered once to pull clients, numbered without gaps, and
// at least once, in order, to the callback.
func TestSubscriptionsSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and geth")
	}
	var b backend
	for _, c := range backends() {
		if c.name == "geth" {
			b = c
		}
	}
	h := startHooked(t, b, func(string, int) int { return http.StatusOK })
	s, rc, secret := h.service, h.rc, h.secret
	tokID := operatorToken(t, s, b.network)["id"].(string)
	x := hhAddress()
	subID := s.must(201, "POST", "/subscriptions", s.Token, map[string]any{
		"contractId": tokID, "event": "Transfer", "filters": map[string]any{"to": x},
		"callbacks": []string{rc.URL + "/k"}, "confirmations": 0,
	}).(map[string]any)["id"].(string)

	var ids []string
	send := func(s *service, n int) {
		for range n {
			tx := s.must(202, "POST", "/tokens/"+tokID+"/transfers", s.Token, map[string]any{"to": x, "value": "1"}).(map[string]any)
			ids = append(ids, tx["id"].(string))
		}
	}
	send(s, 20)
	eventually(t, 60*time.Second, "the first deliveries", func() bool {
		evs, _ := pullEvents(t, s, s.Token, subID, "", 100)
		return len(evs) >= 3
	})
	s.kill()
	s = h.restart()
	send(s, 10)
	hashes := map[string]bool{}
	for _, id := range ids {
		tx := s.waitTerminal(id, s.Token, 120*time.Second)
		if tx["status"] != "completed" {
			t.Fatalf("transfer %s ended %v: %v", id, tx["status"], tx["error"])
		}
		hashes[strings.ToLower(tx["transactionHash"].(string))] = true
	}
	s.stop()
	s = h.restart()
	send(s, 5)
	for _, id := range ids[30:] {
		tx := s.waitTerminal(id, s.Token, 120*time.Second)
		hashes[strings.ToLower(tx["transactionHash"].(string))] = true
	}

	var evs []map[string]any
	eventually(t, 60*time.Second, "every transfer delivered", func() bool {
		evs, _ = pullEvents(t, s, s.Token, subID, "", 7)
		return len(evs) >= len(ids)
	})
	wantSequence(t, subID, evs)
	got := txHashes(evs)
	if len(evs) != len(ids) || len(got) != len(ids) {
		t.Fatalf("%d deliveries of %d distinct transactions, want %d of %d", len(evs), len(got), len(ids), len(ids))
	}
	for h := range hashes {
		if got[h] != 1 {
			t.Fatalf("transfer %s delivered %d times", h, got[h])
		}
	}
	eventually(t, 60*time.Second, "every callback", func() bool {
		return len(dedupe(eventCallbacks(t, rc, secret, "/k"))) == len(ids)
	})
	// At least once, and in order: the first arrival of each delivery
	// follows the sequence.
	for i, ev := range dedupe(eventCallbacks(t, rc, secret, "/k")) {
		if int(ev["sequence"].(float64)) != i+1 {
			t.Fatalf("callback %d carries sequence %v: not in order", i+1, ev["sequence"])
		}
	}
}
