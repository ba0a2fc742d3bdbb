package actors_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/actors"
)

// TestConfigValidate: Default validates; a negative setting, the actor
// system's or its callback dispatcher's, is refused with its name, and
// Start refuses it before starting anything.
func TestConfigValidate(t *testing.T) {
	if err := actors.Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	if err := (actors.Config{}).Validate(); err != nil {
		t.Fatalf("Config{}.Validate() = %v: zero settings take the defaults", err)
	}
	for want, mutate := range map[string]func(*actors.Config){
		"actors config: IdleAccount: must not be negative":           func(c *actors.Config) { c.IdleAccount = -time.Second },
		"actors config: MaxBatch:":                                   func(c *actors.Config) { c.MaxBatch = -1 },
		"actors config: SubmitTimeout:":                              func(c *actors.Config) { c.SubmitTimeout = -time.Second },
		"actors config: CheckInFlight:":                              func(c *actors.Config) { c.CheckInFlight = -time.Second },
		"actors config: Callbacks: PruneBatch: must not be negative": func(c *actors.Config) { c.Callbacks.PruneBatch = -1 },
		"actors config: Callbacks: Dispatcher.Timeout:":              func(c *actors.Config) { c.Callbacks.Dispatcher.Timeout = -time.Second },
	} {
		c := actors.Default()
		mutate(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q...", err, want)
		}
		if sys, err := actors.Start(context.Background(), c); err == nil || !strings.HasPrefix(err.Error(), want) {
			if sys != nil {
				sys.Close()
			}
			t.Errorf("Start() = %v, want %q...", err, want)
		}
	}
}
