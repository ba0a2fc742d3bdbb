package callbacks

import (
	"testing"
	"time"
)

// TestWithDefaults: zero fields take Default's values, the Dispatcher's
// Clock and StoreTimeout (which the actor uses for its own store calls)
// included; set ones are kept.
func TestWithDefaults(t *testing.T) {
	d, got := Default(), Config{}.withDefaults()
	if got.PollInterval != d.PollInterval || got.CloseGrace != d.CloseGrace || got.Retention != d.Retention ||
		got.PruneEvery != d.PruneEvery || got.PruneBatch != d.PruneBatch ||
		got.Dispatcher.Clock != d.Dispatcher.Clock || got.Dispatcher.StoreTimeout != d.Dispatcher.StoreTimeout {
		t.Errorf("Config{}.withDefaults() = %+v, want Default's values %+v", got, d)
	}
	set := Config{PruneBatch: 7}
	set.Dispatcher.StoreTimeout = time.Second
	if got := set.withDefaults(); got.PruneBatch != 7 || got.Dispatcher.StoreTimeout != time.Second {
		t.Errorf("set fields were overwritten: %+v", got)
	}
}
