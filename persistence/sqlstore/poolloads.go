package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"math/big"
	"strings"

	"github.com/txengine/txengine/engine"
)

// AmountSummer is the optional exact sum of a column of amounts of a
// Dialect (PostgreSQL: NUMERIC). Without it, the store sums the decimal
// text of the amounts in chunks of amountChunkDigits digits, each chunk's
// sum an exact integer, and adds the chunks up with big.Int: exact too.
type AmountSummer interface {
	// SumAmount is a select-list expression of the sum of the amounts of
	// column over the group, as decimal text, NULL when every one is NULL.
	SumAmount(column string) string
}

// amountChunkDigits and amountChunks split an amount of up to 81 decimal
// digits (2^256-1 has 78) into 9 chunks of 9 digits: a chunk is below
// 10^9, so the sum of up to 9·10^9 of them fits SQLite's 64-bit integers.
const (
	amountChunkDigits = 9
	amountChunks      = 9
)

// loadRow is one group (member, status, asset) of PoolLoads' statement.
type loadRow struct {
	AccountID string
	Status    string
	Asset     sql.NullString
	N         int
	// Valued counts the group's rows with a pool_value.
	Valued int
	// Total is the sum, with an AmountSummer; C0..C8 are the chunks'
	// sums otherwise.
	Total                              sql.NullString
	C0, C1, C2, C3, C4, C5, C6, C7, C8 int64
}

// sumColumns is the select list of the sum of pool_value: total, or the
// chunks c0..c8.
func (s *Store) sumColumns() string {
	if sm, ok := s.d.(AmountSummer); ok {
		return sm.SumAmount("pool_value") + ` AS total`
	}
	parts := make([]string, amountChunks)
	for k := range parts {
		// substr with a negative start counts from the right; a start
		// before the first digit yields the digits there are, or ''.
		if k == 0 {
			parts[k] = fmt.Sprintf(`COALESCE(SUM(CAST(substr(pool_value, -%d) AS INTEGER)), 0) AS c0`, amountChunkDigits)
			continue
		}
		parts[k] = fmt.Sprintf(`COALESCE(SUM(CASE WHEN length(pool_value) > %d THEN CAST(substr(pool_value, -%d, %d) AS INTEGER) END), 0) AS c%d`,
			amountChunkDigits*k, amountChunkDigits*(k+1), amountChunkDigits, k)
	}
	return strings.Join(parts, ", ")
}

// poolLoadsQuery is PoolLoads' statement of a pool's loads (one
// placeholder: the pool id).
func (s *Store) poolLoadsQuery() string {
	return `SELECT account_id, status, pool_asset, COUNT(*) AS n, COUNT(pool_value) AS valued, ` + s.sumColumns() + `
		FROM transactions WHERE pool_id = ? AND ` + pendingStatuses + `
		GROUP BY account_id, status, pool_asset`
}

// PoolQueries returns the statements of PoolLoads, OrderingKeyMember,
// PendingPools and PoolTopUps (TopUpsSent, TopUpsPending) bound to the
// database's placeholders (one argument each but OrderingKeyMember's and
// the top-ups' two), by name, for the database's tests (EXPLAIN).
func (s *Store) PoolQueries() map[string]string {
	return map[string]string{
		"PoolLoads":         s.bind(s.poolLoadsQuery()),
		"OrderingKeyMember": s.bind(orderingKeyQuery),
		"PendingPools":      s.bind(s.pendingPoolsQuery()),
		"TopUpsSent":        s.bind(topUpsSentQuery()),
		"TopUpsPending":     s.bind(topUpsPendingQuery()),
	}
}

// PoolLoads implements engine.PoolStore in two statements: the current
// members of the live pool (engine.ErrNotFound when there is none), and
// the pool's non-ended transactions (transactions_pool_pending) counted
// and summed by member, status and asset. The sums are exact on both
// databases.
func (s *Store) PoolLoads(ctx context.Context, poolID string) ([]engine.PoolMemberLoad, error) {
	var members []sql.NullString
	if err := s.r.Select(ctx, &members, `SELECT m.account_id FROM pools p
		LEFT JOIN pool_members m ON m.pool_id = p.id AND m.removed IS NULL
		WHERE p.id = ? AND p.deleted IS NULL ORDER BY m.slot`, poolID); err != nil {
		return nil, s.wrap(err, "loads of pool %s: members", poolID)
	}
	if len(members) == 0 {
		return nil, s.notFound("loads of pool %s: no such pool", poolID)
	}
	rows, err := s.r.Raw().QueryxContext(ctx, s.bind(s.poolLoadsQuery()), poolID)
	if err != nil {
		return nil, s.wrap(err, "loads of pool %s", poolID)
	}
	defer rows.Close()
	loads := make([]engine.PoolMemberLoad, 0, len(members))
	index := make(map[string]int, len(members))
	for _, m := range members {
		if m.Valid {
			index[m.String] = len(loads)
			loads = append(loads, engine.PoolMemberLoad{AccountID: m.String, Reserved: map[string]*big.Int{}})
		}
	}
	for rows.Next() {
		var r loadRow
		if err := s.scanLoad(rows, &r); err != nil {
			return nil, s.wrap(err, "loads of pool %s", poolID)
		}
		i, ok := index[r.AccountID]
		if !ok {
			continue // a member that left, or the treasury's top-ups
		}
		if err := addLoad(&loads[i], &r); err != nil {
			return nil, s.errorf("loads of pool %s: %w", poolID, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err, "loads of pool %s", poolID)
	}
	return loads, nil
}

// scanLoad scans one row of PoolLoads' statement into r.
func (s *Store) scanLoad(rows interface{ Scan(...any) error }, r *loadRow) error {
	dest := []any{&r.AccountID, &r.Status, &r.Asset, &r.N, &r.Valued}
	if _, ok := s.d.(AmountSummer); ok {
		dest = append(dest, &r.Total)
	} else {
		dest = append(dest, &r.C0, &r.C1, &r.C2, &r.C3, &r.C4, &r.C5, &r.C6, &r.C7, &r.C8)
	}
	return rows.Scan(dest...)
}

// addLoad adds the group r to l.
func addLoad(l *engine.PoolMemberLoad, r *loadRow) error {
	switch engine.TxStatus(r.Status) {
	case engine.StatusSubmitted:
		l.InFlight += r.N
	default:
		l.Queued += r.N
	}
	if r.Valued == 0 || !r.Asset.Valid || r.Asset.String == "" {
		return nil
	}
	sum, err := r.sum()
	if err != nil {
		return err
	}
	if prev := l.Reserved[r.Asset.String]; prev != nil {
		sum.Add(sum, prev)
	}
	l.Reserved[r.Asset.String] = sum
	return nil
}

// sum returns the group's sum of pool_value.
func (r *loadRow) sum() (*big.Int, error) {
	if r.Total.Valid {
		v, ok := new(big.Int).SetString(r.Total.String, 10)
		if !ok {
			return nil, fmt.Errorf("sum of pool values %q is not a whole number", r.Total.String)
		}
		return v, nil
	}
	chunks := []int64{r.C0, r.C1, r.C2, r.C3, r.C4, r.C5, r.C6, r.C7, r.C8}
	base := new(big.Int).Exp(big.NewInt(10), big.NewInt(amountChunkDigits), nil)
	sum := new(big.Int)
	for k := len(chunks) - 1; k >= 0; k-- {
		sum.Mul(sum, base)
		sum.Add(sum, big.NewInt(chunks[k]))
	}
	return sum, nil
}
