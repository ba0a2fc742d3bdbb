package subscribe

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// memSubStore is an in-memory engine.SubscriptionProcessorStore: a step is stored
// whole or not at all; fail, when set, may refuse a step before anything
// of it is stored.
type memSubStore struct {
	subs      []*engine.Subscription
	events    []engine.SubscriptionEvent
	retracted map[string]bool
	blocks    map[uint64]common.Hash
	fail      func(step engine.SubscriptionStep) error
	saves     int
}

func newMemSubStore(subs ...*engine.Subscription) *memSubStore {
	return &memSubStore{subs: subs, retracted: map[string]bool{}, blocks: map[uint64]common.Hash{}}
}

func (m *memSubStore) SubscriptionsVersion(context.Context, string) (engine.SubscriptionsVersion, error) {
	return engine.SubscriptionsVersion{Count: len(m.subs), MaxSeq: int64(len(m.subs))}, nil
}

func (m *memSubStore) LiveSubscriptions(context.Context, string) ([]*engine.Subscription, error) {
	out := make([]*engine.Subscription, len(m.subs))
	for i, s := range m.subs {
		c := *s
		out[i] = &c
	}
	return out, nil
}

func (m *memSubStore) OwnerAddresses(context.Context, []string) (map[string][]common.Address, error) {
	return map[string][]common.Address{}, nil
}

func (m *memSubStore) SubscriptionBlocks(_ context.Context, _ string, limit int) ([]engine.IndexedBlock, error) {
	var out []engine.IndexedBlock
	for n, h := range m.blocks {
		out = append(out, engine.IndexedBlock{Number: n, Hash: h})
	}
	slices.SortFunc(out, func(a, b engine.IndexedBlock) int { return cmp.Compare(b.Number, a.Number) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (m *memSubStore) LiveDeliveries(_ context.Context, _ string, from uint64) ([]engine.SubscriptionEvent, error) {
	var out []engine.SubscriptionEvent
	for _, ev := range m.events {
		if ev.BlockNumber >= from && !ev.Removed && !m.retracted[ev.ID] {
			out = append(out, ev)
		}
	}
	slices.SortStableFunc(out, func(a, b engine.SubscriptionEvent) int {
		if a.SubscriptionID != b.SubscriptionID {
			if a.SubscriptionID < b.SubscriptionID {
				return -1
			}
			return 1
		}
		return int(a.Seq - b.Seq)
	})
	return out, nil
}

func (m *memSubStore) SaveSubscriptionStep(_ context.Context, _ engine.NetworkFence, step engine.SubscriptionStep) error {
	if m.fail != nil {
		if err := m.fail(step); err != nil {
			return err
		}
	}
	m.saves++
	byID := map[string]*engine.Subscription{}
	for _, s := range m.subs {
		byID[s.ID] = s
	}
	for _, ev := range step.Events {
		s := byID[ev.SubscriptionID]
		if ev.Seq != s.LastSeq+1 {
			return fmt.Errorf("subscription %s: seq %d after %d", s.ID, ev.Seq, s.LastSeq)
		}
		s.LastSeq = ev.Seq
		m.events = append(m.events, ev)
	}
	for _, id := range step.Retracted {
		m.retracted[id] = true
	}
	for id, next := range step.Next {
		byID[id].Next = next
	}
	if step.ForgetFrom != nil {
		for n := range m.blocks {
			if n >= *step.ForgetFrom {
				delete(m.blocks, n)
			}
		}
	}
	for _, b := range step.Blocks {
		m.blocks[b.Number] = b.Hash
	}
	return nil
}

// of returns the deliveries of subscription id, in seq order.
func (m *memSubStore) of(id string) []engine.SubscriptionEvent {
	var out []engine.SubscriptionEvent
	for _, ev := range m.events {
		if ev.SubscriptionID == id {
			out = append(out, ev)
		}
	}
	return out
}

// transferSub returns an events subscription to the Transfer logs of
// token from block next.
func transferSub(id string, token common.Address, next uint64) *engine.Subscription {
	return &engine.Subscription{ID: id, Network: "dev", Kind: engine.SubscriptionEvents, Address: token, Event: "Transfer",
		ABI: json.RawMessage(TransferEventABI), Topics: [][]common.Hash{{engine.TransferTopic}}, FromBlock: next, Next: next}
}

// newTestProcessor returns a processor of network dev over chain and store.
func newTestProcessor(t *testing.T, chain Chain, store engine.SubscriptionProcessorStore, cfg Config, clock engine.Clock) *Processor {
	t.Helper()
	p, err := NewProcessor(&engine.Network{Name: "dev"}, chain, store, cfg, clock, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stepClock is a clock the test moves.
type stepClock struct{ t time.Time }

func (c *stepClock) Now() time.Time { return c.t }
