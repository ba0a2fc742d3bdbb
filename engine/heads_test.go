package engine

import (
	"context"
	"math/big"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
)

// slowHeads answers HeaderByNumber after a delay and counts the calls.
type slowHeads struct {
	*fakeChain
	calls atomic.Int32
	delay time.Duration
}

func (c *slowHeads) HeaderByNumber(ctx context.Context, n *big.Int) (*types.Header, error) {
	c.calls.Add(1)
	time.Sleep(c.delay)
	return c.fakeChain.HeaderByNumber(ctx, n)
}

// Callers that find the head stale at once share one read of the node's;
// within fresh, none reads it; after fresh, one reads it again.
func TestNetworkHeadSharesOneRead(t *testing.T) {
	chain := &slowHeads{fakeChain: &fakeChain{head: 42}, delay: 50 * time.Millisecond}
	n := &Network{Name: "dev", Chain: chain}
	var wg sync.WaitGroup
	heads := make([]uint64, 100)
	for i := range heads {
		wg.Go(func() {
			h, err := n.Head(context.Background(), time.Hour)
			if err != nil {
				t.Error(err)
			}
			heads[i] = h
		})
	}
	wg.Wait()
	if got := chain.calls.Load(); got != 1 {
		t.Fatalf("100 callers at once read the head %d times, want 1", got)
	}
	for i, h := range heads {
		if h != 42 {
			t.Fatalf("caller %d got head %d, want 42", i, h)
		}
	}
	if h, err := n.Head(context.Background(), time.Hour); err != nil || h != 42 || chain.calls.Load() != 1 {
		t.Fatalf("fresh head: %d, %v, %d reads; want 42 from the record", h, err, chain.calls.Load())
	}
	chain.head = 43
	if h, err := n.Head(context.Background(), time.Nanosecond); err != nil || h != 43 || chain.calls.Load() != 2 {
		t.Fatalf("stale head: %d, %v, %d reads; want 43 read again", h, err, chain.calls.Load())
	}
	// A caller whose context ends while another's read runs stops waiting;
	// the read still records the head.
	chain.head, chain.delay = 44, 200*time.Millisecond
	read := make(chan uint64)
	go func() {
		h, _ := n.Head(context.Background(), time.Nanosecond)
		read <- h
	}()
	for chain.calls.Load() != 3 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := n.Head(ctx, time.Nanosecond); err == nil || time.Since(start) > 150*time.Millisecond {
		t.Fatalf("a waiting caller whose context ended: %v after %v, want an error at once", err, time.Since(start))
	}
	if h := <-read; h != 44 || chain.calls.Load() != 3 {
		t.Fatalf("the read gave %d with %d reads, want 44 and 3", h, chain.calls.Load())
	}
	if h, _ := n.LastHead(); h != 44 {
		t.Fatalf("recorded head %d, want 44", h)
	}
}
