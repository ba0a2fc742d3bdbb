package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/txengine/txengine/engine"
)

// nonceMetrics are the collectors of the accounts' nonce health and of
// the nonce doctor's repairs.
type nonceMetrics struct {
	chainNonce, lowest, stuck *prometheus.GaugeVec
	doctorBlocks              *prometheus.GaugeVec
	repairs                   *prometheus.CounterVec
}

// newNonceMetrics creates the collectors of nonce health; New registers
// them.
func newNonceMetrics() nonceMetrics {
	acct := []string{"account", "address", "network"}
	return nonceMetrics{
		chainNonce: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "account_chain_nonce",
			Help: "The account's nonce on chain at its sender's last check, per account and network (accounts within the cap only)."}, acct),
		lowest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "account_lowest_nonce_in_flight",
			Help: "The lowest nonce the account has in flight, per account and network; absent when nothing is in flight (accounts within the cap only)."}, acct),
		stuck: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "account_nonce_stuck_blocks",
			Help: "Blocks since the account's lowest nonce in flight (or its chain nonce) last moved, once a check found it stuck; 0 when not stuck (accounts within the cap only)."}, acct),
		doctorBlocks: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "network_nonce_doctor_blocks",
			Help: "Blocks a gap below an account's lowest nonce in flight may last before the nonce doctor fills it, per network (its doctorBlocks)."}, []string{"network"}),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "account_nonce_repairs_total",
			Help: "Repairs of the nonce doctor per account, network and kind (gap_filled: fillers sent for a gap below the lowest nonce in flight; next_resynced: the next nonce was off and re-read)."},
			[]string{"account", "address", "network", "kind"}),
	}
}

// collectors returns the collectors to register.
func (n nonceMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{n.chainNonce, n.lowest, n.stuck, n.doctorBlocks, n.repairs}
}

// NonceHealth implements engine.Metrics. Accounts beyond the cap have no
// nonce series (a nonce of "other" would mean nothing); their repairs are
// counted under "other".
func (m *Metrics) NonceHealth(account engine.MetricAccount, network string, h engine.NonceHealth) {
	n := m.nonces
	n.doctorBlocks.WithLabelValues(network).Set(float64(h.DoctorBlocks))
	id, addr := m.account(account)
	if id == OtherAccount {
		return
	}
	// The repair counters of the account exist, at zero, from its first report.
	n.repairs.WithLabelValues(id, addr, network, engine.NonceRepairGapFilled)
	n.repairs.WithLabelValues(id, addr, network, engine.NonceRepairNextResynced)
	if h.ChainKnown {
		n.chainNonce.WithLabelValues(id, addr, network).Set(float64(h.ChainNonce))
	}
	if h.LowestInFlight != nil {
		n.lowest.WithLabelValues(id, addr, network).Set(float64(*h.LowestInFlight))
	} else {
		n.lowest.DeleteLabelValues(id, addr, network)
	}
	n.stuck.WithLabelValues(id, addr, network).Set(float64(h.StuckBlocks))
}

// NonceRepaired implements engine.Metrics.
func (m *Metrics) NonceRepaired(account engine.MetricAccount, network, kind string) {
	id, addr := m.account(account)
	m.nonces.repairs.WithLabelValues(id, addr, network, kind).Inc()
}
