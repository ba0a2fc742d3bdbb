package evm

import (
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// slowSealer records when each Commit began and takes seal to return.
type slowSealer struct {
	seal time.Duration
	mu   sync.Mutex
	at   []time.Time
}

func (s *slowSealer) Commit() common.Hash {
	s.mu.Lock()
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
	time.Sleep(s.seal)
	return common.Hash{}
}

// TestBlockTickerKeepsCadence: blocks are sealed a period apart on the
// clock, however long a seal takes within the period (go-ethereum's own
// loop waited a full period after each seal: period + seal apart), and
// Stop ends the loop.
func TestBlockTickerKeepsCadence(t *testing.T) {
	const period, seal = 300 * time.Millisecond, 120 * time.Millisecond
	s := &slowSealer{seal: seal}
	b := newBlockTicker(s, period)
	began := time.Now()
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5*period + period/2)
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	at := append([]time.Time(nil), s.at...)
	s.mu.Unlock()
	if len(at) < 5 {
		t.Fatalf("%d seals in %v, want 6", len(at), 5*period+period/2)
	}
	// Seal k begins k periods after the start (k = 0 at once); the old
	// loop's would begin k × (period + seal) after it.
	for k, when := range at {
		want := time.Duration(k) * period
		if off := when.Sub(began) - want; off < -period/4 || off > period/4 {
			t.Errorf("seal %d began %v after the start, want %v", k, when.Sub(began), want)
		}
	}
	n := len(at)
	time.Sleep(2 * period)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.at) != n {
		t.Fatalf("%d seals after Stop", len(s.at)-n)
	}
}
