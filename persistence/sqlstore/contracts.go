package sqlstore

import (
	"context"
	"strings"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// CreateContract inserts c, and c.Idempotency (when not nil) in the same
// database transaction. A taken id or a live idempotency key is
// engine.ErrConflict; an owner that does not exist is engine.ErrNotFound.
func (s *Store) CreateContract(ctx context.Context, c *engine.Contract) error {
	block, err := sqlrow.Int64Of("block", c.Block)
	if err != nil {
		return s.errorf("create contract %s: %w", c.ID, err)
	}
	abi := sqlrow.NullABI(c.ABI)
	insert := func(ctx context.Context, db Conn) error {
		if _, err := db.Exec(ctx, `INSERT INTO contracts (`+sqlrow.ContractColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.Owner, c.Name, c.Network, sqlrow.Address(c.Address), abi, c.BWType, c.BWVer, block, s.ts(c.Created)); err != nil {
			return s.wrap(err, "create contract %s", c.ID)
		}
		return nil
	}
	if c.Idempotency == nil {
		// One statement: no explicit transaction, one round trip.
		return insert(ctx, s.w)
	}
	return s.inTx(ctx, func(tx Conn) error {
		if err := insert(ctx, tx); err != nil {
			return err
		}
		return s.insertIdempotency(ctx, tx, c.Idempotency)
	})
}

// ContractByID returns the contract with this id (any owner), or
// engine.ErrNotFound.
func (s *Store) ContractByID(ctx context.Context, id string) (*engine.Contract, error) {
	var r contractRow
	if err := s.r.Get(ctx, &r, `SELECT `+sqlrow.ContractColumns+` FROM contracts WHERE id = ?`, id); err != nil {
		return nil, s.wrap(err, "contract %s", id)
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
		return "?"
	}
	if f.Owner != "" {
		where = append(where, `owner = `+arg(f.Owner))
	}
	if f.Network != "" {
		where = append(where, `network = `+arg(f.Network))
	}
	if f.Text != "" {
		// A position in lower() needs no escaping of LIKE wildcards.
		find := s.d.Find()
		where = append(where, `(`+find+`(lower(name), lower(`+arg(f.Text)+`)) > 0 OR `+
			find+`(lower(address), lower(`+arg(f.Text)+`)) > 0)`)
	}
	if len(f.Types) > 0 {
		cond, in := s.in("bwtype", f.Types)
		where = append(where, cond)
		args = append(args, in...)
	}
	q := `SELECT ` + sqlrow.ContractColumns + ` FROM contracts`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY created, ` + s.seq
	var rows []contractRow
	if err := s.r.Select(ctx, &rows, q, args...); err != nil {
		return nil, s.wrap(err, "list contracts")
	}
	return decoded(sqlrow.Contracts(rows))
}
