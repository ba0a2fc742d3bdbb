package http

import (
	"context"
	"time"

	"github.com/txengine/txengine/engine"
)

// readMergeMax bounds the keys of one merged read.
const readMergeMax = 512

// readResult is one key's part of a merged read.
type readResult[V any] struct {
	v     V
	found bool
	err   error
}

// readMerger merges the point reads of concurrent requests into one read
// of many keys with engine.Merger, the mechanism the submit stage's reads
// use: idle, a read runs at once, alone; under a burst the reads that wait
// while one runs go together in the next. It turns the read of each
// request's Idempotency-Key (one statement per transfer, the statement most
// run in make bench-cluster) into one statement per batch. A merged read
// runs under its own timeout, not a request's context: the other requests
// of the batch must not fail because one client went away.
type readMerger[K comparable, V any] = engine.Merger[K, readResult[V]]

// newReadMerger starts a readMerger over read, which returns the values of
// the keys that exist (absent: not found); Server.Close stops it.
func newReadMerger[K comparable, V any](read func(ctx context.Context, keys []K) (map[K]V, error), timeout time.Duration) *readMerger[K, V] {
	return engine.NewMerger(func(keys []K) []readResult[V] {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		got, err := read(ctx, keys)
		out := make([]readResult[V], len(keys))
		for i, k := range keys {
			v, found := got[k]
			out[i] = readResult[V]{v: v, found: found, err: err}
		}
		return out
	}, nil, readMergeMax)
}

// readOne returns the value of key through m, found false when it does not
// exist.
func readOne[K comparable, V any](m *readMerger[K, V], key K) (V, bool, error) {
	r, ok := m.Do(key)
	if !ok {
		return r.v, false, unavailable("the server is shutting down; retry on another node or later")
	}
	return r.v, r.found, r.err
}
