package engine

import "sync"

// Merger merges the calls of many goroutines into one call of its run
// function, the way a group commit merges commits: while run works on
// one merged call, the calls that arrive wait, and the next run takes all
// of them (up to maxWeight). Idle, a call runs at once, alone: merging
// costs no latency; under load each run serves many callers with one
// round trip. The runs are sequential.
//
// Create it with NewMerger; Close stops it after the calls already
// waiting have run.
type Merger[Req, Res any] struct {
	run       func(reqs []Req) []Res
	weight    func(Req) int
	maxWeight int

	mu      sync.Mutex
	waiting []*mergeCall[Req, Res]
	closed  bool

	wake chan struct{} // size 1: the runner has work (or must stop)
	done chan struct{} // closed when the runner returned
}

// mergeCall is one caller's request and where its result goes.
type mergeCall[Req, Res any] struct {
	req Req
	res Res
	// panicked holds what run panicked with (nil: it returned): each
	// caller of the merged call panics with it, as a call of its own would
	// have, and its supervisor restarts it; the runner goes on.
	panicked any
	done     chan struct{}
}

// NewMerger starts the runner of a merger. run gets the requests waiting,
// in arrival order, and must return one result per request, in the same
// order. A merged call holds requests of total weight at most maxWeight
// (weight nil: 1 each; maxWeight <= 0: no bound) unless a single request
// is heavier (it runs alone).
func NewMerger[Req, Res any](run func(reqs []Req) []Res, weight func(Req) int, maxWeight int) *Merger[Req, Res] {
	if weight == nil {
		weight = func(Req) int { return 1 }
	}
	m := &Merger[Req, Res]{run: run, weight: weight, maxWeight: maxWeight, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go m.loop() // owned by m: Close stops it and waits
	return m
}

// Do hands req to the runner and returns its result. ok is false when the
// merger is closed (req did not run).
func (m *Merger[Req, Res]) Do(req Req) (res Res, ok bool) {
	c := &mergeCall[Req, Res]{req: req, done: make(chan struct{})}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return res, false
	}
	m.waiting = append(m.waiting, c)
	m.mu.Unlock()
	m.signal()
	<-c.done
	if c.panicked != nil {
		panic(c.panicked)
	}
	return c.res, true
}

// Close runs the calls already waiting, refuses new ones and stops the
// runner. It is safe to call more than once.
func (m *Merger[Req, Res]) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.signal()
	<-m.done
}

func (m *Merger[Req, Res]) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// loop is the runner: it runs what is waiting, merged, until the merger is
// closed and nothing waits.
func (m *Merger[Req, Res]) loop() {
	defer close(m.done)
	for range m.wake {
		for {
			calls, last := m.take()
			if len(calls) > 0 {
				m.runCalls(calls)
			}
			if last {
				return
			}
			if len(calls) == 0 {
				break
			}
		}
	}
}

// take removes the next merged call from the queue: the oldest calls up to
// maxWeight (at least one). last is true when the merger is closed and
// nothing is left after these.
func (m *Merger[Req, Res]) take() (calls []*mergeCall[Req, Res], last bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, n := 0, 0
	for n < len(m.waiting) {
		cw := m.weight(m.waiting[n].req)
		if n > 0 && m.maxWeight > 0 && w+cw > m.maxWeight {
			break
		}
		w += cw
		n++
	}
	calls = m.waiting[:n:n]
	m.waiting = m.waiting[n:]
	if len(m.waiting) == 0 {
		m.waiting = nil // let the array go
	}
	return calls, m.closed && len(m.waiting) == 0
}

// runCalls runs calls as one merged call and hands each its result (or
// the panic of run).
func (m *Merger[Req, Res]) runCalls(calls []*mergeCall[Req, Res]) {
	reqs := make([]Req, len(calls))
	for i, c := range calls {
		reqs[i] = c.req
	}
	defer func() {
		if r := recover(); r != nil {
			for _, c := range calls {
				c.panicked = r
				close(c.done)
			}
		}
	}()
	res := m.run(reqs)
	for i, c := range calls {
		c.res = res[i]
		close(c.done)
	}
}
