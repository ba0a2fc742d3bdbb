package benchtable

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestPassAndMedians(t *testing.T) {
	mk := func(v float64) Run {
		return Run{Machine: "m", Date: "d", Rows: []Row{
			{ID: "a", What: "ratio", Value: v, Unit: "x", HasTarget: true, Target: 0.5, AtLeast: true},
			{ID: "b", What: "p99", Value: v * 10, Unit: "ms", HasTarget: true, Target: 10},
			{ID: "c", What: "info", Value: math.NaN(), Unit: "s"},
		}}
	}
	m := Medians([]Run{mk(0.4), mk(0.9), mk(0.6)})
	if m.Rows[0].Value != 0.6 || !m.Rows[0].Pass() || m.Rows[1].Value != 6 || !m.Rows[1].Pass() {
		t.Fatalf("medians = %+v", m.Rows)
	}
	if !math.IsNaN(m.Rows[2].Value) {
		t.Fatalf("all-NaN row became %v", m.Rows[2].Value)
	}
	if (Row{Value: 11, HasTarget: true, Target: 10}).Pass() {
		t.Error("11 <= 10 passed")
	}
	var b bytes.Buffer
	Markdown(&b, mk(0.4))
	out := b.String()
	for _, want := range []string{"| ratio | 0.40× | ≥ 0.50× | **miss** |", "| p99 | 4 ms | ≤ 10 ms | pass |", "| info | n/a | — | info |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
