package prom

import (
	"context"
	"os"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/txengine/txengine/internal/promtest"
)

// TestDashboardUsesExistingMetrics parses the Grafana dashboard (and the
// alert rules) and checks that every metric their queries name is gathered
// from a registry set up as serve sets it up (histograms count with their
// _bucket, _sum and _count series).
func TestDashboardUsesExistingMetrics(t *testing.T) {
	dash := promtest.LoadDashboard(t, "../../docs/grafana/txengine.json")
	if dash.Title == "" || len(dash.Panels) < 5 {
		t.Fatalf("dashboard %q has %d panels", dash.Title, len(dash.Panels))
	}

	m, reg := newTest(t, Config{})
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exercise(t, m)
	if err := RegisterCallbackOutbox(reg, func(context.Context) (int, error) { return 0, nil }); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range families {
		have[f.GetName()] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				have[f.GetName()+s] = true
			}
		}
	}
	name := regexp.MustCompile(`\b(?:txengine|go|process)_[a-z0-9_]+\b`)
	used := 0
	check := func(where, expr string) {
		for _, n := range name.FindAllString(expr, -1) {
			used++
			if !have[n] {
				t.Errorf("%s: metric %s does not exist", where, n)
			}
		}
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			check("panel "+p.Title, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		check("variable", v.Definition)
	}
	if used < 10 {
		t.Errorf("only %d metric references found", used)
	}
	// The alert rules too (promtool evaluates them: internal/promtest).
	rules, err := os.ReadFile("../../docs/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	before := used
	check("docs/prometheus/alerts.yml", string(rules))
	if used-before < 5 {
		t.Errorf("only %d metric references in the alert rules", used-before)
	}
}
