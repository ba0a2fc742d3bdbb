package main

import (
	"testing"

	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine/evm"
)

// TestDevPoolSlotsAgree: dev.inFlight and the embedded chain's window are
// bounded by what its pool guarantees each account; a window above it
// would send transactions the pool may drop.
func TestDevPoolSlotsAgree(t *testing.T) {
	if config.DevPoolSlots != evm.DevPoolAccountSlots {
		t.Fatalf("config.DevPoolSlots = %d, evm.DevPoolAccountSlots = %d", config.DevPoolSlots, evm.DevPoolAccountSlots)
	}
	cfg := config.Default()
	cfg.Dev.InFlight = config.DevPoolSlots + 1
	if err := cfg.Validate(); err == nil {
		t.Fatalf("dev.inFlight %d accepted", cfg.Dev.InFlight)
	}
}
