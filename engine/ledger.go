package engine

import (
	"context"
	"fmt"
	"time"
)

// inFlightLedger is what a Sender remembers of its in-flight transactions
// between pumps, for reconcileInFlight (replace.go), counted in blocks
// (never wall time): a 12 s chain with a deep confirmation depth keeps
// transactions in flight for minutes without anything being wrong with
// them.
type inFlightLedger struct {
	// checked is the head at the last check (0: none since the window
	// last emptied), since the head at the first look since then.
	checked, since uint64
	// chainNonce is the account's nonce on chain at the last check, and
	// moved the head at which it (or the lowest nonce in flight) last moved.
	chainNonce uint64
	lowest     uint64
	moved      uint64
	// sent and signed are the heads at which each in-flight transaction
	// was last broadcast and last signed; consumed the head at which its
	// nonce was first seen final on chain without it being settled.
	sent, signed, consumed map[string]uint64
	// checkNow asks the next Pump to check whatever the head (an operator
	// abandoned a transaction; a broadcast was refused).
	checkNow bool
	// checkedAt is when the last check was made (wall clock).
	checkedAt time.Time
}

// newInFlightLedger returns the ledger of a sender with nothing in flight.
func newInFlightLedger() inFlightLedger {
	return inFlightLedger{sent: map[string]uint64{}, signed: map[string]uint64{}, consumed: map[string]uint64{}}
}

// reset forgets everything: the window is empty.
func (c *inFlightLedger) reset() { *c = newInFlightLedger() }

// keepOnly forgets what it tracks of transactions not in inflight (mined,
// failed, released since): an account that always has something in
// flight would otherwise remember every transaction it ever sent.
func (c *inFlightLedger) keepOnly(inflight []*Transaction) {
	live := make(map[string]bool, len(inflight))
	for _, tx := range inflight {
		live[tx.ID] = true
	}
	for _, m := range []map[string]uint64{c.sent, c.signed, c.consumed} {
		for id := range m {
			if !live[id] {
				delete(m, id)
			}
		}
	}
}

// ledgerSlack is how many entries the ledger may hold beyond twice the number of
// transactions in flight before they are pruned between checks.
const ledgerSlack = 64

// pruneLedger bounds what the ledger holds when the checks do not come (the
// lowest nonce keeps moving, so nothing is stuck): once it holds more
// than twice the transactions in flight (count) and ledgerSlack, the ids no
// longer in flight are forgotten (one read of them).
func (s *Sender) pruneLedger(ctx context.Context, count int) error {
	if len(s.ledger.sent) <= 2*count+ledgerSlack && len(s.ledger.signed) <= 2*count+ledgerSlack {
		return nil
	}
	inflight, err := s.store.InFlight(ctx, s.account.ID, s.net.Name)
	if err != nil {
		return fmt.Errorf("in flight: %w", err)
	}
	s.ledger.keepOnly(inflight)
	return nil
}

// recordSent records that tx was broadcast (and signed, when signed) at head.
func (c *inFlightLedger) recordSent(id string, head uint64, signed bool) {
	c.sent[id] = head
	if signed {
		c.signed[id] = head
	}
}

// blocksSince is how many blocks head is past from (0 when it is not: the
// chain went back).
func blocksSince(head, from uint64) uint64 {
	if head > from {
		return head - from
	}
	return 0
}

// sendAgain makes the next check send txs again whatever the head: a
// provider refused the whole request that carried them (HTTP 429), so the
// node has none of them.
func (c *inFlightLedger) sendAgain(txs []*Transaction) {
	for _, tx := range txs {
		c.sent[tx.ID] = 0
	}
	c.checkNow = true
}
