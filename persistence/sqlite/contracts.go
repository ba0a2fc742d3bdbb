package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// CreateContract inserts c. A taken id is engine.ErrConflict; an owner that
// does not exist is engine.ErrNotFound.
func (s *Store) CreateContract(ctx context.Context, c *engine.Contract) error {
	block, err := sqlrow.Int64Of("block", c.Block)
	if err != nil {
		return fmt.Errorf("sqlite: create contract %s: %w", c.ID, err)
	}
	abi := sqlrow.NullABI(c.ABI)
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO contracts (`+sqlrow.ContractColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.Owner, c.Name, c.Network, sqlrow.Address(c.Address), abi, c.BWType, c.BWVer, block, millis(c.Created)); err != nil {
			return wrap(err, "create contract %s", c.ID)
		}
		return insertIdempotency(ctx, tx, c.Idempotency)
	})
}

// ContractByID returns the contract with this id (any owner), or
// engine.ErrNotFound.
func (s *Store) ContractByID(ctx context.Context, id string) (*engine.Contract, error) {
	var r contractRow
	if err := s.r.GetContext(ctx, &r, `SELECT `+sqlrow.ContractColumns+` FROM contracts WHERE id = ?`, id); err != nil {
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
	if f.Owner != "" {
		where = append(where, `owner = ?`)
		args = append(args, f.Owner)
	}
	if f.Network != "" {
		where = append(where, `network = ?`)
		args = append(args, f.Network)
	}
	if f.Text != "" {
		// instr on lower() needs no escaping of LIKE wildcards.
		where = append(where, `(instr(lower(name), lower(?)) > 0 OR instr(lower(address), lower(?)) > 0)`)
		args = append(args, f.Text, f.Text)
	}
	if len(f.Types) > 0 {
		where = append(where, `bwtype IN (?`+strings.Repeat(`, ?`, len(f.Types)-1)+`)`)
		for _, t := range f.Types {
			args = append(args, t)
		}
	}
	q := `SELECT ` + sqlrow.ContractColumns + ` FROM contracts`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY created, rowid`
	var rows []contractRow
	if err := s.r.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, wrap(err, "list contracts")
	}
	return decoded(sqlrow.Contracts(rows))
}
