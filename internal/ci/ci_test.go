package ci

import (
	"fmt"
	"runtime"
	"testing"
)

func TestRequired(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{{"true", true}, {"1", true}, {"TRUE", true}, {"false", false}, {"", false}, {"yes", false}} {
		t.Setenv(Env, c.v)
		if got := Required(); got != c.want {
			t.Errorf("CI=%q: Required() = %v, want %v", c.v, got, c.want)
		}
	}
}

// TestSkipOrFail: the same call skips outside CI and fails under CI=true.
func TestSkipOrFail(t *testing.T) {
	for _, c := range []struct {
		v                   string
		wantSkip, wantFatal bool
	}{{"", true, false}, {"true", false, true}} {
		t.Setenv(Env, c.v)
		r := &recorder{}
		done := make(chan struct{})
		go func() { // Skipf and Fatalf end their goroutine
			defer close(done)
			SkipOrFail(r, "missing %s", "thing")
		}()
		<-done
		if r.skipped != c.wantSkip || r.failed != c.wantFatal || r.msg != "missing thing" {
			t.Errorf("CI=%q: skipped %v, failed %v, message %q", c.v, r.skipped, r.failed, r.msg)
		}
	}
}

// recorder is a testing.TB that records how SkipOrFail ended it.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
