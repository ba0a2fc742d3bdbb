package check

import (
	"math/big"
	"strings"
	"testing"
)

func u(n uint64) *uint64 { return &n }

func fixture() ([]Sent, map[string]Observed, map[string]*big.Int) {
	sent := []Sent{
		{ID: "a", From: "S1", To: "R1", Value: big.NewInt(5)},
		{ID: "b", From: "S1", To: "R2", Value: big.NewInt(7)},
		{ID: "c", From: "S1", To: "R1", Value: big.NewInt(1)},
		{ID: "d", From: "S2", To: "R2", Value: big.NewInt(2)},
	}
	obs := map[string]Observed{
		"a": {Status: "completed", From: "S1", Nonce: u(10), Hash: "h1"},
		"b": {Status: "completed", From: "S1", Nonce: u(11), Hash: "h2"},
		"c": {Status: "completed", From: "S1", Nonce: u(12), Hash: "h3"},
		"d": {Status: "completed", From: "S2", Nonce: u(0), Hash: "h4"},
	}
	bal := map[string]*big.Int{"R1": big.NewInt(6), "R2": big.NewInt(9)}
	return sent, obs, bal
}

func TestRunAllGood(t *testing.T) {
	sent, obs, bal := fixture()
	v := Run(sent, obs, bal)
	if !v.OK || v.Completed != 4 || v.Senders != 2 || v.Recipients != 2 || len(v.Problems) != 0 {
		t.Fatalf("verdict = %+v", v)
	}
}

func TestRunDetectsEachProblem(t *testing.T) {
	cases := map[string]struct {
		mutate func([]Sent, map[string]Observed, map[string]*big.Int)
		check  func(Verdict) bool
		text   string
	}{
		"gap": {func(_ []Sent, o map[string]Observed, _ map[string]*big.Int) {
			o["c"] = Observed{Status: "completed", From: "S1", Nonce: u(14), Hash: "h3"}
		}, func(v Verdict) bool { return v.NonceGaps == 2 }, "nonce gaps"},
		"duplicate nonce": {func(_ []Sent, o map[string]Observed, _ map[string]*big.Int) {
			o["c"] = Observed{Status: "completed", From: "S1", Nonce: u(11), Hash: "h3"}
		}, func(v Verdict) bool { return v.NonceDuplicates == 1 }, "duplicates"},
		"duplicate hash": {func(_ []Sent, o map[string]Observed, _ map[string]*big.Int) {
			o["d"] = Observed{Status: "completed", From: "S2", Nonce: u(0), Hash: "h1"}
		}, func(v Verdict) bool { return v.HashDuplicates == 1 }, "share hash"},
		"failed": {func(_ []Sent, o map[string]Observed, b map[string]*big.Int) {
			o["d"] = Observed{Status: "failed", From: "S2", ErrorCode: "reverted"}
			b["R2"] = big.NewInt(7)
		}, func(v Verdict) bool { return v.Failed == 1 && v.BalanceMismatches == 0 }, "failed (reverted)"},
		"pending": {func(_ []Sent, o map[string]Observed, b map[string]*big.Int) {
			o["d"] = Observed{Status: "submitted", From: "S2", Nonce: u(0)}
			b["R2"] = big.NewInt(7)
		}, func(v Verdict) bool { return v.NotTerminal == 1 }, "still submitted"},
		"missing": {func(_ []Sent, o map[string]Observed, b map[string]*big.Int) {
			delete(o, "d")
			b["R2"] = big.NewInt(7)
		}, func(v Verdict) bool { return v.Missing == 1 }, "not found"},
		"balance": {func(_ []Sent, _ map[string]Observed, b map[string]*big.Int) {
			b["R1"] = big.NewInt(11) // a transfer applied twice
		}, func(v Verdict) bool { return v.BalanceMismatches == 1 }, "balance 11, want 6"},
		"unread balance": {func(_ []Sent, _ map[string]Observed, b map[string]*big.Int) {
			delete(b, "R2")
		}, func(v Verdict) bool { return v.BalanceMismatches == 1 }, "recipient R2"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			sent, obs, bal := fixture()
			c.mutate(sent, obs, bal)
			v := Run(sent, obs, bal)
			if v.OK || !c.check(v) {
				t.Fatalf("verdict = %+v", v)
			}
			if !strings.Contains(strings.Join(v.Problems, "\n"), c.text) {
				t.Errorf("problems %q lack %q", v.Problems, c.text)
			}
		})
	}
}

func TestRunWithoutBalances(t *testing.T) {
	sent, obs, _ := fixture()
	if v := Run(sent, obs, nil); !v.OK || v.Recipients != 0 {
		t.Fatalf("verdict = %+v", v)
	}
	if v := Run(nil, nil, nil); v.OK {
		t.Fatal("an empty run passed")
	}
}

func TestContiguity(t *testing.T) {
	for _, c := range []struct {
		in         []uint64
		gaps, dups int
	}{{nil, 0, 0}, {[]uint64{3}, 0, 0}, {[]uint64{5, 3, 4}, 0, 0}, {[]uint64{1, 4}, 2, 0}, {[]uint64{2, 2, 3, 3, 6}, 2, 2}} {
		g, d := Contiguity(c.in)
		if g != c.gaps || d != c.dups {
			t.Errorf("Contiguity(%v) = %d, %d; want %d, %d", c.in, g, d, c.gaps, c.dups)
		}
	}
}
