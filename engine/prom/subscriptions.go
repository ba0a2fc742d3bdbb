package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/txengine/txengine/engine"
)

// subscriptionMetrics are the collectors of event subscriptions and of
// callback deliveries.
type subscriptionMetrics struct {
	live       *prometheus.GaugeVec
	lag        *prometheus.GaugeVec
	events     *prometheus.CounterVec
	pollErrors *prometheus.CounterVec
	stepErrors *prometheus.CounterVec
	waiting    *prometheus.GaugeVec
	callbacks  *prometheus.CounterVec
}

// newSubscriptionMetrics creates the collectors of subscriptions; New
// registers them.
func newSubscriptionMetrics() subscriptionMetrics {
	net := []string{"network"}
	m := subscriptionMetrics{
		live: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "subscriptions",
			Help: "Live event subscriptions per network, as the network's processor last read them."}, net),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "subscription_lag_blocks",
			Help: "Blocks deep enough for some subscription of the network that are not processed yet (the most of any subscription; 0: caught up)."}, net),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "subscription_events_total",
			Help: "Subscription deliveries stored per network and kind (log: a matched log; removed: a retraction after a reorg)."}, []string{"network", "kind"}),
		pollErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "subscription_poll_failures_total",
			Help: "Polls of a network's subscription processor that failed (node or database errors; retried)."}, net),
		stepErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "subscription_step_failures_total",
			Help: "Steps of a network's subscription processor whose read failed on the node; the group halves its range (a log limit) or waits while the other groups go on."}, net),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "subscriptions_waiting",
			Help: "Subscriptions of the network whose group waits after failed steps (0: none)."}, net),
		callbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "callback_deliveries_total",
			Help: "Callback delivery attempts recorded per kind (transaction, event) and outcome (delivered, retry, abandoned)."}, []string{"kind", "outcome"}),
	}
	for _, k := range []string{"transaction", "event"} {
		for _, o := range []string{"delivered", "retry", "abandoned"} {
			m.callbacks.WithLabelValues(k, o)
		}
	}
	return m
}

// collectors returns the collectors to register.
func (s subscriptionMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.live, s.lag, s.events, s.pollErrors, s.stepErrors, s.waiting, s.callbacks}
}

// SubscriptionPoll records one poll of network's subscription processor.
func (m *Metrics) SubscriptionPoll(network string, res engine.SubscriptionResult, err error) {
	s := m.subs
	s.events.WithLabelValues(network, "log").Add(float64(res.Delivered))
	s.events.WithLabelValues(network, "removed").Add(float64(res.Retracted))
	s.stepErrors.WithLabelValues(network).Add(float64(res.Failed))
	if err != nil {
		s.pollErrors.WithLabelValues(network).Inc()
		return
	}
	s.pollErrors.WithLabelValues(network)
	s.live.WithLabelValues(network).Set(float64(res.Subscriptions))
	s.lag.WithLabelValues(network).Set(float64(res.Lag))
	s.waiting.WithLabelValues(network).Set(float64(res.Waiting))
}

// CallbackOutcome counts one recorded callback attempt of kind
// ("transaction", "event") with outcome ("delivered", "retry",
// "abandoned"): the dispatcher's engine.DispatcherConfig.Outcome.
func (m *Metrics) CallbackOutcome(kind, outcome string) {
	m.subs.callbacks.WithLabelValues(kind, outcome).Inc()
}
