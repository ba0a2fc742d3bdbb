package http

import (
	"context"
	"slices"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// putIdemLocked stores an idempotency record as the real stores do: a live
// record of the same (user, key) is a conflict. s.mu must be held.
func (s *fakeStore) putIdemLocked(r *engine.IdempotencyRecord) error {
	if r == nil {
		return nil
	}
	if s.idem == nil {
		s.idem = map[string]*engine.IdempotencyRecord{}
	}
	k := r.UserID + "\x00" + r.Key
	if old, ok := s.idem[k]; ok && !old.Expired(r.Created) {
		return engine.ErrConflict
	}
	cp := *r
	s.idem[k] = &cp
	return nil
}

func (s *fakeStore) IdempotencyRecord(_ context.Context, userID, key string) (*engine.IdempotencyRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.idem[userID+"\x00"+key]
	if !ok {
		return nil, engine.ErrNotFound
	}
	cp := *r
	return &cp, nil
}

func (s *fakeStore) SetUserLimits(_ context.Context, id string, limits *engine.RateLimits) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok {
		return engine.ErrNotFound
	}
	u.Limits = limits
	s.writes++
	return nil
}

func (s *fakeStore) ListTransfers(_ context.Context, f engine.TransferFilter) ([]engine.TokenTransfer, *engine.TransferCursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []engine.TokenTransfer
	for _, t := range s.transfers {
		switch {
		case t.Network != f.Network || t.Token != f.Token:
		case f.From != nil && t.From != *f.From, f.To != nil && t.To != *f.To:
		case f.Address != nil && t.From != *f.Address && t.To != *f.Address:
		case f.FromBlock != nil && t.BlockNumber < *f.FromBlock, f.ToBlock != nil && t.BlockNumber > *f.ToBlock:
		case f.After != nil && (t.BlockNumber > f.After.BlockNumber || t.BlockNumber == f.After.BlockNumber && t.LogIndex >= f.After.LogIndex):
		default:
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b engine.TokenTransfer) int {
		if a.BlockNumber != b.BlockNumber {
			return int(b.BlockNumber) - int(a.BlockNumber)
		}
		return int(b.LogIndex) - int(a.LogIndex)
	})
	if len(out) > f.Limit {
		out = out[:f.Limit]
		last := out[len(out)-1]
		return out, &engine.TransferCursor{BlockNumber: last.BlockNumber, LogIndex: last.LogIndex}, nil
	}
	return out, nil, nil
}

func (s *fakeStore) NFTOwners(_ context.Context, network string, contracts []common.Address) ([]common.Address, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.nftOwners), nil
}

func (s *fakeStore) idemCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.idem)
}
