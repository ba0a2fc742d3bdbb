package prom

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/txengine/txengine/engine"
)

// TestNonceHealthSeries: an account's nonce health sets its chain nonce,
// lowest nonce in flight and stuck blocks, and the network's doctor
// threshold; the lowest disappears when nothing is in flight, the chain
// nonce stays at its last read; repairs count by kind from zero; accounts
// beyond the cap have no nonce series.
func TestNonceHealthSeries(t *testing.T) {
	m, reg := newTest(t, Config{MaxAccounts: 1})
	a := testAccount
	id, addr := a.ID, a.Address.Hex()
	lowest, since := uint64(7), uint64(100)
	m.NonceHealth(a, "dev", engine.NonceHealth{ChainNonce: 5, ChainKnown: true, NextNonce: 9, NextKnown: true,
		LowestInFlight: &lowest, StuckSince: &since, StuckBlocks: 21, DoctorBlocks: 15})
	for name, want := range map[string]float64{"chain": 5, "lowest": 7, "stuck": 21, "doctor": 15, "gap": 0, "next": 0} {
		var got float64
		switch name {
		case "chain":
			got = testutil.ToFloat64(m.nonces.chainNonce.WithLabelValues(id, addr, "dev"))
		case "lowest":
			got = testutil.ToFloat64(m.nonces.lowest.WithLabelValues(id, addr, "dev"))
		case "stuck":
			got = testutil.ToFloat64(m.nonces.stuck.WithLabelValues(id, addr, "dev"))
		case "doctor":
			got = testutil.ToFloat64(m.nonces.doctorBlocks.WithLabelValues("dev"))
		case "gap":
			got = testutil.ToFloat64(m.nonces.repairs.WithLabelValues(id, addr, "dev", engine.NonceRepairGapFilled))
		case "next":
			got = testutil.ToFloat64(m.nonces.repairs.WithLabelValues(id, addr, "dev", engine.NonceRepairNextResynced))
		}
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	m.NonceRepaired(a, "dev", engine.NonceRepairGapFilled)
	m.NonceRepaired(a, "dev", engine.NonceRepairGapFilled)
	if v := testutil.ToFloat64(m.nonces.repairs.WithLabelValues(id, addr, "dev", engine.NonceRepairGapFilled)); v != 2 {
		t.Errorf("gap_filled repairs = %v, want 2", v)
	}
	// Nothing in flight, no check since: the lowest goes, stuck is 0, the
	// chain nonce stays.
	m.NonceHealth(a, "dev", engine.NonceHealth{DoctorBlocks: 15})
	if n := testutil.CollectAndCount(reg, "txengine_account_lowest_nonce_in_flight"); n != 0 {
		t.Errorf("lowest nonce series: %d, want none", n)
	}
	if v := testutil.ToFloat64(m.nonces.stuck.WithLabelValues(id, addr, "dev")); v != 0 {
		t.Errorf("stuck = %v, want 0", v)
	}
	if v := testutil.ToFloat64(m.nonces.chainNonce.WithLabelValues(id, addr, "dev")); v != 5 {
		t.Errorf("chain nonce = %v, want 5 (the last read)", v)
	}
	// Beyond the cap: no nonce series; repairs under "other".
	m.NonceHealth(numbered(1), "dev", engine.NonceHealth{ChainNonce: 1, ChainKnown: true, LowestInFlight: &lowest, StuckBlocks: 3, DoctorBlocks: 15})
	m.NonceRepaired(numbered(1), "dev", engine.NonceRepairNextResynced)
	if n := testutil.CollectAndCount(reg, "txengine_account_nonce_stuck_blocks"); n != 1 {
		t.Errorf("stuck series: %d, want 1 (the tracked account)", n)
	}
	if v := testutil.ToFloat64(m.nonces.repairs.WithLabelValues(OtherAccount, OtherAccount, "dev", engine.NonceRepairNextResynced)); v != 1 {
		t.Errorf("other's next_resynced = %v, want 1", v)
	}
}
