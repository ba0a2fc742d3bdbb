package watcher

import (
	"testing"
	"time"
)

// TestDefault: Default (30 s for the conditions) validates and is what a
// zero ConditionsTimeout takes; a negative one is refused with its name.
func TestDefault(t *testing.T) {
	d := Default()
	if err := d.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	if d.ConditionsTimeout != 30*time.Second {
		t.Errorf("Default() = %+v", d)
	}
	if got := (Config{}).withDefaults(); got.ConditionsTimeout != d.ConditionsTimeout {
		t.Errorf("Config{}.withDefaults() = %+v", got)
	}
	if got := (Config{ConditionsTimeout: time.Second}).withDefaults(); got.ConditionsTimeout != time.Second {
		t.Errorf("a set ConditionsTimeout was overwritten: %+v", got)
	}
	want := "watcher config: ConditionsTimeout: must not be negative"
	if err := (Config{ConditionsTimeout: -1}).Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want %q", err, want)
	}
}
