// Package prom is the Prometheus adapter of txengine's measurements, named
// after its dependency as engine/evm is after go-ethereum's: it implements
// engine.Metrics (what account actors and watchers observe), the
// http.Metrics of the HTTP layer (requests, rate limiting), and an
// engine.Node decorator that counts and times JSON-RPC calls. The engine
// and the HTTP layer see only their own small interfaces; cmd/txengine
// creates the prometheus.Registry, registers the Go and process collectors
// there, and passes it to New. No metric is registered on the default
// registry and the package has no mutable globals.
//
// Cardinality: per-account series are created for the first MaxAccounts
// accounts seen; every later account shares the series with
// account="other" (and address="other"), so a million accounts cannot blow
// up a scrape. Per-account series carry the account id and its EIP-55
// address: one address per id, the same number of series. The histograms
// have no account label.
package prom

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/txengine/txengine/engine"
)

// Namespace prefixes every metric of the service.
const Namespace = "txengine"

// OtherAccount is the account (and address) label of the accounts beyond
// the cap.
const OtherAccount = "other"

// Default returns the defaults: 1,000 accounts with their own series,
// head ages on time.Now.
func Default() Config {
	return Config{MaxAccounts: 1000, Now: time.Now}
}

// withDefaults gives a zero MaxAccounts and a nil Now Default's values.
// (A negative MaxAccounts is valid: no account has its own series.)
func (c Config) withDefaults() Config {
	d := Default()
	if c.MaxAccounts == 0 {
		c.MaxAccounts = d.MaxAccounts
	}
	if c.Now == nil {
		c.Now = d.Now
	}
	return c
}

// Config tunes the metrics.
type Config struct {
	// MaxAccounts is how many accounts get their own series; the others
	// are aggregated under account="other". Zero: Default's (1,000);
	// negative: none (every account is "other").
	MaxAccounts int
	// Now tells the time for head ages; nil is time.Now.
	Now func() time.Time
}

// Metrics holds every collector of the service. Create it with New.
type Metrics struct {
	maxAccounts int
	now         func() time.Time

	mu sync.RWMutex
	// accounts maps the tracked account ids to their address labels.
	accounts map[string]string

	accepted, submitted, completed *prometheus.CounterVec
	failed                         *prometheus.CounterVec
	completion                     *prometheus.HistogramVec
	queued, inFlight, nextNonce    *prometheus.GaugeVec

	headNumber  *prometheus.GaugeVec
	headTime    *prometheus.GaugeVec
	reorgs      *prometheus.CounterVec
	reorgBlocks *prometheus.CounterVec
	heads       *headAges

	rpcRequests *prometheus.CounterVec
	rpcBatched  *prometheus.CounterVec
	rpcDuration *prometheus.HistogramVec

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	rateLimited  *prometheus.CounterVec
	// rateFallbacks counts requests counted in a node's memory because
	// the rate counter store failed.
	rateFallbacks prometheus.Counter
	trackedAccts  prometheus.GaugeFunc

	subs   subscriptionMetrics
	nonces nonceMetrics
	pools  poolMetrics
}

var _ engine.Metrics = (*Metrics)(nil)

