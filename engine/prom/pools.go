package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/txengine/txengine/engine"
)

// poolMetrics are the collectors of sender pools (docs/pools.md#metrics),
// labelled pool and network. A pool has a handful of series: no cap (the
// members keep their per-account series, under the account cap).
type poolMetrics struct {
	members, queued, inFlight, short *prometheus.GaugeVec
	topUps, refusals                 *prometheus.CounterVec
}

// newPoolMetrics creates the collectors of pools; New registers them.
func newPoolMetrics() poolMetrics {
	pool := []string{"pool", "network"}
	return poolMetrics{
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "pool_members",
			Help: "Members (accounts) of the sender pool, per pool and network, as its keeper last read them."}, pool),
		queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "pool_queued",
			Help: "Transactions queued (new or waiting) on the pool's members, per pool and network, as its keeper last read them."}, pool),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "pool_in_flight",
			Help: "Transactions of the pool's members submitted and not yet mined, per pool and network, as its keeper last read them."}, pool),
		short: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "pool_treasury_short",
			Help: "1 when the pool cannot refill what its members need (no treasury, or the treasury holds too little), else 0; per pool and network."}, pool),
		topUps: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "pool_topups_total",
			Help: "Top-up transactions (gas or tokens, from the treasury to a member) the pool's keeper sent, per pool and network."}, pool),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "pool_refusals_total",
			Help: "Transactions of the pool's members the node refused for capacity (txpool full, too many pending of the sender), per pool and network."}, pool),
	}
}

// collectors returns the collectors to register.
func (p poolMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{p.members, p.queued, p.inFlight, p.short, p.topUps, p.refusals}
}

var _ engine.PoolMetrics = (*Metrics)(nil)

// seen makes the pool's counters exist, at zero, from its first report:
// a rate over them is 0, not "no data", before the first top-up.
func (p poolMetrics) seen(pool, network string) {
	p.topUps.WithLabelValues(pool, network)
	p.refusals.WithLabelValues(pool, network)
}

// PoolMembers implements engine.PoolMetrics.
func (m *Metrics) PoolMembers(pool, network string, n int) {
	m.pools.seen(pool, network)
	m.pools.members.WithLabelValues(pool, network).Set(float64(n))
}

// PoolLoad implements engine.PoolMetrics.
func (m *Metrics) PoolLoad(pool, network string, queued, inFlight int) {
	m.pools.queued.WithLabelValues(pool, network).Set(float64(queued))
	m.pools.inFlight.WithLabelValues(pool, network).Set(float64(inFlight))
}

// PoolTopUps implements engine.PoolMetrics.
func (m *Metrics) PoolTopUps(pool, network string, n int) {
	m.pools.topUps.WithLabelValues(pool, network).Add(float64(n))
}

// PoolShort implements engine.PoolMetrics.
func (m *Metrics) PoolShort(pool, network string, short bool) {
	v := 0.0
	if short {
		v = 1
	}
	m.pools.short.WithLabelValues(pool, network).Set(v)
}

// PoolRefused implements engine.PoolMetrics.
func (m *Metrics) PoolRefused(pool, network string) {
	m.pools.refusals.WithLabelValues(pool, network).Inc()
}

// PoolGone implements engine.PoolMetrics: a deleted pool's series go.
func (m *Metrics) PoolGone(pool, network string) {
	p := m.pools
	for _, v := range []*prometheus.GaugeVec{p.members, p.queued, p.inFlight, p.short} {
		v.DeleteLabelValues(pool, network)
	}
	p.topUps.DeleteLabelValues(pool, network)
	p.refusals.DeleteLabelValues(pool, network)
}
