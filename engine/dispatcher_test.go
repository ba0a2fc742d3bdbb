package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

// memOutbox is an in-memory engine.DispatcherStore.
type memOutbox struct {
	mu    sync.Mutex
	rows  map[string]*engine.Callback
	order []string
	txs   map[string]*engine.Transaction
	users map[string]*engine.User
	// subs and events are the subscriptions (deleted ones absent) and
	// their deliveries.
	subs   map[string]*engine.Subscription
	events map[string]*engine.SubscriptionEvent
	// claims holds the claim of each claimed row.
	claims map[string]memClaim
}

// memClaim is the claim on one outbox row.
type memClaim struct {
	node  string
	until time.Time
}

// testSecrets is the keyring the tests seal callback secrets with.
func testSecrets() *keystore.KeySealer {
	s, err := keystore.NewKeySealer(bytes.Repeat([]byte{9}, keystore.MasterKeySize))
	if err != nil {
		panic(err)
	}
	return s
}

func newMemOutbox() *memOutbox {
	return &memOutbox{rows: map[string]*engine.Callback{}, txs: map[string]*engine.Transaction{}, users: map[string]*engine.User{},
		subs: map[string]*engine.Subscription{}, events: map[string]*engine.SubscriptionEvent{}, claims: map[string]memClaim{}}
}

// add stores a terminal transaction of a user with secret and one pending
// row per URL; it returns the row ids.
func (m *memOutbox) add(status engine.TxStatus, secret string, urls ...string) (*engine.Transaction, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.txs) + 1
	sealed, err := testSecrets().SealCallbackSecret(fmt.Sprintf("user-%d", n), secret)
	if err != nil {
		panic(err)
	}
	u := &engine.User{ID: fmt.Sprintf("user-%d", n), CallbackSecret: sealed}
	now := time.Now().UTC().Truncate(time.Millisecond)
	tx := &engine.Transaction{ID: fmt.Sprintf("tx-%d", n), Owner: u.ID, Status: status, Network: "dev",
		Method: "transfer", Created: now, Ended: &now, Callbacks: urls}
	m.users[u.ID], m.txs[tx.ID] = u, tx
	var ids []string
	for i, url := range urls {
		id := fmt.Sprintf("cb-%d-%d", n, i)
		m.rows[id] = &engine.Callback{ID: id, TxID: tx.ID, URL: url, Status: engine.CallbackPending, NextAttempt: now, Created: now}
		m.order = append(m.order, id)
		ids = append(ids, id)
	}
	return tx, ids
}

func (m *memOutbox) row(id string) engine.Callback {
	m.mu.Lock()
	defer m.mu.Unlock()
	return *m.rows[id]
}

// settled returns a pump condition: none of the rows ids is pending.
func (m *memOutbox) settled(ids []string) func() bool {
	return func() bool {
		for _, id := range ids {
			if m.row(id).Status == engine.CallbackPending {
				return false
			}
		}
		return true
	}
}

func (m *memOutbox) DueCallbacks(_ context.Context, now time.Time, limit int) ([]engine.Callback, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []engine.Callback
	for _, id := range m.order {
		r := m.rows[id]
		if r.Status == engine.CallbackPending && !r.NextAttempt.After(now) {
			out = append(out, *r)
		}
	}
	slices.SortStableFunc(out, func(a, b engine.Callback) int { return a.NextAttempt.Compare(b.NextAttempt) })
	return out[:min(limit, len(out))], nil
}

func (m *memOutbox) ClaimDueCallbacks(ctx context.Context, node string, now time.Time, claimFor time.Duration, limit int) ([]engine.Callback, error) {
	due, _ := m.DueCallbacks(ctx, now, len(m.order))
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []engine.Callback
	for _, r := range due {
		if len(out) == limit {
			break
		}
		if c, ok := m.claims[r.ID]; ok && c.node != node && c.until.After(now) {
			continue
		}
		m.claims[r.ID] = memClaim{node: node, until: now.Add(claimFor)}
		out = append(out, r)
	}
	return out, nil
}

func (m *memOutbox) update(id string, f func(r *engine.Callback)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[id]
	if !ok {
		return engine.ErrNotFound
	}
	if r.Status != engine.CallbackPending {
		return engine.ErrConflict
	}
	f(r)
	delete(m.claims, id)
	return nil
}

func (m *memOutbox) MarkCallbackDelivered(_ context.Context, id string, attempts int, at time.Time) error {
	return m.update(id, func(r *engine.Callback) {
		r.Status, r.Attempts, r.Delivered = engine.CallbackDelivered, attempts, &at
	})
}

