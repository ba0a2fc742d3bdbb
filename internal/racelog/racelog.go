// Package racelog finds the reports of Go's race detector in the output of
// a process built with -race, so that a test that runs the service fails on
// a data race in our code instead of passing over it, and names (without
// failing on) the races of libraries racing with themselves: protoactor-go's
// cluster gossip, go-ethereum's block assembly in the in-process dev chain.
package racelog

import (
	"fmt"
	"sort"
	"strings"
)

// Marker starts every race report.
const Marker = "WARNING: DATA RACE"

// reportEnd ends a report: the line of equals signs after its stacks.
const reportEnd = "=================="

// Reports returns each data race report in out (from its marker to the
// line of equals signs that closes it, or to the end of out), in order;
// none when out has no race.
func Reports(out string) []string {
	var reports []string
	for {
		i := strings.Index(out, Marker)
		if i < 0 {
			return reports
		}
		out = out[i:]
		end := len(out)
		if j := strings.Index(out[len(Marker):], reportEnd); j >= 0 {
			end = len(Marker) + j + len(reportEnd)
		}
		reports = append(reports, out[:end])
		out = out[end:]
	}
}

// modulePrefix names this module's packages in a stack frame.
const modulePrefix = "github.com/txengine/txengine/"

// Ours reports whether report (one of Reports) involves this module's code:
// whether either racing access was made by it, that is whether the first
// frame of the access's stack outside Go's standard library (runtime,
// sync, encoding/json reading our value...) is in a package of
// github.com/txengine/txengine or in a main package of ours. Frames below
// that one are callers: protoactor-go racing with itself while our code
// called into it (a Shutdown, say) is the library's race, and so is one
// whose only frame of ours is in a goroutine's creation stack.
func Ours(report string) bool {
	inAccess := false
	for _, line := range strings.Split(report, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			inAccess = false
		case strings.HasPrefix(trimmed, "Read at "), strings.HasPrefix(trimmed, "Write at "),
			strings.HasPrefix(trimmed, "Previous read at "), strings.HasPrefix(trimmed, "Previous write at "):
			inAccess = true
		case strings.HasPrefix(trimmed, "Goroutine "):
			inAccess = false
		case inAccess && !strings.HasPrefix(trimmed, "/") && !standardFrame(trimmed):
			// The access's own frame outside the standard library decides.
			if strings.HasPrefix(trimmed, modulePrefix) || strings.HasPrefix(trimmed, "main.") {
				return true
			}
			inAccess = false
		}
	}
	return false
}

// standardFrame reports whether a stack frame's function is in Go's
// standard library: its package path has no dot in its first element
// ("runtime.mapaccess2", "encoding/json.Marshal"), unlike a module's
// ("github.com/..."), and it is not a main package.
func standardFrame(fn string) bool {
	if strings.HasPrefix(fn, "main.") {
		return false
	}
	first, _, found := strings.Cut(fn, "/")
	if !found {
		return true // "runtime.x", "sync.(*Mutex).Lock"
	}
	return !strings.Contains(first, ".")
}

// Split sorts the race reports of out into ours (each a whole report, see
// Ours) and one line per distinct library race: its racing frames
// (Frames) and how many reports had them, sorted.
func Split(out string) (ours []string, library []string) {
	counts := map[string]int{}
	for _, r := range Reports(out) {
		if Ours(r) {
			ours = append(ours, r)
			continue
		}
		counts[Frames(r)]++
	}
	for frames, n := range counts {
		library = append(library, fmt.Sprintf("%d report(s): %s", n, frames))
	}
	sort.Strings(library)
	return ours, library
}

// Frames names the top frame of each racing access in report, joined by
// " vs ".
func Frames(report string) string {
	var frames []string
	lines := strings.Split(report, "\n")
	for i, line := range lines {
		t := strings.TrimSpace(line)
		if (strings.HasPrefix(t, "Read at ") || strings.HasPrefix(t, "Write at ") || strings.HasPrefix(t, "Previous ")) && i+1 < len(lines) {
			frames = append(frames, strings.TrimSpace(lines[i+1]))
		}
	}
	return strings.Join(frames, " vs ")
}
