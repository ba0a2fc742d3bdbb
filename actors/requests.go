package actors

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// requestQueue runs cluster requests (wake a grain, fund an account) off
// the actors' threads: work is keyed, so a key already waiting is not
// queued twice (its latest request wins); a failed request is retried after
// a pause until it succeeds or the queue closes. Its workers are owned by
// the queue and stop on close.
type requestQueue struct {
	log   *slog.Logger
	pause time.Duration

	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string]func(context.Context) error
	order   []string
	closed  bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newRequestQueue(workers int, log *slog.Logger) *requestQueue {
	q := &requestQueue{log: log, pause: 500 * time.Millisecond, pending: map[string]func(context.Context) error{}}
	q.cond = sync.NewCond(&q.mu)
	q.ctx, q.cancel = context.WithCancel(context.Background())
	for range workers {
		q.wg.Add(1)
		go q.work()
	}
	return q
}

// add queues run under key, replacing a run of the same key still waiting.
func (q *requestQueue) add(key string, run func(context.Context) error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if _, ok := q.pending[key]; !ok {
		q.order = append(q.order, key)
	}
	q.pending[key] = run
	q.cond.Signal()
}

// len returns how many requests wait.
func (q *requestQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order)
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
		run := q.pending[key]
		delete(q.pending, key)
		q.mu.Unlock()

		if err := run(q.ctx); err != nil {
			q.log.Warn("cluster request failed; retrying", "key", key, "err", err, "retry_in", q.pause)
			select {
			case <-q.ctx.Done():
				return
			case <-time.After(q.pause):
			}
			q.mu.Lock()
			if _, ok := q.pending[key]; !ok && !q.closed {
				q.pending[key] = run
				q.order = append(q.order, key)
				q.cond.Signal()
			}
			q.mu.Unlock()
		}
	}
}

// close stops the workers; requests still waiting are dropped (the holder
// of each network lease wakes accounts with pending work periodically).
func (q *requestQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
	q.cancel()
	q.wg.Wait()
}

// drain waits until no request is waiting, at most for timeout.
func (q *requestQueue) drain(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for q.len() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}
