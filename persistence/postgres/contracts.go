package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

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
	Created time.Time      `db:"created"`
}

func (r *contractRow) contract() (*engine.Contract, error) {
	addr, err := fromAddress("address", r.Address)
	if err != nil {
		return nil, fmt.Errorf("postgres: contract %s: %w", r.ID, err)
	}
	block, err := uint64Of("block", r.Block)
	if err != nil {
		return nil, fmt.Errorf("postgres: contract %s: %w", r.ID, err)
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
		Created: fromTS(r.Created),
	}
	if r.ABI.Valid {
		c.ABI = json.RawMessage(r.ABI.String)
	}
	return c, nil
}

const contractColumns = `id, owner, name, network, address, abi, bwtype, bwver, block, created`

// CreateContract inserts c, and c.Idempotency (when not nil) in the same
// database transaction. A taken id or a live idempotency key is
// engine.ErrConflict; an owner that does not exist is engine.ErrNotFound.
func (s *Store) CreateContract(ctx context.Context, c *engine.Contract) error {
	block, err := int64Of("block", c.Block)
	if err != nil {
		return fmt.Errorf("postgres: create contract %s: %w", c.ID, err)
	}
	var abi sql.NullString
	if c.ABI != nil {
		abi = sql.NullString{String: string(c.ABI), Valid: true}
	}
	insert := func(ctx context.Context, db sqlx.ExecerContext) error {
		if _, err := db.ExecContext(ctx, `INSERT INTO contracts (`+contractColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			c.ID, c.Owner, c.Name, c.Network, address(c.Address), abi, c.BWType, c.BWVer, block, ts(c.Created)); err != nil {
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
	if err := s.db.GetContext(ctx, &r, `SELECT `+contractColumns+` FROM contracts WHERE id = $1`, id); err != nil {
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
	q := `SELECT ` + contractColumns + ` FROM contracts`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY created, seq`
	var rows []contractRow
	if err := s.db.SelectContext(ctx, &rows, q, args...); err != nil {
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
