package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/txengine/txengine/internal/redact"
)

// DispatcherStore is what a Dispatcher needs of the store: the outbox, and
// the transaction (or the subscription's delivery and the subscription) and
// its owner to build and sign each body.
type DispatcherStore interface {
	CallbackStore
	TransactionByID(ctx context.Context, id string) (*Transaction, error)
	UserByID(ctx context.Context, id string) (*User, error)
	SubscriptionByID(ctx context.Context, id string) (*Subscription, error)
	SubscriptionEventByID(ctx context.Context, id string) (*SubscriptionEvent, error)
}

// Kinds and outcomes of DispatcherConfig.Outcome.
const (
	CallbackKindTransaction = "transaction"
	CallbackKindEvent       = "event"

	OutcomeDelivered = "delivered"
	OutcomeRetry     = "retry"
	OutcomeAbandoned = "abandoned"
)

// DispatcherConfig configures a Dispatcher. Zero fields take the values of
// DefaultDispatcherConfig.
type DispatcherConfig struct {
	Store DispatcherStore
	Clock Clock
	Log   *slog.Logger
	// Concurrency bounds the deliveries in flight.
	Concurrency int
	// Timeout bounds one attempt (connection, request and answer headers).
	Timeout time.Duration
	// StoreTimeout bounds the reads that build a row's request, and the
	// write that records its outcome (default 5 s).
	StoreTimeout time.Duration
	// AllowPrivate lets deliveries connect to addresses PrivateAddr
	// refuses (loopback, private, link-local, shared, reserved,
	// documentation, multicast). Off, such an address is refused when
	// connecting (after name resolution, which also defeats DNS
	// rebinding) and the callback is abandoned.
	AllowPrivate bool
	// UserAgent is sent on every request, e.g. "txengine/1.2.3".
	UserAgent string
	// Backoff is the retry schedule.
	Backoff Backoff
	// Secrets opens the users' sealed callback secrets (the service's
	// keystore.KeySealer). Required.
	Secrets CallbackSecrets
	// Node names this dispatcher in the claims of outbox rows
	// (ClaimDueCallbacks), so that the dispatchers of several nodes share
	// one outbox without delivering a row twice at once. Empty is fine in
	// single-node mode.
	Node string
	// Outcome, when set, is called after each attempt's outcome is
	// recorded, with the row's kind (CallbackKindTransaction,
	// CallbackKindEvent) and the outcome (OutcomeDelivered, OutcomeRetry,
	// OutcomeAbandoned): the service counts them in a metric.
	Outcome func(kind, outcome string)
}

// CallbackSecrets opens sealed callback secrets; keystore.KeySealer implements it.
type CallbackSecrets interface {
	OpenCallbackSecret(userID string, sealed []byte) (string, error)
}

// maxResponseDrain bounds what is read of a receiver's answer (so the
// connection can be reused); the body itself is ignored.
const maxResponseDrain = 64 << 10

// claimFor is how long a dispatcher claims the rows it delivers: longer
// than a delivery (the reads, one attempt of cfg.Timeout and the write of
// its outcome), so no other node takes a row while it is being delivered;
// a node that dies leaves its claims to expire after that.
func (c DispatcherConfig) claimFor() time.Duration {
	return 2*c.Timeout + 2*c.StoreTimeout
}

// Dispatcher delivers due outbox rows, each in its own goroutine, at most
// Concurrency at a time, so a slow or hanging receiver delays no other. It
// owns those goroutines: Close stops them. Dispatch is meant to be called
// by one poller at a time. Dispatchers of several nodes share one outbox:
// each delivers only the rows it claimed (DispatcherConfig.Node).
type Dispatcher struct {
	cfg    DispatcherConfig
	client *http.Client
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	inflight map[string]struct{}
	closed   bool
	wg       sync.WaitGroup
}

// NewDispatcher returns a dispatcher of cfg; it delivers nothing until
// Dispatch is called.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Dispatcher{
		cfg:      cfg,
		client:   newCallbackClient(cfg),
		ctx:      ctx,
		cancel:   cancel,
		inflight: map[string]struct{}{},
	}
}

