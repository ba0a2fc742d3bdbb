package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// subWatch is an events subscription on the test's token (every Transfer)
// with a callback receiver that records the delivery id and sequence of
// every request it gets.
type subWatch struct {
	s    *stack
	id   string
	recv *httptest.Server
	mu   sync.Mutex
	// got counts the requests per delivery id; order holds the sequence
	// of each delivery's first request, in arrival order.
	got   map[string]int
	order []int64
}

// subscribe creates the subscription through node 0.
func (s *stack) subscribe() *subWatch {
	s.t.Helper()
	w := &subWatch{s: s, got: map[string]int{}}
	w.recv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct {
			Event struct {
				ID       string `json:"id"`
				Sequence int64  `json:"sequence"`
			} `json:"event"`
		}
		if json.Unmarshal(body, &p) != nil || p.Event.ID == "" || p.Event.ID != r.Header.Get("X-Callback-Id") {
			s.t.Errorf("event callback %s (X-Callback-Id %q)", body, r.Header.Get("X-Callback-Id"))
		}
		w.mu.Lock()
		if w.got[p.Event.ID] == 0 {
			w.order = append(w.order, p.Event.Sequence)
		}
		w.got[p.Event.ID]++
		w.mu.Unlock()
	}))
	s.t.Cleanup(w.recv.Close)
	r, err := s.nodes[0].post("/subscriptions", "POST", s.token, "", map[string]any{
		"contractId": s.tokenID, "event": "Transfer", "callbacks": []string{w.recv.URL + "/events"}, "confirmations": 0,
	})
	if err != nil || r.Status != 201 {
		s.t.Fatalf("create the subscription: %v %d %s", err, r.Status, r.Raw)
	}
	w.id = r.Body["data"].(map[string]any)["id"].(string)
	return w
}

// pull reads every delivery of the subscription through a running node.
func (w *subWatch) pull() ([]map[string]any, error) {
	var out []map[string]any
	cursor := ""
	for _, n := range w.s.nodes {
		if !n.running() {
			continue
		}
		for {
			path := fmt.Sprintf("/subscriptions/%s/events?limit=1000", w.id)
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			r, err := n.get(path, w.s.token)
			if err != nil || r.Status != 200 {
				return nil, fmt.Errorf("GET %s: %v %d %s", path, err, r.Status, r.Raw)
			}
			rows, _ := r.Body["data"].([]any)
			for _, row := range rows {
				out = append(out, row.(map[string]any))
			}
			cursor, _ = r.Body["next"].(string)
			if len(rows) < 1000 {
				return out, nil
			}
		}
	}
	return nil, fmt.Errorf("no running node")
}

// check waits until the subscription delivered the Transfer of every
// completed transfer of rows, then checks: one delivery per transfer (none
// removed: no reorg on geth --dev), sequences 1..n without gaps, every
// delivery's callback received at least once, first arrivals in sequence
// order (one subscription's deliveries to one URL go one at a time), and
// logs how many came more than once (at least once: a delivery in flight
// on a killed node is sent again).
func (w *subWatch) check(t *testing.T, rows []txRow, timeout time.Duration) {
	t.Helper()
	want := map[string]bool{}
	for _, r := range rows {
		if r.Status == "completed" {
			want[lower(r.TransactionHash)] = true
		}
	}
	deadline := time.Now().Add(timeout)
	var evs []map[string]any
	for {
		var err error
		evs, err = w.pull()
		w.mu.Lock()
		received := len(w.got)
		w.mu.Unlock()
		if err == nil && len(evs) >= len(want) && received >= len(evs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscription: %d deliveries pulled (%v), %d received by callback, want %d", len(evs), err, received, len(want))
		}
		time.Sleep(500 * time.Millisecond)
	}
	seen := map[string]int{}
	for i, ev := range evs {
		if seq := int(ev["sequence"].(float64)); seq != i+1 || ev["removed"] != false {
			t.Fatalf("delivery %d: sequence %d, removed %v", i+1, seq, ev["removed"])
		}
		seen[lower(ev["transactionHash"].(string))]++
	}
	for h := range want {
		if seen[h] != 1 {
			t.Errorf("transfer %s delivered %d times, want once", h, seen[h])
		}
	}
	if len(evs) != len(want) {
		t.Errorf("%d deliveries for %d completed transfers", len(evs), len(want))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	dups := 0
	for _, ev := range evs {
		n := w.got[ev["id"].(string)]
		if n == 0 {
			t.Errorf("delivery %v never reached the callback", ev["id"])
		}
		dups += max(n-1, 0)
	}
	for i, seq := range w.order {
		if seq != int64(i+1) {
			t.Fatalf("callback %d was the first of sequence %d: out of order", i+1, seq)
		}
	}
	t.Logf("subscription: %d deliveries, sequences 1..%d, every callback received; %d sent more than once", len(evs), len(evs), dups)
}