// New creates the collectors and registers them on reg.
func New(reg prometheus.Registerer, cfg Config) (*Metrics, error) {
	cfg = cfg.withDefaults()
	acct := []string{"account", "address", "network"}
	m := &Metrics{
		maxAccounts: max(cfg.MaxAccounts, 0),
		now:         cfg.Now,
		accounts:    map[string]string{},
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "transactions_accepted_total",
			Help: "Transactions accepted (stored as new) per account and network."}, acct),
		submitted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "transactions_submitted_total",
			Help: "Transactions signed and broadcast per account and network."}, acct),
		completed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "transactions_completed_total",
			Help: "Transactions completed (mined with status 1 and confirmed) per account and network."}, acct),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "transactions_failed_total",
			Help: "Transactions failed per account, network and error code."}, []string{"account", "address", "network", "code"}),
		completion: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "transaction_completion_seconds",
			Help:    "Time from acceptance to completion of completed transactions, per network.",
			Buckets: []float64{0.5, 1, 2, 3, 5, 8, 13, 21, 34, 60, 120, 300, 600, 1800}}, []string{"network"}),
		queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "account_queue_depth",
			Help: "Transactions queued (new or waiting) per account and network, as reported by running account actors."}, acct),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "account_in_flight",
			Help: "Transactions submitted and not yet mined per account and network, as reported by running account actors."}, acct),
		nextNonce: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "account_next_nonce",
			Help: "The nonce of the next transaction per account and network (accounts within the cap only)."}, acct),
		headNumber: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "network_head_number",
			Help: "Number of the latest block the watcher saw, per network."}, []string{"network"}),
		headTime: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "network_head_timestamp_seconds",
			Help: "Timestamp (Unix seconds) of the latest block the watcher saw, per network."}, []string{"network"}),
		reorgs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "network_reorgs_total",
			Help: "Reorganisations in which processed blocks left the chain, per network."}, []string{"network"}),
		reorgBlocks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "network_reorged_blocks_total",
			Help: "Processed blocks that left the chain, per network."}, []string{"network"}),
		rpcRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "rpc_requests_total",
			Help: "JSON-RPC requests to the nodes per network, method and outcome (ok, not_found, timeout, error)."}, []string{"network", "method", "outcome"}),
		rpcBatched: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "rpc_batched_requests_total",
			Help: "JSON-RPC requests sent inside batches (each batch is one rpc_requests_total round trip with method \"batch\"), per network and method."}, []string{"network", "method"}),
		rpcDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "rpc_request_duration_seconds",
			Help: "Latency of JSON-RPC requests per network, method and outcome.", Buckets: prometheus.DefBuckets}, []string{"network", "method", "outcome"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "http_requests_total",
			Help: "HTTP requests per method, route template and status."}, []string{"method", "route", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "http_request_duration_seconds",
			Help: "Latency of HTTP requests per method, route template and status.", Buckets: prometheus.DefBuckets}, []string{"method", "route", "status"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "http_rate_limited_total",
			Help: "Requests refused with 429 per exhausted window (second, hour)."}, []string{"window"}),
		rateFallbacks: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "http_rate_limit_fallbacks_total",
			Help: "Requests whose rate limits were counted in this node's memory because the shared rate counter store failed (cluster mode)."}),
	}
	m.heads = &headAges{now: cfg.Now, times: map[string]time.Time{}, desc: prometheus.NewDesc(
		prometheus.BuildFQName(Namespace, "network", "head_age_seconds"),
		"Seconds since the timestamp of the latest block the watcher saw, per network, computed at scrape time.",
		[]string{"network"}, nil)}
	m.trackedAccts = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "metrics_tracked_accounts",
		Help: "Accounts that have their own series; the rest are account=\"other\" (cap: metrics.maxAccounts)."},
		func() float64 {
			m.mu.RLock()
			defer m.mu.RUnlock()
			return float64(len(m.accounts))
		})
	// Counters of known label values exist from the start, at zero: a
	// rate over them is 0, not "no data", before the first event.
	for _, w := range []string{"second", "hour"} {
		m.rateLimited.WithLabelValues(w)
	}
	m.subs = newSubscriptionMetrics()
	m.nonces = newNonceMetrics()
	m.pools = newPoolMetrics()
	if err := register(reg, append([]prometheus.Collector{
		m.accepted, m.submitted, m.completed, m.failed, m.completion, m.queued, m.inFlight, m.nextNonce,
		m.headNumber, m.headTime, m.reorgs, m.reorgBlocks, m.heads, m.rpcRequests, m.rpcBatched, m.rpcDuration,
		m.httpRequests, m.httpDuration, m.rateLimited, m.rateFallbacks, m.trackedAccts,
	}, append(append(m.subs.collectors(), m.nonces.collectors()...), m.pools.collectors()...)...)); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers cs on reg.
