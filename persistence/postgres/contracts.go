package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// CreateContract inserts c, and c.Idempotency (when not nil) in the same
// database transaction. A taken id or a live idempotency key is
// engine.ErrConflict; an owner that does not exist is engine.ErrNotFound.
func (s *Store) CreateContract(ctx context.Context, c *engine.Contract) error {
	block, err := sqlrow.Int64Of("block", c.Block)
	if err != nil {
		return fmt.Errorf("postgres: create contract %s: %w", c.ID, err)
	}
	abi := sqlrow.NullABI(c.ABI)
	insert := func(ctx context.Context, db sqlx.ExecerContext) error {
		if _, err := db.ExecContext(ctx, `INSERT INTO contracts (`+sqlrow.ContractColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			c.ID, c.Owner, c.Name, c.Network, sqlrow.Address(c.Address), abi, c.BWType, c.BWVer, block, ts(c.Created)); err != nil {
			return wrap(err, "create contract %s", c.ID)
		}
		return nil
	}
	if c.Idempotency == nil {
		// One statement: no explicit transaction, one round trip.
		return insert(ctx, s.db)
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := insert(ctx, tx); err != nil {
			return err
		}
		return insertIdempotency(ctx, tx, c.Idempotency)
	})
}

// ContractByID returns the contract with this id (any owner), or
// engine.ErrNotFound.
func (s *Store) ContractByID(ctx context.Context, id string) (*engine.Contract, error) {
	var r contractRow
	if err := s.db.GetContext(ctx, &r, `SELECT `+sqlrow.ContractColumns+` FROM contracts WHERE id = $1`, id); err != nil {
		return nil, wrap(err, "contract %s", id)
	}
	return decoded(r.Contract())
}

// ListContracts returns the contracts matching f, oldest first (an empty
// slice when none does). Text is a case-insensitive substring of the name or
// of the address.
func (s *Store) ListContracts(ctx context.Context, f engine.ContractFilter) ([]*engine.Contract, error) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Owner != "" {
		where = append(where, `owner = `+arg(f.Owner))
	}
	if f.Network != "" {
		where = append(where, `network = `+arg(f.Network))
	}
	if f.Text != "" {
		// strpos on lower() needs no escaping of LIKE wildcards.
		p := arg(f.Text)
		where = append(where, `(strpos(lower(name), lower(`+p+`)) > 0 OR strpos(lower(address), lower(`+p+`)) > 0)`)
	}
	if len(f.Types) > 0 {
		where = append(where, `bwtype = ANY(`+arg(pq.StringArray(f.Types))+`)`)
	}
	q := `SELECT ` + sqlrow.ContractColumns + ` FROM contracts`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY created, seq`
	var rows []contractRow
	if err := s.db.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, wrap(err, "list contracts")
	}
	return decoded(sqlrow.Contracts(rows))
}
