package engine

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// TestMergerMergesWaitingCalls: while one run works, the calls that arrive
// wait and the next run takes them together, up to the weight bound; each
// caller gets the result of its own request.
func TestMergerMergesWaitingCalls(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var runs [][]int
	m := NewMerger(func(reqs []int) []int {
		mu.Lock()
		runs = append(runs, slices.Clone(reqs))
		first := len(runs) == 1
		mu.Unlock()
		if first {
			<-release // hold the first run while others arrive
		}
		out := make([]int, len(reqs))
		for i, r := range reqs {
			out[i] = r * 10
		}
		return out
	}, func(r int) int { return r }, 6)

	results := make([]int, 6)
	var wg sync.WaitGroup
	call := func(i int) {
		defer wg.Done()
		res, ok := m.Do(i)
		if !ok {
			t.Errorf("Do(%d) refused", i)
		}
		results[i] = res
	}
	wg.Add(1)
	go call(1)
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(runs) == 1 })
	for _, i := range []int{2, 3, 4, 5} { // weights 2+3 fit in 6, then 4, then 5
		wg.Add(1)
		go call(i)
		waitFor(t, func() bool { m.mu.Lock(); defer m.mu.Unlock(); return len(m.waiting) == i-1 })
	}
	close(release)
	wg.Wait()
	for i := 1; i <= 5; i++ {
		if results[i] != i*10 {
			t.Errorf("result of %d = %d, want %d", i, results[i], i*10)
		}
	}
	want := [][]int{{1}, {2, 3}, {4}, {5}}
	if !slices.EqualFunc(runs, want, slices.Equal[[]int]) {
		t.Errorf("runs = %v, want %v", runs, want)
	}
	m.Close()
	if _, ok := m.Do(7); ok {
		t.Error("Do after Close ran")
	}
	m.Close() // a second Close is a no-op
}

// TestMergerCloseRunsWaitingCalls: Close returns after the calls already
// waiting ran.
func TestMergerCloseRunsWaitingCalls(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	m := NewMerger(func(reqs []string) []string {
		started <- struct{}{}
		<-release
		return reqs
	}, nil, 0)
	got := make(chan string, 2)
	do := func(s string) {
		res, _ := m.Do(s)
		got <- res
	}
	go do("a")
	<-started // a runs, alone
	go do("b")
	waitFor(t, func() bool { m.mu.Lock(); defer m.mu.Unlock(); return len(m.waiting) == 1 })
	closed := make(chan struct{})
	go func() { m.Close(); close(closed) }()
	close(release)
	<-closed
	if a, b := <-got, <-got; a+b != "ab" && a+b != "ba" {
		t.Fatalf("results %q %q", a, b)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMergerPanicReachesTheCallers: a run that panics makes each of its
// callers panic with the same value (their supervisors restart them), and
// the merger goes on serving.
func TestMergerPanicReachesTheCallers(t *testing.T) {
	m := NewMerger(func(reqs []int) []int {
		if reqs[0] < 0 {
			panic("bad request")
		}
		return reqs
	}, nil, 0)
	defer m.Close()
	func() {
		defer func() {
			if r := recover(); r != "bad request" {
				t.Fatalf("recovered %v, want the run's panic", r)
			}
		}()
		m.Do(-1)
		t.Fatal("Do returned after its run panicked")
	}()
	if res, ok := m.Do(3); !ok || res != 3 {
		t.Fatalf("after a panic: Do(3) = %d, %v", res, ok)
	}
}
