package engine

import "time"

// A member topped up again with the same asset within refillWindow of its
// last top-up is being outrun by a burst still arriving: each such repeat
// doubles its headroom (the token's HeadroomPercent, the gas's
// HighWaterTxs), up to maxHeadroomDoublings times, so a burst takes a few
// rounds of top-ups, not one per block. The treasury moves at most what
// the node keeps pending per sender each block (16 on a busy public node):
// every round it saves is a block the members do not wait.
const (
	refillWindow         = 30 * time.Second
	maxHeadroomDoublings = 4
)

// refill is a member's last top-up of an asset: when, and how many times
// its headroom was doubled.
type refill struct {
	doublings int
	at        time.Time
}

// headroom is the factor of the headroom of a top-up with key now: 1, or
// twice the last one's when the member's last top-up of the asset was
// within refillWindow (at most 2^maxHeadroomDoublings).
func (k *PoolKeeper) headroom(key string) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return 1 << k.doublings(key, k.cfg.Clock.Now())
}

// doublings is how many times a top-up with key at now doubles its
// headroom; k.mu is held.
func (k *PoolKeeper) doublings(key string, now time.Time) int {
	last, ok := k.refills[key]
	if !ok || now.Sub(last.at) > refillWindow {
		return 0
	}
	return min(last.doublings+1, maxHeadroomDoublings)
}

// noteRefill records a top-up with key accepted now; refills older than
// refillWindow are forgotten.
func (k *PoolKeeper) noteRefill(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.cfg.Clock.Now()
	k.refills[key] = refill{doublings: k.doublings(key, now), at: now}
	for key, r := range k.refills {
		if now.Sub(r.at) > refillWindow {
			delete(k.refills, key)
		}
	}
}
