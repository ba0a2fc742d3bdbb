package engine

// PoolMetrics receives the measurements of sender pools; engine/prom
// implements it, NopPoolMetrics discards them.
type PoolMetrics interface {
	// PoolMembers and PoolLoad record a pool's size, queue and in-flight
	// count (values, not deltas).
	PoolMembers(pool, network string, n int)
	PoolLoad(pool, network string, queued, inFlight int)
	// PoolTopUps counts n top-up transactions sent.
	PoolTopUps(pool, network string, n int)
	// PoolShort records whether the pool's treasury cannot cover its
	// members (1) or can (0).
	PoolShort(pool, network string, short bool)
	// PoolRefused counts a capacity refusal of a member's transaction.
	PoolRefused(pool, network string)
	// PoolGone forgets a deleted pool's series.
	PoolGone(pool, network string)
}

// NopPoolMetrics discards the pool measurements.
type NopPoolMetrics struct{}

// PoolMembers implements PoolMetrics.
func (NopPoolMetrics) PoolMembers(string, string, int) {}

// PoolLoad implements PoolMetrics.
func (NopPoolMetrics) PoolLoad(string, string, int, int) {}

// PoolTopUps implements PoolMetrics.
func (NopPoolMetrics) PoolTopUps(string, string, int) {}

// PoolShort implements PoolMetrics.
func (NopPoolMetrics) PoolShort(string, string, bool) {}

// PoolRefused implements PoolMetrics.
func (NopPoolMetrics) PoolRefused(string, string) {}

// PoolGone implements PoolMetrics.
func (NopPoolMetrics) PoolGone(string, string) {}
