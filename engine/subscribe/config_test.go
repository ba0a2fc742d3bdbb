package subscribe

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// TestDefault: the documented defaults, which validate, are what a zero
// Config takes; a negative field is refused with its name, by Validate
// and by NewProcessor (which took the default for it before).
func TestDefault(t *testing.T) {
	d := Default()
	if err := d.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	want := Config{Range: 500, MaxSteps: 8, BackfillBudget: 2 * time.Second, NearBlocks: 64, GroupBackoff: time.Second,
		MaxGroupBackoff: 2 * time.Minute, RetractChunk: 1000, KeepBlocks: 256, CheckpointBlocks: 100}
	if d != want {
		t.Errorf("Default() = %+v, want %+v", d, want)
	}
	if got := (Config{}).withDefaults(); got != d {
		t.Errorf("Config{}.withDefaults() = %+v, want %+v", got, d)
	}
	if got := (Config{GroupBackoff: 5 * time.Minute}).withDefaults(); got.MaxGroupBackoff != 5*time.Minute || got.Range != d.Range {
		t.Errorf("a GroupBackoff above the default MaxGroupBackoff: %+v", got)
	}
	net := &engine.Network{Name: "dev"}
	for want, c := range map[string]Config{
		"MaxSteps: must not be negative": {MaxSteps: -1},
		"BackfillBudget:":                {BackfillBudget: -time.Second},
		"GroupBackoff:":                  {GroupBackoff: -time.Second},
		"MaxGroupBackoff:":               {MaxGroupBackoff: -time.Second},
		"RetractChunk:":                  {RetractChunk: -1},
	} {
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q...", err, want)
		}
		if _, err := NewProcessor(net, nil, nil, c, nil, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewProcessor() = %v, want %q", err, want)
		}
	}
}
