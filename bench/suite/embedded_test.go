package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/bench/benchtable"
)

// embPairs are the shapes of issue 28's first target on the embedded
// default (SQLite and the in-process chain, as `make run` starts it):
// breadth beside a depth of as many transfers, measured one after the
// other on one service, so that the ratio comes from one run.
var embPairs = [][2]shape{{{1, 4000}, {400, 10}}, {{1, 10000}, {1000, 10}}}

// embBreadthRows measures each pair of embPairs on svc, the embedded
// default: accepted/s, accept p99 (target 50 ms), the service's CPU per
// completed transfer (process CPU, robust to a noisy machine), breadth's
// accepts beside depth's (target ≥ 0.8) and its CPU per transfer beside
// depth's. Every run is checked (each transfer completed exactly once).
func embBreadthRows(t *testing.T, b bins, logf func(string, ...any), svc *service) []benchtable.Row {
	var rows []benchtable.Row
	for _, pair := range embPairs {
		var ms [2]measured
		for i, sh := range pair {
			id := fmt.Sprintf("E.%dx%d", sh.accounts, sh.per)
			prof := shapeProfiler(t, id)
			m := measure(t, b.txload, svc, sh, prof.during, "--concurrency", itoa(p1Clients), "--timeout", "10m")
			prof.after()
			ms[i] = m
			cpuPer := 1000 * m.cpu / m.completed
			logf("%s on the embedded default: accepts %.0f/s p99 %.1f ms, drain %.1fs, CPU %.2f ms per completed, check %s",
				sh, m.r.AcceptedPerSec, m.r.LatencyMs.P99, m.r.LastCompletedSeconds, cpuPer, verdict(m.r))
			rows = append(rows,
				benchtable.Row{ID: id + ".accepts", What: fmt.Sprintf("%s on the embedded default, defaults, %d clients: accepted/s", sh, p1Clients),
					Value: m.r.AcceptedPerSec, Unit: "/s", Note: fmt.Sprintf("(check %s; %s)", verdict(m.r), m.after.outcome(m.before))},
				benchtable.Row{ID: id + ".p99", What: fmt.Sprintf("%s (embedded) accept p99", sh), Value: m.r.LatencyMs.P99, Unit: "ms", HasTarget: true, Target: 50},
				benchtable.Row{ID: id + ".cpu", What: fmt.Sprintf("%s (embedded) service CPU per completed transfer", sh), Value: cpuPer, Unit: "ms",
					Note: fmt.Sprintf("(%.1fs for %.0f)", m.cpu, m.completed)},
			)
		}
		depth, breadth := ms[0], ms[1]
		id := fmt.Sprintf("E.%dx%d", pair[1].accounts, pair[1].per)
		rows = append(rows,
			benchtable.Row{ID: id + ".accepts.ratio", What: fmt.Sprintf("%s accepted/s / %s's (embedded, same run)", pair[1], pair[0]),
				Value: breadth.r.AcceptedPerSec / depth.r.AcceptedPerSec, Unit: "x", HasTarget: true, Target: 0.8, AtLeast: true},
			benchtable.Row{ID: id + ".cpu.ratio", What: fmt.Sprintf("%s CPU per completed / %s's (embedded)", pair[1], pair[0]),
				Value: (breadth.cpu / breadth.completed) / (depth.cpu / depth.completed), Unit: "x"},
		)
	}
	return rows
}

// shapeProfile takes the profiles of one shape (the embedded breadth rows,
// the shape rows of make bench-shapes) when
// TXENGINE_PROFILE names a folder and TXENGINE_PPROF the pprof listener of
// a profiling build (TXENGINE_BENCH_BIN, built with -tags pprof): a CPU
// profile of TXENGINE_PROFILE_SECONDS (3, about a breadth's accept phase)
// from the first accepted transfer, and the block and mutex profiles of
// the whole shape (id.block.pprof with id.block.base.pprof, its state
// before: go tool pprof -base).
type shapeProfile struct {
	t        *testing.T
	dir, url string
	id       string
	seconds  int
}

func shapeProfiler(t *testing.T, id string) *shapeProfile {
	dir, addr := os.Getenv("TXENGINE_PROFILE"), os.Getenv("TXENGINE_PPROF")
	if dir == "" || addr == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &shapeProfile{t: t, dir: dir, url: "http://" + addr + "/debug/pprof/", id: id, seconds: envInt(t, "TXENGINE_PROFILE_SECONDS", 3)}
	for _, name := range []string{"block", "mutex"} {
		fetch(t, p.url+name, filepath.Join(dir, id+"."+name+".base.pprof"))
	}
	return p
}

func (p *shapeProfile) during() {
	if p != nil {
		fetch(p.t, fmt.Sprintf("%sprofile?seconds=%d", p.url, p.seconds), filepath.Join(p.dir, p.id+".cpu.pprof"))
	}
}

func (p *shapeProfile) after() {
	if p != nil {
		for _, name := range []string{"block", "mutex"} {
			fetch(p.t, p.url+name, filepath.Join(p.dir, p.id+"."+name+".pprof"))
		}
	}
}

// TestBenchEmbedded runs the embedded breadth rows of the suite alone
// (`make bench` runs them too):
//
//	TXENGINE_BENCH=embedded go test -count=1 -v -run TestBenchEmbedded -timeout 30m ./bench/suite/
//
// TXENGINE_BENCH_BIN runs a txengine built otherwise (the profiling build,
// with TXENGINE_PPROF in the environment of the test).
func TestBenchEmbedded(t *testing.T) {
	if os.Getenv("TXENGINE_BENCH") != "embedded" {
		t.Skip("the embedded breadth rows run alone with TXENGINE_BENCH=embedded (make bench runs them too)")
	}
	b := build(t)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }
	var env []string
	if p := os.Getenv("TXENGINE_PPROF"); p != "" {
		env = append(env, "TXENGINE_PPROF="+p)
	}
	svc := startService(t, b.txengine, t.TempDir(), env...)
	defer svc.stop()
	rows := embBreadthRows(t, b, logf, svc)
	var out strings.Builder
	benchtable.Markdown(&out, benchtable.Run{Machine: machine(), Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Rows: rows})
	fmt.Print("\n" + out.String())
}
