package engine

import (
	"context"
	"fmt"
	"time"
)

// care is what a Sender remembers of its in-flight transactions between
// pumps, counted in blocks (never wall time): a 12 s chain with a deep
// confirmation depth keeps transactions in flight for minutes without
// anything being wrong with them.
type care struct {
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
	// now asks the next Pump to check whatever the head (an operator
	// abandoned a transaction; a broadcast was refused).
	now bool
	// checkedAt is when the last check was made (wall clock).
	checkedAt time.Time
}

// minCheckEvery is the least time between two checks of one account: on
// chains faster than a block a second, rebroadcastBlocks blocks pass in
// less than a watcher's poll, and checking each time would only add load
// (none without a poll interval: tests drive the head by hand).
func (s *Sender) minCheckEvery() time.Duration {
	if s.net.PollInterval <= 0 {
		return 0
	}
	return max(s.net.PollInterval, time.Second)
}

// newCare returns the care of a sender with nothing in flight.
func newCare() care {
	return care{sent: map[string]uint64{}, signed: map[string]uint64{}, consumed: map[string]uint64{}}
}

// reset forgets everything: the window is empty.
func (c *care) reset() { *c = newCare() }

// keepOnly forgets what it tracks of transactions not in inflight (mined,
// failed, released since): an account that always has something in
// flight would otherwise remember every transaction it ever sent.
func (c *care) keepOnly(inflight []*Transaction) {
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

// careSlack is how many entries care may hold beyond twice the number of
// transactions in flight before they are pruned between checks.
const careSlack = 64

// pruneCare bounds what care holds when the checks do not come (the
// lowest nonce keeps moving, so nothing is stuck): once it holds more
// than twice the transactions in flight (count) and careSlack, the ids no
// longer in flight are forgotten (one read of them).
func (s *Sender) pruneCare(ctx context.Context, count int) error {
	if len(s.care.sent) <= 2*count+careSlack && len(s.care.signed) <= 2*count+careSlack {
		return nil
	}
	inflight, err := s.store.InFlight(ctx, s.account.ID, s.net.Name)
	if err != nil {
		return fmt.Errorf("in flight: %w", err)
	}
	s.care.keepOnly(inflight)
	return nil
}

// sentAt records that tx was broadcast (and signed, when signed) at head.
func (c *care) sentAt(id string, head uint64, signed bool) {
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
func (c *care) sendAgain(txs []*Transaction) {
	for _, tx := range txs {
		c.sent[tx.ID] = 0
	}
	c.now = true
}
