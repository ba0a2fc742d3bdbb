package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
)

var _ engine.StageStore = (*Store)(nil)

// MarkSubmittedGroups implements engine.StageStore: one database
// transaction that first locks the lease row of every non-zero fence (FOR
// SHARE, as MarkSubmittedMany), in the order of account id and epoch
// whatever the order of groups, so that two callers never wait on each
// other's locks in a cycle; then marks the groups' transactions with one
// statement per chunk of bulkChunk rows (markSubmittedBulk), whatever
// their number. The first error (a stale fence, then, in group order, a
// row that is no longer new or does not exist) rolls everything back and
// is returned as MarkSubmittedMany returns it: when a row fails, the call
// is redone row by row in a new database transaction, which stops at the
// first failing row and returns its error.
func (s *Store) MarkSubmittedGroups(ctx context.Context, groups []engine.SubmitGroup) error {
	if len(groups) == 0 {
		return nil
	}
	fences := make([]engine.Fence, 0, len(groups))
	for _, g := range groups {
		if !g.Fence.IsZero() {
			fences = append(fences, g.Fence)
		}
	}
	slices.SortFunc(fences, func(a, b engine.Fence) int {
		return cmp.Or(cmp.Compare(a.AccountID, b.AccountID), cmp.Compare(a.Epoch, b.Epoch), cmp.Compare(a.Node, b.Node))
	})
	fences = slices.Compact(fences)
	lockFences := func(dbtx *sqlx.Tx) error {
		for _, f := range fences {
			if err := s.lockFence(ctx, dbtx, f); err != nil {
				return err
			}
		}
		return nil
	}
	if rows, ok := submitRows(groups); ok {
		err := s.inTx(ctx, func(dbtx *sqlx.Tx) error {
			if err := lockFences(dbtx); err != nil {
				return err
			}
			return markSubmittedBulk(ctx, dbtx, rows)
		})
		if !errors.Is(err, errRowByRow) {
			return err
		}
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		if err := lockFences(dbtx); err != nil {
			return err
		}
		for _, g := range groups {
			for _, tx := range g.Txs {
				if err := s.markSubmitted(ctx, dbtx, g.Fence, tx); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
