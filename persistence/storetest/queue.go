package storetest

import (
	"testing"

	"github.com/txengine/txengine/engine"
)

// testCountQueued checks the queue depth count: new and waiting
// transactions of one account on one network, not submitted ones, not
// other networks'.
func testCountQueued(t *testing.T, s engine.Store) {
	qc, ok := s.(engine.QueueCounter)
	if !ok {
		t.Fatalf("%T does not implement engine.QueueCounter", s)
	}
	f := newFixture(t, s)
	count := func() int {
		t.Helper()
		n, err := qc.CountQueued(ctxOf(t), f.account.ID, "dev")
		must(t, err)
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("empty queue: %d", n)
	}
	a, b, c := f.tx("dev", 1), f.tx("dev", 2), f.tx("dev", 3)
	insert(t, s, a, b, c, f.tx("other", 4))
	if n := count(); n != 3 {
		t.Fatalf("after three: %d, want 3", n)
	}
	submit(t, s, a, 0)
	if n := count(); n != 2 {
		t.Fatalf("after one submitted: %d, want 2", n)
	}
}
