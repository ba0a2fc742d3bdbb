package subscriptions

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/subscribe"
)

// logChain is a node that reads logs (it is never called here).
type logChain struct{ engine.Node }

func (logChain) HeaderByNumber(context.Context, *big.Int) (*types.Header, error) { return nil, nil }
func (logChain) FilterLogs(context.Context, ethereum.FilterQuery) ([]types.Log, error) {
	return nil, nil
}

// TestDefault: Default validates; zero settings take its values (Interval
// SafetyPollFactor times the network's PollInterval, at least Default's
// 1 s; a discarding Log); a negative setting is refused with its name, by
// Validate and by Props (which took the default for it before).
func TestDefault(t *testing.T) {
	d := Default()
	if err := d.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	if d.Interval != time.Second || d.Processor != subscribe.Default() {
		t.Errorf("Default() = %+v", d)
	}
	for poll, want := range map[time.Duration]time.Duration{0: d.Interval, 50 * time.Millisecond: d.Interval, time.Second: SafetyPollFactor * time.Second} {
		got := Config{Network: &engine.Network{PollInterval: poll}}.withDefaults()
		if got.Interval != want || got.Log == nil {
			t.Errorf("PollInterval %s: withDefaults() = %+v, want Interval %s", poll, got, want)
		}
	}
	net := &engine.Network{Name: "dev", Chain: logChain{}}
	for want, c := range map[string]Config{
		"subscriptions config: Interval: must not be negative": {Interval: -time.Second},
		"subscriptions config: Processor: MaxSteps:":           {Processor: subscribe.Config{MaxSteps: -1}},
	} {
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q...", err, want)
		}
		c.Network = net
		if _, err := Props(c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Props() = %v, want %q", err, want)
		}
	}
}
