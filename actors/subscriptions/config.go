package subscriptions

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/txengine/txengine/engine/subscribe"
)

// Default returns the defaults of a subscriptions actor: a safety poll at
// least every second (SafetyPollFactor times the network's PollInterval
// when longer), subscribe.Default for the processor. The collaborators
// (Network, Store, Clock, Log, Observe) have no default; a nil Log
// discards.
func Default() Config {
	return Config{Interval: time.Second, Processor: subscribe.Default()}
}

// withDefaults gives the zero (or negative) settings of c the values of
// Default: Interval SafetyPollFactor times the network's PollInterval, at
// least Default's; a nil Log one that discards. (The processor's are
// filled in by subscribe.NewProcessor.)
func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = max(SafetyPollFactor*c.Network.PollInterval, Default().Interval)
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate names the first setting of c out of range: a negative Interval
// (zero takes the default), and the processor's.
func (c Config) Validate() error {
	if c.Interval < 0 {
		return errors.New("subscriptions config: Interval: must not be negative")
	}
	if err := c.Processor.Validate(); err != nil {
		return fmt.Errorf("subscriptions config: Processor: %w", err)
	}
	return nil
}
