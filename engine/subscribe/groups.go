package subscribe

import (
	"cmp"
	"slices"
	"time"

	"github.com/txengine/txengine/engine"
)

// The order in which a Poll serves the groups of subscriptions, and what
// it remembers of a group's failures. A group is the subscriptions at the
// same next block that are deep enough for it and not backing off; they
// read one range together. Caught-up groups (at most NearBlocks behind
// their top) are served first at every Poll; the others (backfills) then
// share a bounded number of steps in turn, so a subscription from block 0
// on a long chain neither delays the live ones nor the other backfills.

// subGroup is a group of subscriptions and the range they read.
type subGroup struct {
	subs     []*engine.Subscription
	from, to uint64
	// behind is how many blocks the group is from its top (its lowest
	// member's): to+1-from when the range reaches it.
	behind uint64
}

// subHealth is what the processor remembers of a subscription's failed
// steps: the range its group reads at most after a log limit, and when its
// group may be tried again after a failure.
type subHealth struct {
	// span is the most blocks its group reads in one step (0: Range). A
	// log limit halves it; spanGrowAfter good steps double it again.
	span uint64
	good int
	// failures counts its group's failed steps in a row; retryAt is when
	// the group may be tried again.
	failures int
	retryAt  time.Time
}

// spanGrowAfter is how many good steps a halved range is kept before it
// doubles again.
const spanGrowAfter = 16

// groups returns the groups ready at head and now, by next block. A
// subscription whose group failed waits until its retry time; each group
// reads from its next block to the lowest of its members' tops, at most
// the smallest span of its members.
func (p *Processor) groups(subs []*engine.Subscription, head uint64, now time.Time) []subGroup {
	byNext := map[uint64]*subGroup{}
	var out []*subGroup
	for _, s := range subs {
		t, ok := top(s, head)
		if !ok || s.Next > t {
			continue
		}
		h := p.health[s.ID]
		if h != nil && now.Before(h.retryAt) {
			continue
		}
		g := byNext[s.Next]
		if g == nil {
			g = &subGroup{from: s.Next, to: t}
			byNext[s.Next] = g
			out = append(out, g)
		}
		g.subs = append(g.subs, s)
		g.to = min(g.to, t)
	}
	res := make([]subGroup, 0, len(out))
	for _, g := range out {
		g.behind = g.to + 1 - g.from
		span := p.cfg.Range
		for _, s := range g.subs {
			if h := p.health[s.ID]; h != nil && h.span > 0 {
				span = min(span, h.span)
			}
		}
		g.to = min(g.to, g.from+span-1)
		res = append(res, *g)
	}
	slices.SortFunc(res, func(a, b subGroup) int { return cmp.Compare(a.from, b.from) })
	return res
}

// nextLive returns the lowest caught-up group (at most NearBlocks behind
// its top), and false when there is none.
func (p *Processor) nextLive(groups []subGroup) (subGroup, bool) {
	for _, g := range groups {
		if g.behind <= p.cfg.NearBlocks {
			return g, true
		}
	}
	return subGroup{}, false
}

// nextBackfill returns the backfill whose turn it is: the lowest one
// starting above p.turn (past the last one served), else the lowest, so
// the backfills take turns; false when there is none.
func (p *Processor) nextBackfill(groups []subGroup) (subGroup, bool) {
	var first *subGroup
	for i := range groups {
		g := &groups[i]
		if g.behind <= p.cfg.NearBlocks {
			continue
		}
		if first == nil {
			first = g
		}
		if g.from > p.turn {
			return *g, true
		}
	}
	if first == nil {
		return subGroup{}, false
	}
	return *first, true
}

// stepped records a good step of group: a halved range grows back after
// spanGrowAfter of them, and failures are forgotten.
func (p *Processor) stepped(g subGroup) {
	for _, s := range g.subs {
		h := p.health[s.ID]
		if h == nil {
			continue
		}
		h.failures, h.retryAt = 0, time.Time{}
		if h.span == 0 {
			delete(p.health, s.ID)
			continue
		}
		if h.good++; h.good >= spanGrowAfter {
			h.good = 0
			if h.span *= 2; h.span >= p.cfg.Range {
				delete(p.health, s.ID)
			}
		}
	}
}

// failed records a failed step of group at now. A log limit halves the
// group's range and retries at once while it is wider than one block;
// other errors, and a limit on one block, make the group wait (doubling
// per failure in a row), while the other groups go on.
func (p *Processor) failed(g subGroup, err error, now time.Time) {
	width := g.to + 1 - g.from
	halve := engine.IsLogLimit(err) && width > 1
	var failures int
	for _, s := range g.subs {
		if h := p.health[s.ID]; h != nil {
			failures = max(failures, h.failures)
		}
	}
	failures++
	// Without jitter (r 0) Wait is the doubling schedule itself; failures
	// is at least 1.
	wait := engine.Backoff{Initial: p.cfg.GroupBackoff, Max: p.cfg.MaxGroupBackoff}.Wait(failures, 0)
	for _, s := range g.subs {
		h := p.health[s.ID]
		if h == nil {
			h = &subHealth{}
			p.health[s.ID] = h
		}
		h.good = 0
		if halve {
			h.span = max(width/2, 1)
			continue
		}
		if engine.IsLogLimit(err) {
			h.span = 1
		}
		h.failures, h.retryAt = failures, now.Add(wait)
	}
	p.log.Warn("subscriptions: a group's step failed", "from_block", g.from, "to_block", g.to,
		"subscriptions", len(g.subs), "halved", halve, "failures", failures, "err", err)
}

// forgetHealth drops the health of subscriptions no longer live.
func (p *Processor) forgetHealth(live map[string]bool) {
	for id := range p.health {
		if !live[id] {
			delete(p.health, id)
		}
	}
}
