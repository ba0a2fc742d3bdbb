package http

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// readBatchMax bounds the keys of one merged read.
const readBatchMax = 512

// readBatch merges the point reads of concurrent requests into one read of
// many keys, the way a group commit merges commits: a request that finds
// no read running reads its key at once, alone (no latency added when
// idle); the requests that arrive while a read runs wait, and the first of
// them then reads all their keys in one statement. Under a burst of
// transfers this turns the read of each request's Idempotency-Key (one
// statement per transfer, the statement most run in make bench-cluster)
// into one statement per batch.
//
// No goroutine of its own: each merged read runs on the goroutine of one
// of the requests it serves, so there is nothing to stop. Its zero value
// is not usable: set read and timeout.
type readBatch[K comparable, V any] struct {
	// read returns the values of the keys that exist (absent: not found).
	read func(ctx context.Context, keys []K) (map[K]V, error)
	// timeout bounds a merged read. It runs detached from the context of
	// the request that runs it: the other requests of the batch must not
	// fail because that one's client went away.
	timeout time.Duration

	mu      sync.Mutex
	busy    bool // a read runs
	waiting []*readCall[K, V]
}

// readCall is one request's read and where its result goes.
type readCall[K comparable, V any] struct {
	key   K
	v     V
	found bool
	err   error
	// batch is set on the call that must run the next merged read (the
	// first of those that waited): the calls that read serves.
	batch []*readCall[K, V]
	done  chan struct{}
}

// get returns the value of key, found false when it does not exist.
func (b *readBatch[K, V]) get(ctx context.Context, key K) (V, bool, error) {
	c := &readCall[K, V]{key: key, done: make(chan struct{})}
	b.mu.Lock()
	if b.busy {
		b.waiting = append(b.waiting, c)
		b.mu.Unlock()
		<-c.done
		if c.batch == nil {
			return c.v, c.found, c.err
		}
	} else {
		b.busy = true
		b.mu.Unlock()
		c.batch = []*readCall[K, V]{c}
	}
	b.run(ctx, c)
	return c.v, c.found, c.err
}

// run reads the keys of lead.batch, hands each call its result and the
// calls that waited meanwhile to the next reader. A panic of read reaches
// every call of the batch as an error, and lead's caller as the panic.
func (b *readBatch[K, V]) run(ctx context.Context, lead *readCall[K, V]) {
	calls := lead.batch
	var (
		got map[K]V
		err error
	)
	defer func() {
		r := recover()
		if r != nil {
			err = fmt.Errorf("merged read panicked: %v", r)
		}
		for _, c := range calls {
			c.v, c.found = got[c.key]
			c.err = err
		}
		b.handOver()
		for _, c := range calls {
			if c != lead {
				close(c.done)
			}
		}
		if r != nil {
			panic(r)
		}
	}()
	keys := make([]K, 0, len(calls))
	seen := make(map[K]bool, len(calls))
	for _, c := range calls {
		if !seen[c.key] {
			seen[c.key] = true
			keys = append(keys, c.key)
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.timeout)
	defer cancel()
	got, err = b.read(rctx, keys)
}

// handOver makes the first of the waiting calls (up to readBatchMax of
// them) the next batch and wakes its first to read it; with none waiting,
// the next call reads at once.
func (b *readBatch[K, V]) handOver() {
	b.mu.Lock()
	n := min(len(b.waiting), readBatchMax)
	next := b.waiting[:n:n]
	b.waiting = b.waiting[n:]
	if len(b.waiting) == 0 {
		b.waiting = nil
	}
	b.busy = n > 0
	b.mu.Unlock()
	if n > 0 {
		next[0].batch = next
		close(next[0].done)
	}
}
