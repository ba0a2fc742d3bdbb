package indexer

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// TestDefault: Default validates; zero settings take its values (Interval
// the network's PollInterval, at least Default's 100 ms); a negative
// setting is refused with its name, by Validate and by Props (which took
// the default for it before).
func TestDefault(t *testing.T) {
	d := Default()
	if err := d.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	if d.Interval != 100*time.Millisecond || d.PollTimeout != time.Minute || d.Indexer != engine.DefaultIndexerConfig() {
		t.Errorf("Default() = %+v", d)
	}
	for poll, want := range map[time.Duration]time.Duration{0: d.Interval, 10 * time.Millisecond: d.Interval, 3 * time.Second: 3 * time.Second} {
		got := Config{Network: &engine.Network{PollInterval: poll}}.withDefaults()
		if got.Interval != want || got.PollTimeout != d.PollTimeout {
			t.Errorf("PollInterval %s: withDefaults() = %+v, want Interval %s", poll, got, want)
		}
	}
	net := &engine.Network{Name: "dev", Chain: headChain{}}
	for want, c := range map[string]Config{
		"indexer config: Interval: must not be negative": {Interval: -time.Second},
		"indexer config: PollTimeout:":                   {PollTimeout: -time.Second},
		"indexer config: Indexer: MaxCalls:":             {Indexer: engine.IndexerConfig{MaxCalls: -1}},
	} {
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q...", err, want)
		}
		c.Network, c.Log = net, slog.New(slog.DiscardHandler)
		if _, err := Props(c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Props() = %v, want %q", err, want)
		}
	}
}
