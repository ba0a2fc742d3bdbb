package actors

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/txengine/txengine/engine"
)

// finalError marks a cluster request's failure that trying again cannot
// change (the grain answered, with an error): the queue drops the request.
type finalError struct{ err error }

func (e finalError) Error() string { return e.err.Error() }
func (e finalError) Unwrap() error { return e.err }

// final marks err as final for the request queue.
func final(err error) error { return finalError{err} }

// requestQueue runs cluster requests (wake a grain, fund an account) off
// the actors' threads: work is keyed, so a key already waiting is not
// queued twice (its latest request wins). A request that fails for good
// (a final error) is dropped with an error log; one that fails otherwise is
// tried again after a pause that doubles from retry.Initial to retry.Max,
// at most maxAttempts times in all, then dropped with an error log. A
// request waiting for its retry holds no worker: a timer queues it again.
// Its workers are owned by the queue and stop on close.
type requestQueue struct {
	log         *slog.Logger
	retry       engine.Backoff
	maxAttempts int

	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string]*request
	order   []string
	// backoff holds the requests waiting for their retry, by key.
	backoff map[string]*retrying
	closed  bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// request is a queued run and how many times its key failed in a row.
type request struct {
	run      func(context.Context) error
	attempts int
}

// retrying is a request waiting for its timer.
type retrying struct {
	req   *request
	timer *time.Timer
}

func newRequestQueue(workers int, log *slog.Logger) *requestQueue {
	q := &requestQueue{
		log: log, retry: engine.Backoff{Initial: 500 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.2}, maxAttempts: 10,
		pending: map[string]*request{}, backoff: map[string]*retrying{},
	}
	q.cond = sync.NewCond(&q.mu)
	q.ctx, q.cancel = context.WithCancel(context.Background())
	for range workers {
		q.wg.Add(1)
		go q.work()
	}
	return q
}

// add queues run under key, replacing a run of the same key still waiting
// (in the queue or for its retry: a key that keeps failing is not tried
// sooner because it is asked for again).
func (q *requestQueue) add(key string, run func(context.Context) error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if r, ok := q.backoff[key]; ok {
		r.req.run = run
		return
	}
	if p, ok := q.pending[key]; ok {
		p.run = run
		return
	}
	q.pending[key] = &request{run: run}
	q.order = append(q.order, key)
	q.cond.Signal()
}

func (q *requestQueue) work() {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		for len(q.order) == 0 && !q.closed {
			q.cond.Wait()
		}
		if q.closed {
			q.mu.Unlock()
			return
		}
		key := q.order[0]
		q.order = q.order[1:]
		req := q.pending[key]
		delete(q.pending, key)
		q.mu.Unlock()

		if err := req.run(q.ctx); err != nil {
			q.failed(key, req, err)
		}
	}
}

// failed drops req or schedules its retry.
func (q *requestQueue) failed(key string, req *request, err error) {
	req.attempts++
	var fin finalError
	switch {
	case q.ctx.Err() != nil:
		return // closing
	case errors.As(err, &fin):
		q.log.Error("cluster request failed for good; dropped", "key", key, "err", err, "attempts", req.attempts)
		return
	case req.attempts >= q.maxAttempts:
		q.log.Error("cluster request still failing; dropped", "key", key, "err", err, "attempts", req.attempts)
		return
	}
	wait := q.retry.Wait(req.attempts, rand.Float64())
	q.log.Warn("cluster request failed; retrying", "key", key, "err", err, "attempts", req.attempts, "retry_in", wait)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if p, ok := q.pending[key]; ok {
		// Asked for again while it ran: the newer run waits out the pause.
		q.order = without(q.order, key)
		delete(q.pending, key)
		req.run = p.run
	}
	r := &retrying{req: req}
	r.timer = time.AfterFunc(wait, func() { q.requeue(key, r) })
	q.backoff[key] = r
}

// requeue puts a request whose pause ended back in the queue.
func (q *requestQueue) requeue(key string, r *retrying) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.backoff[key] != r {
		return
	}
	delete(q.backoff, key)
	q.pending[key] = r.req
	q.order = append(q.order, key)
	q.cond.Signal()
}

func without(keys []string, key string) []string {
	out := keys[:0]
	for _, k := range keys {
		if k != key {
			out = append(out, k)
		}
	}
	return out
}

// close stops the workers and the retry timers; requests still waiting are
// dropped (the holder of each network lease wakes accounts with pending
// work periodically).
func (q *requestQueue) close() {
	q.mu.Lock()
	q.closed = true
	for _, r := range q.backoff {
		r.timer.Stop()
	}
	q.cond.Broadcast()
	q.mu.Unlock()
	q.cancel()
	q.wg.Wait()
}

// drain waits until no request is queued, at most for timeout (requests
// waiting for a retry are not waited for).
func (q *requestQueue) drain(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for q.queued() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// queued returns how many requests are queued for a worker.
func (q *requestQueue) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order)
}
