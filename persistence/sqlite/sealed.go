package sqlite

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

var _ engine.SealedStore = (*Store)(nil)

// SealedValues implements engine.SealedStore (on the read pool).
func (s *Store) SealedValues(ctx context.Context, kind engine.SealedKind, afterID, afterKey string, limit int) ([]engine.SealedValue, error) {
	vs, err := sqlrow.SealedValues(ctx, s.r, sqlx.QUESTION, kind, afterID, afterKey, limit)
	return vs, wrap(err, "sealed values")
}

// ResealValues implements engine.SealedStore: the swaps in one write
// transaction.
func (s *Store) ResealValues(ctx context.Context, kind engine.SealedKind, swaps []engine.Reseal) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		n, err = sqlrow.ResealValues(ctx, tx, sqlx.QUESTION, kind, swaps)
		return wrap(err, "reseal values")
	})
	return n, err
}