func (m *memOutbox) MarkCallbackRetry(_ context.Context, id string, attempts int, next time.Time, lastErr string) error {
	return m.update(id, func(r *engine.Callback) { r.Attempts, r.NextAttempt, r.LastError = attempts, next, lastErr })
}

func (m *memOutbox) MarkCallbackAbandoned(_ context.Context, id string, attempts int, lastErr string) error {
	return m.update(id, func(r *engine.Callback) {
		r.Status, r.Attempts, r.LastError = engine.CallbackAbandoned, attempts, lastErr
	})
}

func (m *memOutbox) PendingCallbacks(context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.rows {
		if r.Status == engine.CallbackPending {
			n++
		}
	}
	return n, nil
}

func (m *memOutbox) TransactionByID(_ context.Context, id string) (*engine.Transaction, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tx, ok := m.txs[id]; ok {
		return tx, nil
	}
	return nil, engine.ErrNotFound
}

func (m *memOutbox) UserByID(_ context.Context, id string) (*engine.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u, ok := m.users[id]; ok {
		return u, nil
	}
	return nil, engine.ErrNotFound
}

func (m *memOutbox) SubscriptionByID(_ context.Context, id string) (*engine.Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.subs[id]; ok {
		return s, nil
	}
	return nil, engine.ErrNotFound
}

func (m *memOutbox) SubscriptionEventByID(_ context.Context, id string) (*engine.SubscriptionEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ev, ok := m.events[id]; ok {
		return ev, nil
	}
	return nil, engine.ErrNotFound
}

// received is one request a test receiver got.
type received struct {
	at     time.Time
	header http.Header
	body   []byte
}

// receiver is an httptest server that records requests and answers with
// the status answer returns for the n-th one (from 1).
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
}

func newReceiver(t *testing.T, answer func(n int, r *http.Request) int) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, received{at: time.Now(), header: r.Header.Clone(), body: body})
		n := len(rc.reqs)
		rc.mu.Unlock()
		w.WriteHeader(answer(n, r))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) got() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.reqs)
}

// fastBackoff retries after a few milliseconds.
var fastBackoff = engine.Backoff{Initial: 20 * time.Millisecond, Max: 40 * time.Millisecond, MinTotal: time.Second}