// newCallbackClient returns the HTTP client of deliveries: no proxy (the
// address check must see the receiver's address), no redirects (a 3xx is a
// failed attempt), and a dialer that refuses private addresses unless
// allowed.
func newCallbackClient(cfg DispatcherConfig) *http.Client {
	// Each attempt's context carries its deadline (cfg.Timeout).
	dialer := &net.Dialer{KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivate {
		dialer.Control = refusePrivate
	}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        cfg.Concurrency,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: cfg.Timeout,
	}
	return &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// refusePrivate is a net.Dialer Control function: it runs with the address
// actually being connected to, after name resolution, and refuses it when
// PrivateAddr holds (the rule CheckCallbackHost applies to URLs).
func refusePrivate(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("callback address %q: %w", address, err)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil || PrivateAddr(addr) {
		return fmt.Errorf("%w: %s", ErrPrivateAddress, host)
	}
	return nil
}

// Dispatch claims due rows and starts a delivery for each one not already
// in flight, as far as free slots allow, and returns how many it started.
// It does not wait for them.
func (d *Dispatcher) Dispatch(ctx context.Context) (int, error) {
	d.mu.Lock()
	busy, closed := len(d.inflight), d.closed
	d.mu.Unlock()
	free := d.cfg.Concurrency - busy
	if closed || free <= 0 {
		return 0, nil
	}
	// Rows in flight are still pending, due and claimed by this node (their
	// claim is renewed): ask for enough to find free new ones behind them.
	rows, err := d.cfg.Store.ClaimDueCallbacks(ctx, d.cfg.Node, d.cfg.Clock.Now(), d.cfg.claimFor(), busy+free)
	if err != nil {
		return 0, fmt.Errorf("claim due callbacks: %w", err)
	}
	started := 0
	for _, cb := range rows {
		d.mu.Lock()
		_, running := d.inflight[cb.ID]
		if d.closed || running || len(d.inflight) >= d.cfg.Concurrency {
			d.mu.Unlock()
			continue
		}
		d.inflight[cb.ID] = struct{}{}
		d.wg.Add(1)
		d.mu.Unlock()
		started++
		go func() {
			defer d.wg.Done()
			defer d.finish(cb.ID)
			d.deliver(d.ctx, cb)
		}()
	}
	return started, nil
}

func (d *Dispatcher) finish(id string) {
	d.mu.Lock()
	delete(d.inflight, id)
	d.mu.Unlock()
}

// InFlight returns how many deliveries are running.
func (d *Dispatcher) InFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.inflight)
}

// Close stops starting deliveries, waits up to grace for those in flight,
// then cancels the rest (their rows stay pending: they run again after a
// restart) and waits for them to return. It may be called more than once.
func (d *Dispatcher) Close(grace time.Duration) {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		d.cancel()
		<-done
	}
	d.cancel()
	d.client.CloseIdleConnections()
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// outcome is the result of one attempt.
type outcome struct {
	delivered bool
	// abandon gives up at once (no retry can succeed).
	abandon bool
	err     string
}

// deliver makes one attempt of cb and records its outcome.
func (d *Dispatcher) deliver(ctx context.Context, cb Callback) {
	kind, log := CallbackKindTransaction, d.cfg.Log.With("callback", cb.ID, "url", redact.WithoutQuery(cb.URL))
	if cb.EventID != "" {
		kind, log = CallbackKindEvent, log.With("delivery", cb.EventID, "subscription", cb.SubscriptionID, "sequence", cb.EventSeq)
	} else {
		log = log.With("transaction", cb.TxID)
	}
	out, attempted, err := d.attempt(ctx, cb)
	if err != nil {
		if ctx.Err() != nil {
			return // shutdown cancelled the attempt: the row stays due
		}
		// The request could not be built (a record unreadable, a body
		// or secret that does not open): that counts as a failed
		// attempt, retried with backoff and abandoned, with the reason,
		// after the usual bound (it was retried at every poll for ever).
		log.Warn("callback not sent", "err", err)
		out, attempted = outcome{err: "not sent: " + err.Error()}, true
	}
	attempts := cb.Attempts
	if attempted {
		attempts++
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.StoreTimeout)
	defer cancel()
	now := d.cfg.Clock.Now()
	var result string
	switch {
	case out.delivered:
		result = OutcomeDelivered
		err = d.cfg.Store.MarkCallbackDelivered(wctx, cb.ID, attempts, now)
		log.Debug("callback delivered", "attempts", attempts)
	case out.abandon || attempts >= d.cfg.Backoff.MaxAttempts():
		result = OutcomeAbandoned
		err = d.cfg.Store.MarkCallbackAbandoned(wctx, cb.ID, attempts, out.err)
		log.Warn("callback abandoned", "attempts", attempts, "err", out.err)
	default:
		result = OutcomeRetry
		next := now.Add(d.cfg.Backoff.Wait(attempts, rand.Float64()))
		err = d.cfg.Store.MarkCallbackRetry(wctx, cb.ID, attempts, next, out.err)
		log.Debug("callback failed, will retry", "attempts", attempts, "next", next, "err", out.err)
	}
	if err != nil {
		log.Error("recording callback attempt", "err", err)
		return
	}
	if d.cfg.Outcome != nil {
		d.cfg.Outcome(kind, result)
	}
}

// callbackRequest is what one attempt sends: the body, signed with the
// owner's callback secret, under X-Callback-Id id.
type callbackRequest struct {
	id    string
	body  []byte
	owner *User
}

// attempt builds the request of cb from the current records and POSTs it.
// attempted is false when no request was sent (an outcome decided from the
// records). A non-nil error means nothing can be recorded.
func (d *Dispatcher) attempt(ctx context.Context, cb Callback) (out outcome, attempted bool, err error) {
	build := d.transactionRequest
	if cb.EventID != "" {
		build = d.eventRequest
	}
	rctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
	req, skip, err := build(rctx, cb)
	cancel()
	if err != nil || skip != nil {
		return deref(skip), false, err
	}
	return d.post(ctx, cb.URL, req)
}

// deref is *o, or the zero outcome for nil.
func deref(o *outcome) outcome {
	if o == nil {
		return outcome{}
	}
	return *o
}

