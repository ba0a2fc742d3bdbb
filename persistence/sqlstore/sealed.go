package sqlstore

import (
	"context"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

var _ engine.SealedStore = (*Store)(nil)

// SealedValues implements engine.SealedStore on the read pool, with
// sqlrow's queries (pages along the primary keys).
func (s *Store) SealedValues(ctx context.Context, kind engine.SealedKind, afterID, afterKey string, limit int) ([]engine.SealedValue, error) {
	vs, err := sqlrow.SealedValues(ctx, s.r.Raw(), s.d.BindType(), kind, afterID, afterKey, limit)
	if err != nil {
		return nil, s.wrap(err, "sealed values")
	}
	return vs, nil
}

// Resealer is the optional bulk statement of a Dialect that applies the
// compare-and-swaps of a batch of ResealValues on c in one statement (one
// round trip whatever their number) and returns how many rows changed.
// Without it, the store runs sqlrow's swap once per row in one write
// transaction.
type Resealer interface {
	Reseal(ctx context.Context, c Conn, kind engine.SealedKind, swaps []engine.Reseal) (int, error)
}

// ResealValues implements engine.SealedStore: the swaps of the batch in
// one database transaction, each applied only where the row still holds
// its Old value.
func (s *Store) ResealValues(ctx context.Context, kind engine.SealedKind, swaps []engine.Reseal) (int, error) {
	if r, ok := s.d.(Resealer); ok {
		n, err := r.Reseal(ctx, s.w, kind, swaps)
		if err != nil {
			return 0, s.wrap(err, "re-encrypt %s", kind)
		}
		return n, nil
	}
	var n int
	err := s.inTx(ctx, func(tx Conn) error {
		var err error
		n, err = sqlrow.ResealValues(ctx, tx.Raw(), s.d.BindType(), kind, swaps)
		return s.wrap(err, "reseal values")
	})
	return n, err
}
