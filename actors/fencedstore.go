package actors

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// followerStore is the store of one watcher incarnation: it reads through
// the store and writes through its fenced methods with the fence of the
// network lease tenure that started the watcher (the zero fence, with the
// network named, in single-node mode). Mined outcomes the store left
// unchanged (their transactions were no longer submitted) are logged, not
// failed, so the watcher walks on. A write refused with engine.ErrLeaseLost
// calls lost (nil: nothing), so the leader stops the watcher at once.
type followerStore struct {
	engine.FollowerStore
	w     engine.FencedFollowerStore
	fence engine.NetworkFence
	log   *slog.Logger
	lost  func()
}

// newFollowerStore returns the watcher store of s writing with fence.
func newFollowerStore(s Store, fence engine.NetworkFence, log *slog.Logger, lost func()) *followerStore {
	return &followerStore{FollowerStore: s, w: s, fence: fence, log: log.With("network", fence.Network), lost: lost}
}

// SetCursor implements engine.FollowerStore with SetCursorFenced.
func (s *followerStore) SetCursor(ctx context.Context, network string, block uint64, hash common.Hash) error {
	if err := s.network(network); err != nil {
		return err
	}
	return s.check(s.w.SetCursorFenced(ctx, s.fence, block, hash))
}

// MarkMined implements engine.FollowerStore with MarkMinedFenced.
func (s *followerStore) MarkMined(ctx context.Context, outcomes []engine.Mined) error {
	skipped, err := s.w.MarkMinedFenced(ctx, s.fence, outcomes)
	if err != nil {
		return s.check(err)
	}
	if len(skipped) > 0 {
		s.log.Warn("mined transactions that are no longer submitted were left unchanged", "ids", skipped)
	}
	return nil
}

// Unmine implements engine.FollowerStore with UnmineFenced.
func (s *followerStore) Unmine(ctx context.Context, network string, fromBlock uint64) ([]string, error) {
	if err := s.network(network); err != nil {
		return nil, err
	}
	ids, err := s.w.UnmineFenced(ctx, s.fence, fromBlock)
	return ids, s.check(err)
}

// network refuses a write for a network other than the fence's.
func (s *followerStore) network(network string) error {
	if network != s.fence.Network {
		return errors.New("watcher store of network " + s.fence.Network + " asked to write network " + network)
	}
	return nil
}

// check reports a lost lease to lost and returns err.
func (s *followerStore) check(err error) error {
	if errors.Is(err, engine.ErrLeaseLost) && s.lost != nil {
		s.lost()
	}
	return err
}
