package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
)

// contractRow is a row of contracts.
type contractRow struct {
	ID      string         `db:"id"`
	Owner   string         `db:"owner"`
	Name    string         `db:"name"`
	Network string         `db:"network"`
	Address string         `db:"address"`
	ABI     sql.NullString `db:"abi"`
	BWType  string         `db:"bwtype"`
	BWVer   string         `db:"bwver"`
	Block   int64          `db:"block"`
	Created int64          `db:"created"`
}

func (r *contractRow) contract() (*engine.Contract, error) {
	addr, err := fromAddress("address", r.Address)
	if err != nil {
		return nil, fmt.Errorf("sqlite: contract %s: %w", r.ID, err)
	}
	block, err := uint64Of("block", r.Block)
	if err != nil {
		return nil, fmt.Errorf("sqlite: contract %s: %w", r.ID, err)
	}
	c := &engine.Contract{
		ID:      r.ID,
		Owner:   r.Owner,
		Name:    r.Name,
		Network: r.Network,
		Address: addr,
		BWType:  r.BWType,
		BWVer:   r.BWVer,
		Block:   block,
		Created: fromMillis(r.Created),
	}
	if r.ABI.Valid {
		c.ABI = json.RawMessage(r.ABI.String)
	}
	return c, nil
}

const contractColumns = `id, owner, name, network, address, abi, bwtype, bwver, block, created`

// CreateContract inserts c. A taken id is engine.ErrConflict; an owner that
// does not exist is engine.ErrNotFound.
func (s *Store) CreateContract(ctx context.Context, c *engine.Contract) error {
	block, err := int64Of("block", c.Block)
	if err != nil {
		return fmt.Errorf("sqlite: create contract %s: %w", c.ID, err)
	}
	var abi sql.NullString
	if c.ABI != nil {
		abi = sql.NullString{String: string(c.ABI), Valid: true}
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO contracts (`+contractColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.Owner, c.Name, c.Network, address(c.Address), abi, c.BWType, c.BWVer, block, millis(c.Created)); err != nil {
			return wrap(err, "create contract %s", c.ID)
		}
		return insertIdempotency(ctx, tx, c.Idempotency)
	})
}

// ContractByID returns the contract with this id (any owner), or
// engine.ErrNotFound.
func (s *Store) ContractByID(ctx context.Context, id string) (*engine.Contract, error) {
	var r contractRow
	if err := s.r.GetContext(ctx, &r, `SELECT `+contractColumns+` FROM contracts WHERE id = ?`, id); err != nil {
		return nil, wrap(err, "contract %s", id)
	}
	return r.contract()
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
	q := `SELECT ` + contractColumns + ` FROM contracts`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY created, rowid`
	var rows []contractRow
	if err := s.r.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, wrap(err, "list contracts")
	}
	out := make([]*engine.Contract, 0, len(rows))
	for i := range rows {
		c, err := rows[i].contract()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
