package racelog

import (
	"strings"
	"testing"
)

func TestReports(t *testing.T) {
	out := `time=... level=INFO msg=started
==================
WARNING: DATA RACE
Write at 0x00c000 by goroutine 7:
  main.a()
Previous read at 0x00c000 by goroutine 6:
  main.b()
==================
time=... level=INFO msg=more
==================
WARNING: DATA RACE
Read at 0x00c008 by goroutine 9:
  main.c()
`
	got := Reports(out)
	if len(got) != 2 {
		t.Fatalf("%d reports, want 2: %q", len(got), got)
	}
	if !strings.Contains(got[0], "main.b()") || strings.Contains(got[0], "msg=more") || !strings.HasSuffix(got[0], "==================") {
		t.Errorf("first report %q", got[0])
	}
	if !strings.HasPrefix(got[1], Marker) || !strings.Contains(got[1], "main.c()") {
		t.Errorf("second report (unterminated) %q", got[1])
	}
	if r := Reports("level=INFO msg=clean\n"); r != nil {
		t.Errorf("clean output: %q", r)
	}
}
