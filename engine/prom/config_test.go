package prom

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDefault: a zero Config takes Default's values (1,000 accounts with
// their own series, time.Now); a negative MaxAccounts is kept (no account
// has its own series), and New builds the collectors of either.
func TestDefault(t *testing.T) {
	d := Default()
	got := Config{}.withDefaults()
	if d.MaxAccounts != 1000 || got.MaxAccounts != d.MaxAccounts || got.Now == nil {
		t.Errorf("Default() = %+v, Config{}.withDefaults() = %+v", d, got)
	}
	if got := (Config{MaxAccounts: -1}).withDefaults(); got.MaxAccounts != -1 {
		t.Errorf("a negative MaxAccounts became %d", got.MaxAccounts)
	}
	for _, c := range []Config{{}, {MaxAccounts: -1}} {
		m, err := New(prometheus.NewRegistry(), c)
		if err != nil {
			t.Fatal(err)
		}
		if want := max(c.withDefaults().MaxAccounts, 0); m.maxAccounts != want {
			t.Errorf("New(%+v): maxAccounts %d, want %d", c, m.maxAccounts, want)
		}
	}
}
