package evm

import (
	"context"
	"errors"
	"math/big"
	"sync"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/internal/gethtest"
)

// fakeSub is a subscription the test ends with fail.
type fakeSub struct {
	errc chan error
	once sync.Once
}

func (s *fakeSub) Unsubscribe()      { s.once.Do(func() { close(s.errc) }) }
func (s *fakeSub) Err() <-chan error { return s.errc }

// fakeNode hands out connections; while down, dialling fails.
type fakeNode struct {
	mu     sync.Mutex
	down   bool
	dials  []time.Time
	heads  chan<- *types.Header
	sub    *fakeSub
	closed int
}

func (n *fakeNode) dial(context.Context) (HeadSubscriber, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dials = append(n.dials, time.Now())
	if n.down {
		return nil, errors.New("connection refused")
	}
	return fakeConn{n}, nil
}

type fakeConn struct{ n *fakeNode }

func (c fakeConn) SubscribeNewHead(_ context.Context, ch chan<- *types.Header) (ethereum.Subscription, error) {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	c.n.heads, c.n.sub = ch, &fakeSub{errc: make(chan error, 1)}
	return c.n.sub, nil
}
func (c fakeConn) Close() { c.n.mu.Lock(); c.n.closed++; c.n.mu.Unlock() }

// crash ends the current subscription with an error and refuses new dials.
func (n *fakeNode) crash() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down = true
	n.sub.errc <- errors.New("connection reset")
}

func (n *fakeNode) head(num int64) {
	n.mu.Lock()
	ch := n.heads
	n.mu.Unlock()
	ch <- &types.Header{Number: big.NewInt(num)}
}

func (n *fakeNode) state() (dials, closed int, down bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.dials), n.closed, n.down
}

func waitWake(t *testing.T, h *HeadSource, within time.Duration) {
	t.Helper()
	select {
	case <-h.C():
	case <-time.After(within):
		t.Fatalf("no wake-up within %s", within)
	}
}

func noWake(t *testing.T, h *HeadSource, during time.Duration) {
	t.Helper()
	select {
	case <-h.C():
		t.Fatal("unexpected wake-up")
	case <-time.After(during):
	}
}

func TestHeadSourceCoalescesAndReconnectsWithBackoff(t *testing.T) {
	node := &fakeNode{}
	h := NewHeadSource(HeadSourceConfig{Dial: node.dial, MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond})
	h.Start(context.Background())
	defer h.Close()

	waitWake(t, h, time.Second) // subscribed: catch up
	if up, _ := h.Connected(); !up {
		t.Fatal("not connected after the first wake-up")
	}
	// Many heads while nobody reads: one wake-up, and the source is not blocked.
	for i := int64(1); i <= 20; i++ {
		node.head(i)
	}
	time.Sleep(50 * time.Millisecond) // let the source forward all 20
	waitWake(t, h, time.Second)
	noWake(t, h, 50*time.Millisecond)

	node.crash()
	time.Sleep(300 * time.Millisecond)
	dials, _, _ := node.state()
	if up, err := h.Connected(); up || err == nil {
		t.Fatalf("Connected() = %v, %v while the node is down", up, err)
	}
	// 10, 20, 40, 40... ms: about 8 attempts in 300 ms; without the cap it
	// would be 5, without backoff hundreds.
	if dials < 5 || dials > 15 {
		t.Fatalf("%d dials in 300ms of outage, want a capped exponential backoff", dials)
	}
	node.mu.Lock()
	gaps := make([]time.Duration, 0, len(node.dials))
	for i := 2; i < len(node.dials); i++ {
		gaps = append(gaps, node.dials[i].Sub(node.dials[i-1]))
	}
	node.down = false
	node.mu.Unlock()
	if gaps[0] < 10*time.Millisecond || gaps[len(gaps)-1] < 40*time.Millisecond || gaps[len(gaps)-1] > 200*time.Millisecond {
		t.Fatalf("gaps between attempts %v: want from 10ms doubling up to 40ms", gaps)
	}
	waitWake(t, h, time.Second) // re-subscribed: catch up
	if up, _ := h.Connected(); !up {
		t.Fatal("not connected after reconnecting")
	}
	node.head(21)
	waitWake(t, h, time.Second)

	h.Close()
	h.Close() // idempotent
	// Both connections that were established (first and reconnect) are closed.
	if _, closed, _ := node.state(); closed != 2 {
		t.Fatalf("closed %d connections, want 2", closed)
	}
}

// TestHeadSourceGethOutage runs a HeadSource against geth, stops geth and
// restarts it: wake-ups stop, then resume after the restart.
func TestHeadSourceGethOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs geth")
	}
	node := gethtest.Start(t)
	h := NewHeadSource(HeadSourceConfig{URL: node.WSURL, MaxBackoff: time.Second})
	h.Start(context.Background())
	defer h.Close()
	waitWake(t, h, 5*time.Second)
	waitWake(t, h, 5*time.Second) // a new block (period 1s)

	node.Stop()
	time.Sleep(300 * time.Millisecond)
	if up, err := h.Connected(); up || err == nil {
		t.Fatalf("Connected() = %v, %v after geth stopped", up, err)
	}
	// Drain a wake-up that raced with the stop; then nothing while down.
	select {
	case <-h.C():
	default:
	}
	noWake(t, h, 2*time.Second)

	start := time.Now()
	node.Restart()
	restarted := time.Since(start)
	waitWake(t, h, 5*time.Second)
	t.Logf("geth restart took %s; first wake-up %s after the restart began", restarted, time.Since(start))
	if up, _ := h.Connected(); !up {
		t.Fatal("not connected after geth restarted")
	}
	// Heads flow again: the chain moves on and the source reports it.
	c, err := Dial(context.Background(), node.HTTPURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before, err := c.BlockNumber(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waitWake(t, h, 5*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for {
		now, err := c.BlockNumber(context.Background())
		if err == nil && now > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chain did not advance after restart (head %d)", before)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
