package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestStackStopsInReverseOrder: serve's stops run last pushed first, nil
// stops are skipped, and a second stop runs nothing again.
func TestStackStopsInReverseOrder(t *testing.T) {
	var got []string
	var s stack
	for _, name := range []string{"store", "networks", "actors"} {
		s.push(func() { got = append(got, name) })
		s.push(nil)
	}
	s.stop()
	s.stop()
	if want := "actors networks store"; strings.Join(got, " ") != want {
		t.Errorf("stopped %q, want %q", strings.Join(got, " "), want)
	}
}

// TestClosingLogs: a closing stop logs "<what> closed" with the time it
// took, and a failure as "closing <what>" first.
func TestClosingLogs(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	closing(log, "store", func() error { return nil })()
	if got := out.String(); !strings.Contains(got, `msg="store closed" took=`) || strings.Contains(got, "closing store") {
		t.Errorf("clean close logged:\n%s", got)
	}
	out.Reset()
	closing(log, "networks", func() error { return errors.New("boom") })()
	got := out.String()
	failed, closed := strings.Index(got, `msg="closing networks" err=boom`), strings.Index(got, `msg="networks closed"`)
	if failed < 0 || closed < failed {
		t.Errorf("failed close logged:\n%s", got)
	}
}
