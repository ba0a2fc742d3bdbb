package actors_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/txengine/txengine/engine/prom"
)

// TestMetricsFollowABurst runs a burst through the actors with the
// Prometheus metrics attached: the account's counters count every
// transaction, the watcher reports the head, and once everything completed
// and the actor passivated the queue and in-flight gauges are back at zero.
func TestMetricsFollowABurst(t *testing.T) {
	const n = 12
	f := newFixture(t, 4, time.Second)
	f.sys.Close()
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg, prom.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f.cfg.Metrics = m
	f.net.Chain = m.InstrumentChain("dev", f.net.Chain)
	f.start()

	ids := make([]string, n)
	to := randomAddress(t)
	for i := range ids {
		tx := f.transfer(to, 1)
		ids[i] = tx.ID
		if _, err := f.sys.Submit(context.Background(), tx); err != nil {
			t.Fatal(err)
		}
	}
	f.waitAll(ids, 60*time.Second)
	acct := f.account.ID
	gauge := func(name string) float64 {
		return gaugeValue(t, reg, name, map[string]string{"account": acct, "network": "dev"})
	}
	for _, c := range []struct {
		name string
		want float64
	}{
		{"txengine_transactions_accepted_total", n},
		{"txengine_transactions_submitted_total", n},
		{"txengine_transactions_completed_total", n},
		{"txengine_account_next_nonce", n},
	} {
		if got := gauge(c.name); got != c.want {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
	if got := testutil.CollectAndCount(reg, "txengine_network_head_number"); got != 1 {
		t.Errorf("head number series: %d", got)
	}
	if got := testutil.CollectAndCount(reg, "txengine_rpc_requests_total"); got < 4 {
		t.Errorf("rpc request series: %d, want several methods", got)
	}
	// The actor passivates after a second idle: its load leaves the gauges.
	deadline := time.Now().Add(20 * time.Second)
	for f.sys.LiveAccounts() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if q, fl := gauge("txengine_account_queue_depth"), gauge("txengine_account_in_flight"); q != 0 || fl != 0 {
		t.Errorf("after passivation: queue depth %v, in flight %v; want 0, 0", q, fl)
	}
}

// gaugeValue returns the value of the counter or gauge name with labels,
// or -1 when there is no such series.
func gaugeValue(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
	next:
		for _, metric := range fam.GetMetric() {
			have := map[string]string{}
			for _, l := range metric.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			if c := metric.GetCounter(); c != nil {
				return c.GetValue()
			}
			return metric.GetGauge().GetValue()
		}
	}
	return -1
}
