package sqlstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

// waitQueued waits until the gate has first and rest waiters queued.
func waitQueued(t *testing.T, g *writeGate, first, rest int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		g.mu.Lock()
		f, r := len(g.first), len(g.rest)
		g.mu.Unlock()
		if f == first && r == rest {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queued %d accepts and %d others, want %d and %d", f, r, first, rest)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWriteGateAlternates checks the order in which the gate serves its
// waiters: an accept that arrives behind several other writers goes right
// after the holder (database/sql would pick at random among them), the
// others are served in arrival order and get every other turn while
// accepts keep coming, so neither class starves.
func TestWriteGateAlternates(t *testing.T) {
	g := &writeGate{}
	ctx := context.Background()
	if err := g.acquire(ctx, false); err != nil { // the holder: a submitter's commit
		t.Fatal(err)
	}
	order := make(chan string, 10)
	enqueue := func(name string, accept bool, first, rest int) {
		go func() {
			if err := g.acquire(ctx, accept); err != nil {
				order <- "error " + err.Error()
				return
			}
			order <- name
			g.release()
		}()
		waitQueued(t, g, first, rest)
	}
	// Only one accept waits at a time in the store (the commit queue has
	// one writer), but the gate takes any number.
	enqueue("other1", false, 0, 1)
	enqueue("other2", false, 0, 2)
	enqueue("accept1", true, 1, 2)
	enqueue("accept2", true, 2, 2)
	enqueue("other3", false, 2, 3)
	g.release()
	want := []string{"accept1", "other1", "accept2", "other2", "other3"}
	for i, w := range want {
		select {
		case got := <-order:
			if got != w {
				t.Fatalf("turn %d went to %s, want %s (order %v)", i, got, w, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("turn %d: nobody got the gate", i)
		}
	}
	// Free again: the next writer passes at once.
	if err := g.acquire(ctx, false); err != nil {
		t.Fatal(err)
	}
	g.release()
}

// TestWriteGateCancel checks that a waiter whose context ends leaves the
// queue with its error and that the gate still passes to the next one.
func TestWriteGateCancel(t *testing.T) {
	g := &writeGate{}
	if err := g.acquire(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gave := make(chan error, 1)
	go func() { gave <- g.acquire(ctx, true) }()
	waitQueued(t, g, 1, 0)
	cancel()
	if err := <-gave; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v, want context.Canceled", err)
	}
	waitQueued(t, g, 0, 0)
	next := make(chan error, 1)
	go func() { next <- g.acquire(context.Background(), false) }()
	waitQueued(t, g, 0, 1)
	g.release()
	select {
	case err := <-next:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the gate did not pass on after a cancelled waiter")
	}
	g.release()
	if g.busy {
		t.Fatal("gate still busy after the last release")
	}
}
