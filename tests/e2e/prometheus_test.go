package e2e

import (
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/internal/promtest"
)

// labelValuesRE parses a Grafana variable's label_values(selector, label).
var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*([a-z_]+)\)$`)

// grafanaVars stands in for Grafana's variables: the dev network, every
// address, and a rate interval that spans the burst.
var grafanaVars = strings.NewReplacer("$network", "dev", "$address", ".*", "$__rate_interval", "2m")

// TestPrometheusDashboardQueries runs a real Prometheus (Debian's package)
// on loopback that scrapes the service every second during an end-to-end
// burst on the embedded default (transfers that complete, one that fails),
// then evaluates every query of docs/grafana/txengine.json through
// Prometheus' HTTP API: each must return at least one finite sample, and
// the variables' label_values must list the dev network and the operator's
// EIP-55 address.
func TestPrometheusDashboardQueries(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary, its dev chain and Prometheus")
	}
	promtest.Binary(t, "prometheus")
	dash := promtest.LoadDashboard(t, "../../docs/grafana/txengine.json")

	s := startService(t, t.TempDir())
	prom := promtest.Start(t, fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: txengine
    static_configs:
      - targets: [%q]
`, strings.TrimPrefix(s.URL, "http://")))
	ctx := t.Context()
	if _, err := prom.WaitFor(ctx, `up{job="txengine"} == 1`, 30*time.Second, func(v []promtest.Sample) bool { return len(v) == 1 }); err != nil {
		t.Fatalf("prometheus does not scrape the service: %v", err)
	}

	// A first transfer, seen by Prometheus before the burst: the
	// operator's series exist when the burst starts, as on a service that
	// has been running (a series first scraped at its final value shows no
	// rate).
	tok := demoToken(t, s)
	opAddr := s.must(200, "GET", "/accounts/default", s.Token, nil).(map[string]any)["address"].(string)
	first := s.must(202, "POST", "/tokens/"+tok["id"].(string)+"/transfers", s.Token, map[string]any{"to": opAddr, "value": "1"}).(map[string]any)
	s.waitTerminal(first["id"].(string), s.Token, 90*time.Second)
	if _, err := prom.WaitFor(ctx, `sum(txengine_transactions_completed_total)`, 30*time.Second,
		func(v []promtest.Sample) bool { return len(v) == 1 && v[0].Value >= 1 }); err != nil {
		t.Fatalf("the first transfer in Prometheus: %v", err)
	}

	// The burst: transfers from the operator to three users' accounts, one
	// transfer of more than the supply (fails: reverted), a few 401s.
	var ids []string
	for u := 0; u < 3; u++ {
		user := s.must(201, "POST", "/users", s.Token, map[string]any{"auth": true, "account": true}).(map[string]any)
		to := user["account"].(map[string]any)["address"]
		for i := 0; i < 5; i++ {
			tx := s.must(202, "POST", "/tokens/"+tok["id"].(string)+"/transfers", s.Token, map[string]any{"to": to, "value": "7"}).(map[string]any)
			ids = append(ids, tx["id"].(string))
		}
	}
	tooMuch := new(big.Int).Add(bigOf(t, tok["parameters"].(map[string]any)["supply"]), big.NewInt(1)).String()
	failed := s.must(202, "POST", "/tokens/"+tok["id"].(string)+"/transfers", s.Token, map[string]any{"to": opAddr, "value": tooMuch}).(map[string]any)
	for i := 0; i < 3; i++ {
		s.call("GET", "/accounts", "", nil)
	}
	for _, id := range ids {
		if tx := s.waitTerminal(id, s.Token, 90*time.Second); tx["status"] != "completed" {
			t.Fatalf("transfer %s: %v", id, tx)
		}
	}
	if tx := s.waitTerminal(failed["id"].(string), s.Token, 90*time.Second); tx["status"] != "failed" {
		t.Fatalf("transfer of more than the supply: %v, want failed", tx)
	}
	// Prometheus has scraped the end of the burst.
	want := float64(len(ids) + 1)
	if _, err := prom.WaitFor(ctx, `sum(txengine_transactions_completed_total)`, 30*time.Second,
		func(v []promtest.Sample) bool { return len(v) == 1 && v[0].Value >= want }); err != nil {
		t.Fatalf("completed transactions in Prometheus: %v", err)
	}
	if _, err := prom.WaitFor(ctx, `sum(txengine_transactions_failed_total{code="reverted"})`, 30*time.Second,
		func(v []promtest.Sample) bool { return len(v) == 1 && v[0].Value >= 1 }); err != nil {
		t.Fatalf("failed transactions in Prometheus: %v", err)
	}

	checked := 0
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue // the data source picker
		}
		m := labelValuesRE.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(selector, label)", v.Name, v.Definition)
			continue
		}
		values, err := prom.LabelValues(ctx, m[2], grafanaVars.Replace(m[1]))
		if err != nil || len(values) == 0 {
			t.Errorf("variable %s: %s: %v, %v", v.Name, v.Definition, values, err)
			continue
		}
		checked++
		t.Logf("variable %s = %s: %v", v.Name, v.Definition, values)
		switch m[2] {
		case "network":
			if !slices.Contains(values, "dev") {
				t.Errorf("variable %s: %v lacks dev", v.Name, values)
			}
		case "address":
			if !slices.Contains(values, opAddr) {
				t.Errorf("variable %s: %v lacks the operator's address %s", v.Name, values, opAddr)
			}
			for _, a := range values {
				if a != "other" && (!common.IsHexAddress(a) || common.HexToAddress(a).Hex() != a) {
					t.Errorf("variable %s: %q is not an EIP-55 address", v.Name, a)
				}
			}
		}
	}
	// The pool panels have data only where a pool sent: their queries
	// are checked in a run that has one.
	pools, err := prom.Query(ctx, `count(txengine_pool_members)`)
	hasPools := err == nil && len(pools) > 0
	for _, p := range dash.Panels {
		if strings.HasPrefix(p.Title, "Pools:") && !hasPools {
			t.Logf("panel %q: no pool in this run, not checked", p.Title)
			continue
		}
		for _, tg := range p.Targets {
			expr := grafanaVars.Replace(tg.Expr)
			// A rate needs two samples of a series: a counter that first
			// appeared at the last scrape has one (scrapes are 1 s apart).
			got, err := prom.WaitFor(ctx, expr, 10*time.Second, func(v []promtest.Sample) bool { return len(v) > 0 })
			if err != nil {
				t.Errorf("panel %q: %s: %v", p.Title, expr, err)
				continue
			}
			finite := promtest.Finite(got)
			checked++
			t.Logf("panel %q: %s: %d series, e.g. %v = %g", p.Title, tg.Expr, len(finite), finite[0].Metric, finite[0].Value)
		}
	}
	if checked < 15 {
		t.Errorf("only %d dashboard queries checked", checked)
	}
	// The per-address throughput shows the operator's address.
	byAddr, err := prom.Query(ctx, grafanaVars.Replace(`sum by (address) (increase(txengine_transactions_completed_total{address=~"$address",network=~"$network"}[$__rate_interval]))`))
	if err != nil || len(byAddr) != 1 || byAddr[0].Metric["address"] != opAddr || byAddr[0].Value < float64(len(ids))/2 {
		t.Errorf("completed by address: %v, %v; want the operator's %s", byAddr, err, opAddr)
	}
}
