package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// TestRequestQueueHopelessRequestsHoldNoWorker: 32 requests that fail for
// good (an empty faucet's answer) run once each and are dropped; 32 that
// fail transiently are retried with a growing pause, at most maxAttempts
// times; neither holds the workers: a request queued after them runs at
// once.
func TestRequestQueueHopelessRequestsHoldNoWorker(t *testing.T) {
	q := newRequestQueue(4, slog.New(slog.DiscardHandler))
	defer q.close()
	q.retry = engine.Backoff{Initial: 20 * time.Millisecond, Max: 80 * time.Millisecond}
	q.maxAttempts = 5
	var finals, transients atomic.Int64
	var mu sync.Mutex
	runs := map[string][]time.Time{}
	for i := range 32 {
		q.add(fmt.Sprintf("fund:%d", i), func(context.Context) error {
			finals.Add(1)
			return final(errors.New("faucet is empty"))
		})
		key := fmt.Sprintf("wake:%d", i)
		q.add(key, func(context.Context) error {
			transients.Add(1)
			mu.Lock()
			runs[key] = append(runs[key], time.Now())
			mu.Unlock()
			return errors.New("grain unreachable")
		})
	}
	done := make(chan time.Time, 1)
	queued := time.Now()
	q.add("wake:good", func(context.Context) error { done <- time.Now(); return nil })
	select {
	case at := <-done:
		if took := at.Sub(queued); took > time.Second {
			t.Fatalf("a good request waited %s behind hopeless ones", took)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a good request never ran behind hopeless ones")
	}
	// 20+40+80+80 ms of pauses: all transient ones end within a second.
	deadline := time.Now().Add(5 * time.Second)
	for transients.Load() < 32*5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // no run after the last attempt
	if got := finals.Load(); got != 32 {
		t.Errorf("final failures ran %d times, want 32 (once each)", got)
	}
	if got := transients.Load(); got != 32*5 {
		t.Errorf("transient failures ran %d times, want %d (maxAttempts each)", got, 32*5)
	}
	mu.Lock()
	defer mu.Unlock()
	for key, at := range runs {
		for i := 2; i < len(at); i++ {
			if at[i].Sub(at[i-1]) < at[1].Sub(at[0]) {
				t.Errorf("%s: pause %d (%s) shorter than the first (%s): no backoff", key, i, at[i].Sub(at[i-1]), at[1].Sub(at[0]))
			}
		}
	}
	if n := q.queued(); n != 0 {
		t.Errorf("%d requests still queued", n)
	}
}

// TestRequestQueueRetryKeepsLatestRun: a key asked for again while it waits
// for its retry runs its latest request, once, after the pause.
func TestRequestQueueRetryKeepsLatestRun(t *testing.T) {
	q := newRequestQueue(2, slog.New(slog.DiscardHandler))
	defer q.close()
	q.retry = engine.Backoff{Initial: 50 * time.Millisecond, Max: 50 * time.Millisecond}
	failed := make(chan struct{})
	q.add("k", func(context.Context) error { close(failed); return errors.New("transient") })
	<-failed
	got := make(chan string, 2)
	time.Sleep(10 * time.Millisecond) // the retry is scheduled
	q.add("k", func(context.Context) error { got <- "second"; return nil })
	select {
	case s := <-got:
		if s != "second" {
			t.Fatalf("ran %q", s)
		}
	case <-time.After(time.Second):
		t.Fatal("the latest request never ran")
	}
	select {
	case s := <-got:
		t.Fatalf("ran again: %q", s)
	case <-time.After(150 * time.Millisecond):
	}
}