func register(reg prometheus.Registerer, cs []prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register txengine metrics: %w", err)
		}
	}
	return nil
}

// RegisterLiveAccounts registers txengine_account_actors on reg: the
// account actors running on this node, read from live at every scrape (an
// idle actor stops after the idle delay, so after a burst the gauge shows
// passivation at work).
func RegisterLiveAccounts(reg prometheus.Registerer, live func() int) error {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "account_actors",
		Help: "Account actors running on this node (one per account and network with recent work; idle ones stop)."},
		func() float64 { return float64(live()) })
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("register txengine_account_actors: %w", err)
	}
	return nil
}

// outboxTimeout bounds the store query of one scrape of the outbox gauge.
const outboxTimeout = 5 * time.Second

// RegisterCallbackOutbox registers txengine_callbacks_pending on reg: the
// callbacks waiting in the durable outbox (pending: not yet delivered,
// retrying), counted in the store at every scrape. The store is shared in
// cluster mode, so every node reports the same count. A scrape whose count
// fails leaves the series out (an alert on it then sees no data, not zero).
func RegisterCallbackOutbox(reg prometheus.Registerer, pending func(ctx context.Context) (int, error)) error {
	c := &outboxGauge{pending: pending, desc: prometheus.NewDesc(
		prometheus.BuildFQName(Namespace, "callbacks", "pending"),
		"Callbacks pending in the outbox (to deliver or retrying), counted in the store at scrape time.", nil, nil)}
	if err := reg.Register(c); err != nil {
		return fmt.Errorf("register txengine_callbacks_pending: %w", err)
	}
	return nil
}

// outboxGauge is the collector of txengine_callbacks_pending.
type outboxGauge struct {
	pending func(ctx context.Context) (int, error)
	desc    *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (o *outboxGauge) Describe(ch chan<- *prometheus.Desc) { ch <- o.desc }

// Collect implements prometheus.Collector.
func (o *outboxGauge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), outboxTimeout)
	defer cancel()
	n, err := o.pending(ctx)
	if err != nil {
		// An invalid metric would fail the whole scrape: leave it out.
		return
	}
	ch <- prometheus.MustNewConstMetric(o.desc, prometheus.GaugeValue, float64(n))
}

// Handler serves the metrics of g in the Prometheus exposition format.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}

