// Package benchtable holds the rows that `make bench` measures and renders
// them as one markdown table, for one run or as the medians of several.
package benchtable

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
)

// Row is one measured quantity.
type Row struct {
	// ID is stable across runs (the key of medians), e.g. "P1.pg.ratio".
	ID string `json:"id"`
	// What describes the measurement, with its N.
	What string `json:"what"`
	// Value is the measurement in Unit.
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Target is a bound the value must meet; none when HasTarget is false.
	HasTarget bool    `json:"hasTarget"`
	Target    float64 `json:"target"`
	// AtLeast: the value passes when >= Target; otherwise when <= Target.
	AtLeast bool `json:"atLeast"`
	// Note is shown beside the value (e.g. the conditions of the run).
	Note string `json:"note,omitempty"`
}

// Pass reports whether the row meets its target (true without a target).
func (r Row) Pass() bool {
	if !r.HasTarget || math.IsNaN(r.Value) {
		return !r.HasTarget
	}
	if r.AtLeast {
		return r.Value >= r.Target
	}
	return r.Value <= r.Target
}

// Run is the result of one `make bench`.
type Run struct {
	Machine string `json:"machine"`
	Date    string `json:"date"`
	Rows    []Row  `json:"rows"`
}

// Medians returns one run whose rows hold, per ID in the order of the first
// run, the median of the values of runs; Date lists every run's date.
func Medians(runs []Run) Run {
	if len(runs) == 0 {
		return Run{}
	}
	vals := map[string][]float64{}
	var dates []string
	for _, r := range runs {
		dates = append(dates, r.Date)
		for _, row := range r.Rows {
			if !math.IsNaN(row.Value) {
				vals[row.ID] = append(vals[row.ID], row.Value)
			}
		}
	}
	out := Run{Machine: runs[0].Machine, Date: strings.Join(dates, ", ")}
	for _, row := range runs[0].Rows {
		if v := vals[row.ID]; len(v) > 0 {
			row.Value = median(v)
		}
		row.Note = strings.TrimSpace(row.Note + fmt.Sprintf(" (median of %d)", len(vals[row.ID])))
		out.Rows = append(out.Rows, row)
	}
	return out
}

// Markdown writes r as one markdown table with a header line.
func Markdown(w io.Writer, r Run) {
	fmt.Fprintf(w, "machine: %s; date: %s\n\n", r.Machine, r.Date)
	fmt.Fprintln(w, "| row | measured | target | result |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, row := range r.Rows {
		target, result := "—", "info"
		if row.HasTarget {
			op := "≤"
			if row.AtLeast {
				op = "≥"
			}
			target = op + " " + format(row.Target, row.Unit)
			result = "pass"
			if !row.Pass() {
				result = "**miss**"
			}
		}
		measured := format(row.Value, row.Unit)
		if row.Note != "" {
			measured += " " + row.Note
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", row.What, measured, target, result)
	}
}

func format(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case unit == "x":
		return fmt.Sprintf("%.2f×", v)
	case math.Abs(v) >= 100 || v == math.Trunc(v):
		return strings.TrimSpace(fmt.Sprintf("%.0f %s", v, unit))
	default:
		return strings.TrimSpace(fmt.Sprintf("%.2f %s", v, unit))
	}
}

// ReadRuns reads runs saved as JSON files.
func ReadRuns(paths []string) ([]Run, error) {
	var runs []Run
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read run: %w", err)
		}
		var r Run
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("decode run %s: %w", p, err)
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// median returns the median of xs (sorted in place): the middle value, or
// the mean of the two middle values.
func median(xs []float64) float64 {
	sort.Float64s(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}
