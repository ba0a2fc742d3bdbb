package http

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// batchProbe is a read function that records the keys of each call and
// holds the first call until released.
type batchProbe struct {
	mu      sync.Mutex
	calls   [][]string
	started chan struct{} // closed when the first call began
	release chan struct{} // the first call returns once this is closed
	panicOn int           // 1-based index of the call that panics (0: none)
}

func newBatchProbe() *batchProbe {
	return &batchProbe{started: make(chan struct{}), release: make(chan struct{})}
}

func (p *batchProbe) read(ctx context.Context, keys []string) (map[string]int, error) {
	p.mu.Lock()
	p.calls = append(p.calls, slices.Clone(keys))
	n := len(p.calls)
	p.mu.Unlock()
	if n == 1 {
		close(p.started)
		<-p.release
	}
	if n == p.panicOn {
		panic("probe panics")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, k := range keys {
		if k != "missing" {
			out[k] = len(k)
		}
	}
	return out, nil
}

// waitQueued waits until n calls wait behind the running read.
func waitQueued(t *testing.T, b *readBatch[string, int], n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		got := len(b.waiting)
		b.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls waiting, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

type readResult struct {
	key   string
	v     int
	found bool
	err   error
}

// TestReadBatchMergesWaitingReads: a call made while no read runs reads
// alone; the calls that arrive during that read wait and are served by one
// more read of their distinct keys, each with its own result.
func TestReadBatchMergesWaitingReads(t *testing.T) {
	p := newBatchProbe()
	b := &readBatch[string, int]{read: p.read, timeout: time.Minute}
	results := make(chan readResult, 16)
	get := func(k string) {
		v, found, err := b.get(context.Background(), k)
		results <- readResult{k, v, found, err}
	}
	go get("first")
	<-p.started
	keys := []string{"a", "bb", "ccc", "bb", "missing", "dddd", "a", "eeeee"}
	for _, k := range keys {
		go get(k)
	}
	waitQueued(t, b, len(keys))
	close(p.release)
	for range len(keys) + 1 {
		r := <-results
		wantFound := r.key != "missing"
		if r.err != nil || r.found != wantFound || (wantFound && r.v != len(r.key)) {
			t.Errorf("get(%q) = %d, %v, %v; want %d, %v, nil", r.key, r.v, r.found, r.err, len(r.key), wantFound)
		}
	}
	if len(p.calls) != 2 || !slices.Equal(p.calls[0], []string{"first"}) || len(p.calls[1]) != 6 {
		t.Fatalf("reads %v, want [first] then the 6 distinct keys of the 8 calls that waited", p.calls)
	}
	// Idle again: the next call reads at once, alone.
	if v, found, err := b.get(context.Background(), "ffffff"); err != nil || !found || v != 6 || len(p.calls) != 3 {
		t.Fatalf("get after the batch = %d, %v, %v after %d reads", v, found, err, len(p.calls))
	}
}

// TestReadBatchBoundsAMergedRead: more calls waiting than readBatchMax
// are served by several reads of at most readBatchMax keys.
func TestReadBatchBoundsAMergedRead(t *testing.T) {
	p := newBatchProbe()
	b := &readBatch[string, int]{read: p.read, timeout: time.Minute}
	n := readBatchMax + 88
	var wg sync.WaitGroup
	wg.Go(func() { _, _, _ = b.get(context.Background(), "first") })
	<-p.started
	for i := range n {
		wg.Go(func() {
			if _, found, err := b.get(context.Background(), fmt.Sprintf("k%d", i)); err != nil || !found {
				t.Errorf("get(k%d): found %v, %v", i, found, err)
			}
		})
	}
	waitQueued(t, b, n)
	close(p.release)
	wg.Wait()
	var sizes []int
	for _, c := range p.calls {
		sizes = append(sizes, len(c))
	}
	if !slices.Equal(sizes, []int{1, readBatchMax, 88}) {
		t.Fatalf("read sizes %v, want [1 %d 88]", sizes, readBatchMax)
	}
}

// TestReadBatchOutlivesTheReadersContext: a merged read runs detached from
// the context of the request whose goroutine runs it (the other requests
// of its batch must not fail because that client went away), within the
// batch's timeout.
func TestReadBatchOutlivesTheReadersContext(t *testing.T) {
	var deadline time.Time
	b := &readBatch[string, int]{timeout: time.Minute, read: func(ctx context.Context, keys []string) (map[string]int, error) {
		deadline, _ = ctx.Deadline()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return map[string]int{keys[0]: 1}, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if v, found, err := b.get(ctx, "k"); err != nil || !found || v != 1 {
		t.Fatalf("get with a cancelled context = %d, %v, %v; want the value", v, found, err)
	}
	if left := time.Until(deadline); left <= 50*time.Second || left > time.Minute {
		t.Fatalf("read's deadline in %s, want the batch's timeout (1 min)", left)
	}
}

// TestReadBatchPanicReachesEveryCall: when the merged read panics, the
// goroutine that ran it panics, every other call of its batch gets an
// error, and the batch is usable after.
func TestReadBatchPanicReachesEveryCall(t *testing.T) {
	p := newBatchProbe()
	p.panicOn = 2
	b := &readBatch[string, int]{read: p.read, timeout: time.Minute}
	go func() { _, _, _ = b.get(context.Background(), "first") }()
	<-p.started
	results := make(chan readResult, 3)
	panics := make(chan any, 3)
	for _, k := range []string{"a", "bb", "ccc"} {
		go func() {
			defer func() {
				if r := recover(); r != nil {
					panics <- r
				}
			}()
			v, found, err := b.get(context.Background(), k)
			results <- readResult{k, v, found, err}
		}()
	}
	waitQueued(t, b, 3)
	close(p.release)
	if r := <-panics; r != "probe panics" {
		t.Fatalf("the reading call panicked with %v", r)
	}
	for range 2 {
		if r := <-results; r.err == nil || r.found {
			t.Errorf("get(%q) after the read panicked = %d, %v, %v; want an error", r.key, r.v, r.found, r.err)
		} else if errors.Is(r.err, context.Canceled) {
			t.Errorf("get(%q): %v, want the panic's error", r.key, r.err)
		}
	}
	if v, found, err := b.get(context.Background(), "dddd"); err != nil || !found || v != 4 {
		t.Fatalf("get after the panic = %d, %v, %v", v, found, err)
	}
}