// pump calls Dispatch every 10 ms until done reports true or timeout.
func pump(t *testing.T, d *engine.Dispatcher, timeout time.Duration, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("not done within %s", timeout)
		}
		if _, err := d.Dispatch(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDispatcherRetriesUntilDelivered(t *testing.T) {
	rc := newReceiver(t, func(n int, _ *http.Request) int {
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	store := newMemOutbox()
	tx, ids := store.add(engine.StatusCompleted, "the-secret", rc.URL+"/hook?x=1")
	d := engine.NewDispatcher(engine.DispatcherConfig{Store: store, Secrets: testSecrets(), AllowPrivate: true, UserAgent: "txengine/test", Backoff: fastBackoff})
	defer d.Close(time.Second)

	pump(t, d, 5*time.Second, func() bool { return store.row(ids[0]).Status != engine.CallbackPending })
	row := store.row(ids[0])
	if row.Status != engine.CallbackDelivered || row.Attempts != 3 || row.Delivered == nil {
		t.Fatalf("row = %+v, want delivered after 3 attempts", row)
	}
	reqs := rc.got()
	if len(reqs) != 3 {
		t.Fatalf("receiver got %d requests, want 3", len(reqs))
	}
	wantBody, err := engine.CallbackBody(tx)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if got := r.header.Get("X-Callback-Id"); got != ids[0] {
			t.Errorf("request %d: X-Callback-Id = %q, want %q", i+1, got, ids[0])
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("request %d: Content-Type = %q", i+1, ct)
		}
		if ua := r.header.Get("User-Agent"); ua != "txengine/test" {
			t.Errorf("request %d: User-Agent = %q", i+1, ua)
		}
		if string(r.body) != string(wantBody) {
			t.Errorf("request %d: body = %s, want %s", i+1, r.body, wantBody)
		}
		if err := engine.VerifySignature("the-secret", r.header.Get("X-Callback-Signature"), r.body, time.Now(), time.Minute); err != nil {
			t.Errorf("request %d: %v", i+1, err)
		}
		if i > 0 && r.at.Sub(reqs[i-1].at) < 15*time.Millisecond {
			t.Errorf("request %d came %s after the one before: no backoff", i+1, r.at.Sub(reqs[i-1].at))
		}
	}
}

func TestDispatcherHangingReceiverDelaysNoOther(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := newReceiver(t, func(_ int, r *http.Request) int {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return http.StatusOK
	})
	fast := newReceiver(t, func(int, *http.Request) int { return http.StatusNoContent })
	store := newMemOutbox()
	_, hangIDs := store.add(engine.StatusFailed, "s1", hang.URL)
	_, fastIDs := store.add(engine.StatusCompleted, "s2", fast.URL)
	const timeout = 500 * time.Millisecond
	d := engine.NewDispatcher(engine.DispatcherConfig{Store: store, Secrets: testSecrets(), AllowPrivate: true, Timeout: timeout, Backoff: engine.DefaultBackoff()})
	defer d.Close(time.Second)

	start := time.Now()
	if n, err := d.Dispatch(context.Background()); err != nil || n != 2 {
		t.Fatalf("Dispatch = %d, %v; want 2 started", n, err)
	}
	pump(t, d, time.Second, func() bool { return store.row(fastIDs[0]).Status == engine.CallbackDelivered })
	if len(fast.got()) != 1 {
		t.Fatalf("fast receiver got %d requests", len(fast.got()))
	}
	if len(hang.got()) != 1 || store.row(hangIDs[0]).Attempts != 0 || d.InFlight() != 1 {
		t.Fatalf("the hanging attempt should still be in flight: requests %d, row %+v, in flight %d",
			len(hang.got()), store.row(hangIDs[0]), d.InFlight())
	}
	t.Logf("second receiver delivered %s after dispatch while the first hangs", time.Since(start))
	// In flight rows are not started twice.
	if n, _ := d.Dispatch(context.Background()); n != 0 {
		t.Fatalf("Dispatch started %d deliveries while the only due row is in flight", n)
	}

	pump(t, d, 3*time.Second, func() bool { return store.row(hangIDs[0]).Attempts == 1 })
	elapsed := time.Since(start)
	row := store.row(hangIDs[0])
	if row.Status != engine.CallbackPending || !strings.Contains(row.LastError, "no answer within 500ms") {
		t.Fatalf("hanging row = %+v, want pending with a timeout error", row)
	}
	if elapsed < timeout || elapsed > timeout+time.Second {
		t.Fatalf("hanging attempt ended after %s, want about %s", elapsed, timeout)
	}
	if wait := time.Until(row.NextAttempt); wait < 500*time.Millisecond || wait > 1100*time.Millisecond {
		t.Fatalf("next attempt in %s, want about 1s", wait)
	}
}

func TestDispatcherRefusesPrivateAddresses(t *testing.T) {
	rc := newReceiver(t, func(int, *http.Request) int { return http.StatusOK })
	store := newMemOutbox()
	// httptest listens on 127.0.0.1; "localhost" resolves to loopback too.
	local := strings.Replace(rc.URL, "127.0.0.1", "localhost", 1)
	_, ids := store.add(engine.StatusCompleted, "s", rc.URL, local)
	d := engine.NewDispatcher(engine.DispatcherConfig{Store: store, Secrets: testSecrets(), Backoff: fastBackoff})
	defer d.Close(time.Second)

	pump(t, d, 5*time.Second, func() bool {
		return store.row(ids[0]).Status != engine.CallbackPending && store.row(ids[1]).Status != engine.CallbackPending
	})
	for _, id := range ids {
		row := store.row(id)
		if row.Status != engine.CallbackAbandoned || row.Attempts != 1 ||
			!strings.Contains(row.LastError, "refused") || !strings.Contains(row.LastError, "loopback, private") {
			t.Errorf("row = %+v, want abandoned as refused", row)
		}
	}
	if n := len(rc.got()); n != 0 {
		t.Fatalf("receiver on a private address got %d requests", n)
	}
}

// TestDispatcherRefusesSpecialRanges: deliveries stored with URLs on the
// ranges the API refuses (as if stored before the rule, or by a name that
// resolves there) are refused by the dial Control before any packet is
// sent, and abandoned after one attempt; unrefused, they would fail with
// a network error or a timeout and stay pending.
func TestDispatcherRefusesSpecialRanges(t *testing.T) {
	hosts := []string{"100.64.0.1", "0.0.0.1", "192.0.0.1", "198.18.0.1", "240.0.0.1", "[64:ff9b::a9fe:a9fe]",
		"[2002:a9fe:a9fe::1]", "[::ffff:127.0.0.1]", "[::127.0.0.1]", "[2001::1]", "[64:ff9b:1::808:808]"}
	var urls []string
	for _, h := range hosts {
		urls = append(urls, "http://"+h+":9/cb")
	}
	store := newMemOutbox()
	_, ids := store.add(engine.StatusCompleted, "s", urls...)
	d := engine.NewDispatcher(engine.DispatcherConfig{Store: store, Secrets: testSecrets(), Timeout: 2 * time.Second, Backoff: fastBackoff})
	defer d.Close(time.Second)

	pump(t, d, 10*time.Second, store.settled(ids))
	for i, id := range ids {
		if row := store.row(id); row.Status != engine.CallbackAbandoned || row.Attempts != 1 ||
			!strings.HasPrefix(row.LastError, "refused: ") || !strings.Contains(row.LastError, engine.ErrPrivateAddress.Error()) {
			t.Errorf("%s: row = %+v, want abandoned as refused", urls[i], row)
		}
	}
}

func TestDispatcherAbandons(t *testing.T) {
	rc := newReceiver(t, func(int, *http.Request) int { return http.StatusBadGateway })
	store := newMemOutbox()
	_, failing := store.add(engine.StatusCompleted, "s", rc.URL)
	// A transaction that went back to submitted (reorg) is not delivered.
	_, reorged := store.add(engine.StatusSubmitted, "s", rc.URL+"/reorged")
	b := engine.Backoff{Initial: time.Millisecond, Max: time.Millisecond, MinTotal: 2 * time.Millisecond}
	if b.MaxAttempts() != 3 {
		t.Fatalf("MaxAttempts = %d, want 3", b.MaxAttempts())
	}
	d := engine.NewDispatcher(engine.DispatcherConfig{Store: store, Secrets: testSecrets(), AllowPrivate: true, Backoff: b})
	defer d.Close(time.Second)

	pump(t, d, 5*time.Second, func() bool {
		return store.row(failing[0]).Status != engine.CallbackPending && store.row(reorged[0]).Status != engine.CallbackPending
	})
	if row := store.row(failing[0]); row.Status != engine.CallbackAbandoned || row.Attempts != 3 || row.LastError != "HTTP status 502 Bad Gateway" {
		t.Errorf("failing row = %+v, want abandoned after 3 attempts", row)
	}
	if row := store.row(reorged[0]); row.Status != engine.CallbackAbandoned || row.Attempts != 0 || !strings.Contains(row.LastError, "submitted again") {
		t.Errorf("reorged row = %+v, want abandoned without an attempt", row)
	}
	if n := len(rc.got()); n != 3 {
		t.Fatalf("receiver got %d requests, want 3", n)
	}
}

func TestDispatcherCloseBoundsTheWait(t *testing.T) {
	hang := newReceiver(t, func(_ int, r *http.Request) int {
		<-r.Context().Done()
		return http.StatusOK
	})
	store := newMemOutbox()
	_, ids := store.add(engine.StatusCompleted, "s", hang.URL)
	d := engine.NewDispatcher(engine.DispatcherConfig{Store: store, Secrets: testSecrets(), AllowPrivate: true, Timeout: time.Minute})
	if n, err := d.Dispatch(context.Background()); err != nil || n != 1 {
		t.Fatalf("Dispatch = %d, %v", n, err)
	}
	for len(hang.got()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	d.Close(200 * time.Millisecond)
	if took := time.Since(start); took < 200*time.Millisecond || took > 2*time.Second {
		t.Fatalf("Close took %s, want about 200ms", took)
	}
	if d.InFlight() != 0 {
		t.Fatalf("%d deliveries still in flight after Close", d.InFlight())
	}
	// The cancelled attempt is not counted: the row runs again after a restart.
	if row := store.row(ids[0]); row.Status != engine.CallbackPending || row.Attempts != 0 || row.LastError != "" {
		t.Fatalf("row after Close = %+v, want untouched", row)
	}
	if n, _ := d.Dispatch(context.Background()); n != 0 {
		t.Fatalf("Dispatch after Close started %d deliveries", n)
	}
}

// loopbackNames returns "localhost" and the other names /etc/hosts maps to
// a loopback IPv4 address (e.g. the machine's own name): host names that
// resolve to loopback. ("localhost." goes to DNS in Go's resolver; the API
// refuses it by name.)
func loopbackNames(t *testing.T) []string {
	t.Helper()
	names := []string{"localhost"}
	raw, err := os.ReadFile("/etc/hosts")
	if err != nil {
		return names
	}
	for _, line := range strings.Split(string(raw), "\n") {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		if ip := net.ParseIP(fields[0]); ip == nil || !ip.IsLoopback() || ip.To4() == nil {
			continue
		}
		for _, n := range fields[1:] {
			if n != "localhost" && !strings.HasSuffix(n, ".") {
				names = append(names, n)
			}
		}
	}
	return names
}

// TestDispatcherRefusesNamesResolvingToLoopback checks that the refusal
// happens on the address connected to, not on the URL's text: host names
// that resolve to loopback (from /etc/hosts) are refused like 127.0.0.1.
func TestDispatcherRefusesNamesResolvingToLoopback(t *testing.T) {
	rc := newReceiver(t, func(int, *http.Request) int { return http.StatusOK })
	store := newMemOutbox()
	var urls []string
	for _, n := range loopbackNames(t) {
		urls = append(urls, strings.Replace(rc.URL, "127.0.0.1", n, 1)+"/cb")
	}
	_, ids := store.add(engine.StatusCompleted, "s", urls...)
	d := engine.NewDispatcher(engine.DispatcherConfig{Store: store, Secrets: testSecrets(), Backoff: fastBackoff})
	defer d.Close(time.Second)

	pump(t, d, 5*time.Second, store.settled(ids))
	for i, id := range ids {
		if row := store.row(id); row.Status != engine.CallbackAbandoned || !strings.Contains(row.LastError, "refused") {
			t.Errorf("%s: row = %+v, want abandoned as refused", urls[i], row)
		}
	}
	if n := len(rc.got()); n != 0 {
		t.Fatalf("receiver on loopback got %d requests", n)
	}
	t.Logf("names tried: %v", urls)
}

// TestDispatcherDoesNotFollowRedirects checks that a redirect is a failed
// attempt (retried later), never followed: a receiver could otherwise send
// deliveries, with their signatures, to a private address it names.
func TestDispatcherDoesNotFollowRedirects(t *testing.T) {
	target := newReceiver(t, func(int, *http.Request) int { return http.StatusOK })
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL+"/private", status)
			}))
			defer redirector.Close()
			store := newMemOutbox()
			_, ids := store.add(engine.StatusCompleted, "s", redirector.URL+"/cb")
			// Private addresses allowed: both servers are on loopback, and
			// what is tested is that the redirect is not followed at all.
			b := engine.Backoff{Initial: time.Millisecond, Max: time.Millisecond, MinTotal: 2 * time.Millisecond}
			d := engine.NewDispatcher(engine.DispatcherConfig{Store: store, Secrets: testSecrets(), AllowPrivate: true, Backoff: b})
			defer d.Close(time.Second)
			pump(t, d, 5*time.Second, func() bool { return store.row(ids[0]).Status != engine.CallbackPending })
			row := store.row(ids[0])
			if row.Status != engine.CallbackAbandoned || row.Delivered != nil || !strings.Contains(row.LastError, fmt.Sprint(status)) {
				t.Errorf("row = %+v, want failed attempts with HTTP status %d", row, status)
			}
		})
	}
	if n := len(target.got()); n != 0 {
		t.Fatalf("the redirect target got %d requests", n)
	}
}

