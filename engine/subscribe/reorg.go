package subscribe

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/txengine/txengine/engine"
)

// checkReorg compares the stored block hashes with the chain. When some
// are no longer on it, the subscriptions are rewound to their
// engine.ReorgPoint: their deliveries from there on are retracted, newest
// first, and their next block becomes at most that block. The work is cut in transactions
// of at most RetractChunk retractions (a subscription rewound without
// any counts one), each of which commits; a subscription's retractions
// share one chunk unless they are more than it holds. A subscription's
// next block is rewound with its first retraction, and the orphaned block hashes are
// forgotten with the last chunk only, so a Poll that fails or times out
// half way leaves the reorg detectable and its retracted rows retracted:
// the next Poll resumes with what is left (LiveDeliveries no longer
// returns what was retracted).
func (p *Processor) checkReorg(ctx context.Context, fence engine.NetworkFence, head uint64, subs []*engine.Subscription, res *engine.SubscriptionResult) error {
	blocks, err := p.store.SubscriptionBlocks(ctx, p.net.Name, int(p.cfg.KeepBlocks))
	if err != nil {
		return fmt.Errorf("subscriptions %s: processed blocks: %w", p.net.Name, err)
	}
	orphan, err := engine.ReorgPoint(ctx, p.chain, blocks, head)
	if err != nil {
		return fmt.Errorf("subscriptions %s: %w", p.net.Name, err)
	}
	if orphan == nil {
		return nil
	}
	from := *orphan
	live, err := p.store.LiveDeliveries(ctx, p.net.Name, from)
	if err != nil {
		return fmt.Errorf("subscriptions %s: deliveries from block %d: %w", p.net.Name, from, err)
	}
	// live is by subscription, then Seq.
	bySub := map[string][]engine.SubscriptionEvent{}
	for _, ev := range live {
		bySub[ev.SubscriptionID] = append(bySub[ev.SubscriptionID], ev)
	}
	p.log.Warn("reorg: retracting deliveries and rewinding subscriptions", "from_block", from, "retract", len(live))
	r := rewind{p: p, ctx: ctx, fence: fence, from: from, res: res}
	r.reset()
	for _, s := range subs {
		evs := bySub[s.ID]
		if s.Next <= from && len(evs) == 0 {
			continue // rewound and retracted already
		}
		if r.units > 0 && r.units+len(evs) > p.cfg.RetractChunk {
			// A subscription's retractions go in one chunk unless they are
			// more than a chunk holds.
			if err := r.flush(); err != nil {
				return err
			}
		}
		if len(evs) == 0 {
			if err := r.add(s, nil); err != nil {
				return err
			}
		}
		for i := len(evs) - 1; i >= 0; i-- {
			if err := r.add(s, &evs[i]); err != nil {
				return err
			}
		}
	}
	r.step.ForgetFrom = &from
	if err := r.flush(); err != nil {
		return err
	}
	res.Rewound = &from
	return nil
}

// rewind is the retraction of a reorg in chunks: step is the chunk being
// built, units what it holds.
type rewind struct {
	p     *Processor
	ctx   context.Context
	fence engine.NetworkFence
	from  uint64
	res   *engine.SubscriptionResult
	step  engine.SubscriptionStep
	subs  map[string]*engine.Subscription
	units int
}

// reset starts a new chunk.
func (r *rewind) reset() {
	r.step = engine.SubscriptionStep{Network: r.p.net.Name, Next: map[string]uint64{}, KeepBlocks: r.p.cfg.KeepBlocks}
	r.subs, r.units = map[string]*engine.Subscription{}, 0
}

// add puts the retraction of ev (nil: none) and the rewind of s into the
// chunk, storing the chunk first when it is full.
func (r *rewind) add(s *engine.Subscription, ev *engine.SubscriptionEvent) error {
	if r.units >= r.p.cfg.RetractChunk {
		if err := r.flush(); err != nil {
			return err
		}
	}
	r.units++
	if s.Next > r.from {
		r.step.Next[s.ID], r.subs[s.ID] = r.from, s
	}
	if ev == nil {
		return nil
	}
	removed, err := r.p.retraction(s, *ev)
	if err != nil {
		return err
	}
	r.step.Events = append(r.step.Events, removed)
	r.step.Retracted = append(r.step.Retracted, ev.ID)
	return nil
}

// flush stores the chunk in one database transaction and starts another.
func (r *rewind) flush() error {
	p := r.p
	if err := p.store.SaveSubscriptionStep(r.ctx, r.fence, r.step); err != nil {
		return fmt.Errorf("subscriptions %s: rewind from block %d (%d retractions): %w", p.net.Name, r.from, len(r.step.Retracted), err)
	}
	for id, next := range r.step.Next {
		r.subs[id].Next = next
	}
	p.storedNext(r.step.Next)
	r.res.Retracted += len(r.step.Retracted)
	r.reset()
	return nil
}

// retraction returns the Removed delivery of ev, numbered after s.LastSeq
// (which it advances): the same body with a new id and sequence.
func (p *Processor) retraction(s *engine.Subscription, ev engine.SubscriptionEvent) (engine.SubscriptionEvent, error) {
	var view DeliveryView
	var values json.RawMessage
	view.ReturnValues = &values
	if err := json.Unmarshal(ev.Body, &view); err != nil {
		return engine.SubscriptionEvent{}, fmt.Errorf("subscriptions %s: stored delivery %s: %w", p.net.Name, ev.ID, err)
	}
	s.LastSeq++
	view.ID, view.Sequence, view.Removed = engine.NewID(), s.LastSeq, true
	body, err := json.Marshal(view)
	if err != nil {
		return engine.SubscriptionEvent{}, fmt.Errorf("subscriptions %s: retraction body: %w", p.net.Name, err)
	}
	ev.ID, ev.Seq, ev.Removed, ev.Body, ev.Created = view.ID, view.Sequence, true, body, p.clock.Now()
	return ev, nil
}
