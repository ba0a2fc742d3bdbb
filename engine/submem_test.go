package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// memSubStore is an in-memory SubscriptionProcessorStore: a step is stored
// whole or not at all; fail, when set, may refuse a step before anything
// of it is stored.
type memSubStore struct {
	subs      []*Subscription
	events    []SubscriptionEvent
	retracted map[string]bool
	blocks    map[uint64]common.Hash
	fail      func(step SubscriptionStep) error
	saves     int
}

func newMemSubStore(subs ...*Subscription) *memSubStore {
	return &memSubStore{subs: subs, retracted: map[string]bool{}, blocks: map[uint64]common.Hash{}}
}

func (m *memSubStore) SubscriptionsVersion(context.Context, string) (SubscriptionsVersion, error) {
	return SubscriptionsVersion{Count: len(m.subs), MaxSeq: int64(len(m.subs))}, nil
}

func (m *memSubStore) LiveSubscriptions(context.Context, string) ([]*Subscription, error) {
	out := make([]*Subscription, len(m.subs))
	for i, s := range m.subs {
		c := *s
		out[i] = &c
	}
	return out, nil
}

func (m *memSubStore) OwnerAddresses(context.Context, []string) (map[string][]common.Address, error) {
	return map[string][]common.Address{}, nil
}

func (m *memSubStore) SubscriptionBlocks(_ context.Context, _ string, limit int) ([]IndexedBlock, error) {
	var out []IndexedBlock
	for n, h := range m.blocks {
		out = append(out, IndexedBlock{Number: n, Hash: h})
	}
	slices.SortFunc(out, func(a, b IndexedBlock) int { return cmp.Compare(b.Number, a.Number) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (m *memSubStore) LiveDeliveries(_ context.Context, _ string, from uint64) ([]SubscriptionEvent, error) {
	var out []SubscriptionEvent
	for _, ev := range m.events {
		if ev.BlockNumber >= from && !ev.Removed && !m.retracted[ev.ID] {
			out = append(out, ev)
		}
	}
	slices.SortStableFunc(out, func(a, b SubscriptionEvent) int {
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

func (m *memSubStore) SaveSubscriptionStep(_ context.Context, _ NetworkFence, step SubscriptionStep) error {
	if m.fail != nil {
		if err := m.fail(step); err != nil {
			return err
		}
	}
	m.saves++
	byID := map[string]*Subscription{}
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
func (m *memSubStore) of(id string) []SubscriptionEvent {
	var out []SubscriptionEvent
	for _, ev := range m.events {
		if ev.SubscriptionID == id {
			out = append(out, ev)
		}
	}
	return out
}

// transferSub returns an events subscription to the Transfer logs of
// token from block next.
func transferSub(id string, token common.Address, next uint64) *Subscription {
	return &Subscription{ID: id, Network: "dev", Kind: SubscriptionEvents, Address: token, Event: "Transfer",
		ABI: json.RawMessage(TransferEventABI), Topics: [][]common.Hash{{TransferTopic}}, FromBlock: next, Next: next}
}

// newTestProcessor returns a processor of network dev over chain and store.
func newTestProcessor(t *testing.T, chain IndexChain, store SubscriptionProcessorStore, cfg SubscriptionConfig, clock Clock) *SubscriptionProcessor {
	t.Helper()
	p, err := NewSubscriptionProcessor(&Network{Name: "dev"}, chain, store, cfg, clock, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
