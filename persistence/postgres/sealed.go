package postgres

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

var _ engine.SealedStore = (*Store)(nil)

// SealedValues implements engine.SealedStore.
func (s *Store) SealedValues(ctx context.Context, kind engine.SealedKind, afterID, afterKey string, limit int) ([]engine.SealedValue, error) {
	vs, err := sqlrow.SealedValues(ctx, s.db, sqlx.DOLLAR, kind, afterID, afterKey, limit)
	return vs, wrap(err, "sealed values")
}

// ResealValues implements engine.SealedStore: the swaps in one database
// transaction.
func (s *Store) ResealValues(ctx context.Context, kind engine.SealedKind, swaps []engine.Reseal) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		n, err = sqlrow.ResealValues(ctx, tx, sqlx.DOLLAR, kind, swaps)
		return wrap(err, "reseal values")
	})
	return n, err
}
