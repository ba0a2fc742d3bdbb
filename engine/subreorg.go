package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
)

// checkReorg compares the stored block hashes with the chain. When some
// are no longer on it, the subscriptions are rewound to their ReorgPoint:
// their deliveries from there on are retracted, newest first, and their
// next block becomes at most that block.
func (p *SubscriptionProcessor) checkReorg(ctx context.Context, fence NetworkFence, head uint64, subs []*Subscription, res *SubscriptionResult) error {
	blocks, err := p.store.SubscriptionBlocks(ctx, p.net.Name, int(p.cfg.KeepBlocks))
	if err != nil {
		return fmt.Errorf("subscriptions %s: processed blocks: %w", p.net.Name, err)
	}
	orphan, err := ReorgPoint(ctx, p.chain, blocks, head)
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
	step := SubscriptionStep{Network: p.net.Name, Next: map[string]uint64{}, ForgetFrom: &from, KeepBlocks: p.cfg.KeepBlocks}
	byID := make(map[string]*Subscription, len(subs))
	for _, s := range subs {
		byID[s.ID] = s
		if s.Next > from {
			step.Next[s.ID] = from
		}
	}
	// live is by subscription, then Seq: retract each subscription's
	// deliveries newest first.
	for end := len(live); end > 0; {
		start := end - 1
		for start > 0 && live[start-1].SubscriptionID == live[end-1].SubscriptionID {
			start--
		}
		s := byID[live[start].SubscriptionID]
		for i := end - 1; i >= start && s != nil; i-- {
			ev, err := p.retraction(s, live[i])
			if err != nil {
				return err
			}
			step.Events = append(step.Events, ev)
			step.Retracted = append(step.Retracted, live[i].ID)
		}
		end = start
	}
	p.log.Warn("reorg: retracting deliveries and rewinding subscriptions", "from_block", from, "retracted", len(step.Retracted))
	if err := p.store.SaveSubscriptionStep(ctx, fence, step); err != nil {
		return fmt.Errorf("subscriptions %s: rewind from block %d: %w", p.net.Name, from, err)
	}
	for id, next := range step.Next {
		byID[id].Next = next
	}
	p.storedNext(step.Next)
	res.Rewound, res.Retracted = &from, len(step.Retracted)
	return nil
}

// retraction returns the Removed delivery of ev, numbered after s.LastSeq
// (which it advances): the same body with a new id and sequence.
func (p *SubscriptionProcessor) retraction(s *Subscription, ev SubscriptionEvent) (SubscriptionEvent, error) {
	var view SubscriptionEventView
	var values json.RawMessage
	view.ReturnValues = &values
	if err := json.Unmarshal(ev.Body, &view); err != nil {
		return SubscriptionEvent{}, fmt.Errorf("subscriptions %s: stored delivery %s: %w", p.net.Name, ev.ID, err)
	}
	s.LastSeq++
	view.ID, view.Sequence, view.Removed = uuid.NewString(), s.LastSeq, true
	body, err := json.Marshal(view)
	if err != nil {
		return SubscriptionEvent{}, fmt.Errorf("subscriptions %s: retraction body: %w", p.net.Name, err)
	}
	ev.ID, ev.Seq, ev.Removed, ev.Body, ev.Created = view.ID, view.Sequence, true, body, p.clock.Now()
	return ev, nil
}
