package engine

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
)

// refusalMetrics records the capacity refusals counted per pool.
type refusalMetrics struct {
	NopMetrics
	NopPoolMetrics
	mu      sync.Mutex
	refused map[string]int
}

func (m *refusalMetrics) PoolRefused(pool, network string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refused[pool+"/"+network]++
}

// TestSenderCountsPoolMembersRefusals: when the node refuses a batch for
// capacity (txpool is full), each refused transaction sent through a pool
// counts one refusal for its pool and network; the others count none; the
// window halves once.
func TestSenderCountsPoolMembersRefusals(t *testing.T) {
	chain := &fakeChain{send: func(*types.Transaction) error { return errors.New("txpool is full") }}
	s, store := windowSender(t, chain, 4, 10)
	m := &refusalMetrics{refused: map[string]int{}}
	s.SetMetrics(m)
	store.txs["t000"].PoolID = "p1"
	store.txs["t002"].PoolID = "p1"
	store.txs["t003"].PoolID = "p2"
	s.net.ObserveHead(1)
	if _, err := s.Pump(context.Background()); !errors.Is(err, ErrNodeBusy) {
		t.Fatalf("pump against a full pool: %v, want ErrNodeBusy", err)
	}
	want := map[string]int{"p1/dev": 2, "p2/dev": 1}
	if len(m.refused) != len(want) || m.refused["p1/dev"] != 2 || m.refused["p2/dev"] != 1 {
		t.Fatalf("refusals counted per pool: %v, want %v (t001 has no pool)", m.refused, want)
	}
	if s.window.size != 2 {
		t.Fatalf("window after the refusals: %d, want 2 (4 halved once per head)", s.window.size)
	}
}