// transactionRequest is the request of a transaction's row: the body from
// the current transaction record, or an outcome without an attempt (skip).
func (d *Dispatcher) transactionRequest(ctx context.Context, cb Callback) (req callbackRequest, skip *outcome, err error) {
	tx, err := d.cfg.Store.TransactionByID(ctx, cb.TxID)
	if errors.Is(err, ErrNotFound) {
		return req, &outcome{abandon: true, err: "transaction not found"}, nil
	}
	if err != nil {
		return req, nil, fmt.Errorf("read transaction: %w", err)
	}
	if !tx.Status.Terminal() {
		return req, &outcome{abandon: true, err: fmt.Sprintf(
			"transaction is %s again (its block left the chain); a new callback follows when it ends", tx.Status)}, nil
	}
	user, err := d.cfg.Store.UserByID(ctx, tx.Owner)
	if err != nil {
		return req, nil, fmt.Errorf("read owner %s: %w", tx.Owner, err)
	}
	body, err := CallbackBody(tx)
	if err != nil {
		return req, nil, err
	}
	return callbackRequest{id: cb.ID, body: body, owner: user}, nil, nil
}

// SubscriptionDeletedError is the last error of the outbox rows of a
// deleted subscription: DeleteSubscription abandons its pending rows with
// it, and the dispatcher a row whose subscription it no longer finds.
const SubscriptionDeletedError = "subscription deleted"

// eventRequest is the request of a subscription's delivery: the stored
// body ({"event": ...}) under X-Callback-Id the delivery's id, or an
// outcome without an attempt (skip) when the subscription is deleted.
func (d *Dispatcher) eventRequest(ctx context.Context, cb Callback) (req callbackRequest, skip *outcome, err error) {
	ev, err := d.cfg.Store.SubscriptionEventByID(ctx, cb.EventID)
	if errors.Is(err, ErrNotFound) {
		return req, &outcome{abandon: true, err: "delivery not found"}, nil
	}
	if err != nil {
		return req, nil, fmt.Errorf("read delivery: %w", err)
	}
	subID := cmp.Or(cb.SubscriptionID, ev.SubscriptionID)
	sub, err := d.cfg.Store.SubscriptionByID(ctx, subID)
	if errors.Is(err, ErrNotFound) {
		return req, &outcome{abandon: true, err: SubscriptionDeletedError}, nil
	}
	if err != nil {
		return req, nil, fmt.Errorf("read subscription %s: %w", subID, err)
	}
	user, err := d.cfg.Store.UserByID(ctx, sub.Owner)
	if err != nil {
		return req, nil, fmt.Errorf("read owner %s: %w", sub.Owner, err)
	}
	body, err := EventCallbackBody(ev.Body)
	if err != nil {
		return req, &outcome{abandon: true, err: err.Error()}, nil
	}
	return callbackRequest{id: cb.EventID, body: body, owner: user}, nil, nil
}

// post sends r to url, signed with its owner's callback secret, and tells
// the outcome.
func (d *Dispatcher) post(ctx context.Context, url string, r callbackRequest) (out outcome, attempted bool, err error) {
	actx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(r.body))
	if err != nil {
		return outcome{abandon: true, err: fmt.Sprintf("bad callback URL: %v", redact.Error(err))}, false, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", d.cfg.UserAgent)
	req.Header.Set(HeaderCallbackID, r.id)
	if d.cfg.Secrets == nil {
		return outcome{}, false, errors.New("dispatcher: no Secrets to open callback secrets with")
	}
	secret, err := d.cfg.Secrets.OpenCallbackSecret(r.owner.ID, r.owner.CallbackSecret)
	if err != nil {
		return outcome{}, false, fmt.Errorf("callback secret: %w", err)
	}
	req.Header.Set(HeaderCallbackSignature, Sign(secret, d.cfg.Clock.Now(), r.body))
	res, err := d.client.Do(req)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return outcome{}, false, fmt.Errorf("shutting down: %w", ctx.Err())
		case errors.Is(err, ErrPrivateAddress):
			return outcome{abandon: true, err: fmt.Sprintf("refused: %v (private callback addresses are not allowed: callbacks.allowPrivate)", redact.Error(err))}, true, nil
		case actx.Err() != nil || isTimeout(err):
			return outcome{err: fmt.Sprintf("no answer within %s", d.cfg.Timeout)}, true, nil
		default:
			return outcome{err: redact.Error(err).Error()}, true, nil
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxResponseDrain))
	_ = res.Body.Close()
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return outcome{delivered: true}, true, nil
	}
	return outcome{err: "HTTP status " + res.Status}, true, nil
}

// EventCallbackBody returns the body of a callback of a subscription's
// delivery whose stored view (subscribe.DeliveryView) is body:
// {"event": <body>}.
func EventCallbackBody(body json.RawMessage) ([]byte, error) {
	if !json.Valid(body) {
		return nil, fmt.Errorf("event callback body: stored delivery is not JSON")
	}
	out := make([]byte, 0, len(body)+10)
	out = append(out, `{"event":`...)
	out = append(out, body...)
	return append(out, '}'), nil
}
