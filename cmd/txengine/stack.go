package main

import (
	"log/slog"
	"time"
)

// stack holds the stop functions of what serve started, in the order it
// started them; stop runs them in reverse order. The one owner of
// shutdown order: a step pushes its stop as soon as it has something to
// stop.
type stack struct {
	stops []func()
}

// push adds stop (nil: nothing to stop).
func (s *stack) push(stop func()) {
	if stop != nil {
		s.stops = append(s.stops, stop)
	}
}

// stop runs the stops, the last pushed first, once.
func (s *stack) stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
	s.stops = nil
}

// closing returns a stop that calls close, logging its error as
// "closing <what>" and the time it took as "<what> closed".
func closing(log *slog.Logger, what string, close func() error) func() {
	return func() {
		began := time.Now()
		if err := close(); err != nil {
			log.Error("closing "+what, "err", err)
		}
		log.Info(what+" closed", "took", time.Since(began))
	}
}