// account returns the account and address labels of a: its id and EIP-55
// address for the first MaxAccounts accounts, OtherAccount twice for the
// rest. The address is the one first seen with the id (an account's address
// never changes).
func (m *Metrics) account(a engine.MetricAccount) (id, address string) {
	m.mu.RLock()
	addr, ok := m.accounts[a.ID]
	n := len(m.accounts)
	m.mu.RUnlock()
	if ok {
		return a.ID, addr
	}
	if n >= m.maxAccounts {
		return OtherAccount, OtherAccount
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if addr, ok := m.accounts[a.ID]; ok {
		return a.ID, addr
	}
	if len(m.accounts) >= m.maxAccounts {
		return OtherAccount, OtherAccount
	}
	addr = a.Address.Hex()
	m.accounts[a.ID] = addr
	return a.ID, addr
}

// TxAccepted implements engine.Metrics.
func (m *Metrics) TxAccepted(account engine.MetricAccount, network string, n int) {
	id, addr := m.account(account)
	m.accepted.WithLabelValues(id, addr, network).Add(float64(n))
}

// TxSubmitted implements engine.Metrics.
func (m *Metrics) TxSubmitted(account engine.MetricAccount, network string) {
	id, addr := m.account(account)
	m.submitted.WithLabelValues(id, addr, network).Inc()
}

// TxCompleted implements engine.Metrics.
func (m *Metrics) TxCompleted(account engine.MetricAccount, network string, latency time.Duration) {
	id, addr := m.account(account)
	m.completed.WithLabelValues(id, addr, network).Inc()
	m.completion.WithLabelValues(network).Observe(max(latency, 0).Seconds())
}

// TxFailed implements engine.Metrics.
func (m *Metrics) TxFailed(account engine.MetricAccount, network string, code engine.TxErrorCode) {
	id, addr := m.account(account)
	m.failed.WithLabelValues(id, addr, network, string(code)).Inc()
}

// AccountLoad implements engine.Metrics.
func (m *Metrics) AccountLoad(account engine.MetricAccount, network string, queued, inFlight int) {
	// Add(0) still creates the series: an account's gauges exist, at zero,
	// from the moment its actor runs.
	id, addr := m.account(account)
	m.queued.WithLabelValues(id, addr, network).Add(float64(queued))
	m.inFlight.WithLabelValues(id, addr, network).Add(float64(inFlight))
}

// NextNonce implements engine.Metrics. Accounts beyond the cap have no
// next nonce series: a nonce of "other" would mean nothing.
func (m *Metrics) NextNonce(account engine.MetricAccount, network string, nonce uint64) {
	if id, addr := m.account(account); id != OtherAccount {
		m.nextNonce.WithLabelValues(id, addr, network).Set(float64(nonce))
	}
}

// Head implements engine.Metrics.
func (m *Metrics) Head(network string, number uint64, timestamp time.Time) {
	// The network's reorg counters exist, at zero, from its first head.
	m.reorgs.WithLabelValues(network)
	m.reorgBlocks.WithLabelValues(network)
	m.headNumber.WithLabelValues(network).Set(float64(number))
	m.headTime.WithLabelValues(network).Set(float64(timestamp.Unix()))
	m.heads.set(network, timestamp)
}

// Reorg implements engine.Metrics.
func (m *Metrics) Reorg(network string, depth uint64) {
	m.reorgs.WithLabelValues(network).Inc()
	m.reorgBlocks.WithLabelValues(network).Add(float64(depth))
}

// ObserveHTTP counts one HTTP request by method, route template (not the
// raw path: bounded cardinality) and status.
func (m *Metrics) ObserveHTTP(method, route string, status int, d time.Duration) {
	s := strconv.Itoa(status)
	m.httpRequests.WithLabelValues(method, route, s).Inc()
	m.httpDuration.WithLabelValues(method, route, s).Observe(d.Seconds())
}

// RateLimited counts one request refused because window ("second" or
// "hour") was exhausted.
func (m *Metrics) RateLimited(window string) {
	m.rateLimited.WithLabelValues(window).Inc()
}

// RateLimitFallback counts one request whose rate limits were counted in
// this node's memory because the rate counter store failed.
func (m *Metrics) RateLimitFallback() { m.rateFallbacks.Inc() }

// headAges is the collector of network_head_age_seconds: the age is
// computed when scraped, so it grows while a node is stuck.
type headAges struct {
	now   func() time.Time
	desc  *prometheus.Desc
	mu    sync.Mutex
	times map[string]time.Time
}

func (h *headAges) set(network string, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.times[network] = t
}

// Describe implements prometheus.Collector.
func (h *headAges) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

// Collect implements prometheus.Collector.
func (h *headAges) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	for network, t := range h.times {
		ch <- prometheus.MustNewConstMetric(h.desc, prometheus.GaugeValue, now.Sub(t).Seconds(), network)
	}
}

// HeadAge returns the age of the latest head seen on network, and false
// when none was seen yet. /readyz uses it.
func (m *Metrics) HeadAge(network string) (time.Duration, bool) {
	m.heads.mu.Lock()
	defer m.heads.mu.Unlock()
	t, ok := m.heads.times[network]
	if !ok {
		return 0, false
	}
	return m.now().Sub(t), true
}