// TestDispatchersOfTwoNodesShareTheOutbox: the dispatchers of two nodes
// poll one outbox while deliveries are slow; each row is delivered once,
// by the node that claimed it.
func TestDispatchersOfTwoNodesShareTheOutbox(t *testing.T) {
	rc := newReceiver(t, func(int, *http.Request) int {
		time.Sleep(30 * time.Millisecond)
		return http.StatusOK
	})
	store := newMemOutbox()
	var ids []string
	for range 20 {
		_, id := store.add(engine.StatusCompleted, "s", rc.URL)
		ids = append(ids, id...)
	}
	delivered := func() bool {
		for _, id := range ids {
			if store.row(id).Status != engine.CallbackDelivered {
				return false
			}
		}
		return true
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	deadline := time.Now().Add(10 * time.Second)
	for _, node := range []string{"node-a", "node-b"} {
		d := engine.NewDispatcher(engine.DispatcherConfig{Store: store, Secrets: testSecrets(), AllowPrivate: true, Concurrency: 4, Node: node,
			UserAgent: node, Backoff: fastBackoff})
		defer d.Close(time.Second)
		wg.Go(func() {
			for !delivered() && time.Now().Before(deadline) {
				if _, err := d.Dispatch(context.Background()); err != nil {
					errs <- err
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if !delivered() {
		t.Fatal("not every row was delivered in time")
	}
	seen, byNode := map[string]int{}, map[string]int{}
	for _, r := range rc.got() {
		seen[r.header.Get(engine.HeaderCallbackID)]++
		byNode[r.header.Get("User-Agent")]++
	}
	// Each claim takes at most 4 rows (Concurrency) and a delivery takes
	// 30 ms: both nodes get work.
	if byNode["node-a"] == 0 || byNode["node-b"] == 0 {
		t.Errorf("deliveries by node = %v, want both", byNode)
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("row %s delivered %d times, want once", id, seen[id])
		}
	}
}
