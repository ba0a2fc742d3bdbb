package callbacks_test

import (
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/actors/callbacks"
	"github.com/txengine/txengine/engine"
)

// TestDefault: the documented defaults, which validate; a negative field
// is refused with its name.
func TestDefault(t *testing.T) {
	d := callbacks.Default()
	if err := d.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	if d.PollInterval != 200*time.Millisecond || d.CloseGrace != 5*time.Second || d.Retention != engine.DefaultRetention ||
		d.PruneEvery != 10*time.Minute || d.PruneBatch != 1000 || d.Dispatcher.Clock == nil ||
		d.Dispatcher.Concurrency != engine.DefaultDispatcherConfig().Concurrency {
		t.Errorf("Default() = %+v", d)
	}
	for want, mutate := range map[string]func(*callbacks.Config){
		"PollInterval: must not be negative":       func(c *callbacks.Config) { c.PollInterval = -1 },
		"CloseGrace:":                              func(c *callbacks.Config) { c.CloseGrace = -1 },
		"Retention:":                               func(c *callbacks.Config) { c.Retention = -1 },
		"PruneEvery:":                              func(c *callbacks.Config) { c.PruneEvery = -1 },
		"Dispatcher.Concurrency:":                  func(c *callbacks.Config) { c.Dispatcher.Concurrency = -1 },
		"Dispatcher.StoreTimeout: must not be neg": func(c *callbacks.Config) { c.Dispatcher.StoreTimeout = -1 },
	} {
		c := callbacks.Default()
		mutate(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q...", err, want)
		}
	}
}
