package prom

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// exercisePool makes every pool call for pool on network dev.
func exercisePool(m *Metrics, pool string) {
	m.PoolMembers(pool, "dev", 4)
	m.PoolLoad(pool, "dev", 3, 2)
	m.PoolTopUps(pool, "dev", 1)
	m.PoolShort(pool, "dev", true)
	m.PoolRefused(pool, "dev")
}

// TestPoolSeries: a pool's members, queue and in-flight gauges take the
// keeper's last values; top-ups and refusals count from zero (they exist
// from the pool's first report); the treasury-short gauge is 1 or 0; a
// deleted pool's series go and another pool's stay.
func TestPoolSeries(t *testing.T) {
	m, reg := newTest(t, Config{})
	m.PoolMembers("p1", "dev", 32)
	if n := testutil.CollectAndCount(reg, "txengine_pool_topups_total", "txengine_pool_refusals_total"); n != 2 {
		t.Errorf("counters after the first report: %d series, want 2 (at zero)", n)
	}
	m.PoolLoad("p1", "dev", 120, 16)
	m.PoolLoad("p1", "dev", 100, 14) // values, not deltas
	m.PoolTopUps("p1", "dev", 3)
	m.PoolTopUps("p1", "dev", 2)
	m.PoolRefused("p1", "dev")
	m.PoolShort("p1", "dev", true)
	p := m.pools
	for name, c := range map[string]struct{ got, want float64 }{
		"members":  {testutil.ToFloat64(p.members.WithLabelValues("p1", "dev")), 32},
		"queued":   {testutil.ToFloat64(p.queued.WithLabelValues("p1", "dev")), 100},
		"inFlight": {testutil.ToFloat64(p.inFlight.WithLabelValues("p1", "dev")), 14},
		"topUps":   {testutil.ToFloat64(p.topUps.WithLabelValues("p1", "dev")), 5},
		"refusals": {testutil.ToFloat64(p.refusals.WithLabelValues("p1", "dev")), 1},
		"short":    {testutil.ToFloat64(p.short.WithLabelValues("p1", "dev")), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}
	m.PoolShort("p1", "dev", false)
	if v := testutil.ToFloat64(p.short.WithLabelValues("p1", "dev")); v != 0 {
		t.Errorf("short after the treasury covers = %v, want 0", v)
	}

	exercisePool(m, "p2")
	m.PoolGone("p1", "dev")
	for _, name := range []string{"txengine_pool_members", "txengine_pool_queued", "txengine_pool_in_flight",
		"txengine_pool_treasury_short", "txengine_pool_topups_total", "txengine_pool_refusals_total"} {
		if n := testutil.CollectAndCount(reg, name); n != 1 {
			t.Errorf("%s after p1 was deleted: %d series, want 1 (p2's)", name, n)
		}
	}
	want := `
# HELP txengine_pool_queued Transactions queued (new or waiting) on the pool's members, per pool and network, as its keeper last read them.
# TYPE txengine_pool_queued gauge
txengine_pool_queued{network="dev",pool="p2"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "txengine_pool_queued"); err != nil {
		t.Error(err)
	}
}
