package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// The reads of the submit stage (engine.StageStore): each serves many
// accounts at once, one statement per chunk of ids (Dialect.List: one on
// PostgreSQL, where the ids are one array parameter; one per 500 ids on
// SQLite, which bounds the bound parameters of a statement). They read the
// transactions_queue index (account_id, network, status, seq) and, for
// the ready transactions on PostgreSQL, transactions_ready (account_id,
// network, seq) WHERE status = 'new'. MarkSubmittedGroups, the stage's one
// write, stays in the dialect packages until markSubmitted moves here.

// selectIn runs head + the condition that column is one of values + tail
// on the read pool, once per chunk of values (nothing when values is
// empty), and passes each row to fn. args are those of head; tail has none.
// A database error is wrapped with what.
func selectIn[R any](ctx context.Context, s *Store, what, column string, values []string, head, tail string, args []any, fn func(r *R) error) error {
	return s.list(column, values, func(c Chunk) error {
		var rows []R
		if err := s.r.Select(ctx, &rows, head+c.Cond+tail, append(slices.Clip(args), c.Args...)...); err != nil {
			return s.wrap(err, "%s", what)
		}
		for i := range rows {
			if err := fn(&rows[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// InFlightSummaries implements engine.StageStore: the count and lowest
// nonce of each account's submitted transactions, from the queue index and
// the rows' nonces.
func (s *Store) InFlightSummaries(ctx context.Context, network string, accountIDs []string) (map[string]engine.InFlightSummary, error) {
	out := make(map[string]engine.InFlightSummary, len(accountIDs))
	what := fmt.Sprintf("in-flight summaries of %d accounts on %s", len(accountIDs), network)
	err := selectIn(ctx, s, what, "account_id", accountIDs, `SELECT account_id, COUNT(*) AS n, MIN(nonce) AS lowest
		FROM transactions WHERE network = ? AND status = ? AND `, ` GROUP BY account_id`,
		[]any{network, string(engine.StatusSubmitted)}, func(r *sqlrow.InFlightRow) error {
			out[r.AccountID] = r.Summary()
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AccountsByID implements engine.StageStore: the accounts of ids that
// exist, read by primary key.
func (s *Store) AccountsByID(ctx context.Context, ids []string) (map[string]*engine.Account, error) {
	out := make(map[string]*engine.Account, len(ids))
	what := fmt.Sprintf("%d accounts", len(ids))
	err := selectIn(ctx, s, what, "id", ids, `SELECT `+sqlrow.AccountColumns+` FROM accounts WHERE `, ``, nil,
		func(r *accountRow) error {
			a, err := decoded(r.Account())
			if err != nil {
				return err
			}
			out[a.ID] = a
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// maxNonceRow is an account's highest nonce (MaxNonces).
type maxNonceRow struct {
	AccountID string `db:"account_id"`
	Max       int64  `db:"n"`
}

// MaxNonces implements engine.StageStore: GROUP BY account, accounts
// without a nonce left out.
func (s *Store) MaxNonces(ctx context.Context, network string, accountIDs []string) (map[string]uint64, error) {
	out := make(map[string]uint64, len(accountIDs))
	what := fmt.Sprintf("max nonces of %d accounts on %s", len(accountIDs), network)
	err := selectIn(ctx, s, what, "account_id", accountIDs, `SELECT account_id, MAX(nonce) AS n FROM transactions
		WHERE network = ? AND nonce IS NOT NULL AND `, ` GROUP BY account_id`, []any{network},
		func(r *maxNonceRow) error {
			n, err := sqlrow.Uint64Of("nonce", r.Max)
			if err != nil {
				return s.errorf("max nonce of %s on %s: %w", r.AccountID, network, err)
			}
			out[r.AccountID] = n
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// countRow is an account's count of queued transactions (CountQueuedOf).
type countRow struct {
	AccountID string `db:"account_id"`
	Count     int    `db:"n"`
}

// CountQueuedOf implements engine.StageStore: from the queue index only,
// as CountQueued.
func (s *Store) CountQueuedOf(ctx context.Context, network string, accountIDs []string) (map[string]int, error) {
	out := make(map[string]int, len(accountIDs))
	what := fmt.Sprintf("count queued transactions of %d accounts on %s", len(accountIDs), network)
	err := selectIn(ctx, s, what, "account_id", accountIDs, `SELECT account_id, COUNT(*) AS n FROM transactions
		WHERE network = ? AND status IN (?, ?) AND `, ` GROUP BY account_id`,
		[]any{network, string(engine.StatusNew), string(engine.StatusWaiting)}, func(r *countRow) error {
			out[r.AccountID] = r.Count
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readyOfAccountWhere reads the oldest new transactions of an account (its
// ?) on a network (its second ?), in seq order; readyOfAccountLimit adds
// the limit: an index scan that stops there (of transactions_queue).
const readyOfAccountWhere = sqlrow.TxSelect + `
	WHERE account_id = ? AND network = ? AND status = '` + string(engine.StatusNew) + `' ORDER BY seq`

// readyOfAccountLimit is readyOfAccountWhere with at most n rows, n written
// in the statement. SQLite (3.47 and later) treats a bound LIMIT as a constant
// when it plans a statement and marks the statement to be planned again
// whenever the parameter is bound; a statement run without being prepared
// is parsed on every run, so a bound LIMIT cost a second parse of this wide SELECT
// at every step: about a third of the read, run once per pump, that is
// about once per transfer when many accounts send a few each (profiled:
// 400 accounts × 10 transfers on the embedded default).
func readyOfAccountLimit(n int) string {
	return readyOfAccountWhere + ` LIMIT ` + strconv.Itoa(n)
}

// ReadyReader is the optional statement of a Dialect that reads the ready
// transactions of many accounts in one statement: into dest (a pointer to
// a slice of rows of sqlrow.TxSelect's columns) the rows of readyOfAccountLimit
// (limits[i] > 0) of each accountIDs[i], in seq order overall.
// Without it, the store runs readyOfAccountLimit per
// account in one read transaction: SQLite runs in process, so a statement
// per account costs no round trip, and it has no LATERAL join; a
// ROW_NUMBER() window over the accounts would read every new row of each
// account (a deep queue whole) to keep its first limit.
type ReadyReader interface {
	SelectReadyOf(ctx context.Context, c Conn, dest any, network string, accountIDs []string, limits []int) error
}

// ReadyTransactionsOf implements engine.StageStore: the ready transactions
// of each account with a limit > 0 (ReadyReader, or readyOfAccountLimit per
// account), as one snapshot of the database. Accounts without any are
// absent from the result.
func (s *Store) ReadyTransactionsOf(ctx context.Context, network string, limits map[string]int) (map[string][]*engine.Transaction, error) {
	out := make(map[string][]*engine.Transaction, len(limits))
	ids := make([]string, 0, len(limits))
	lims := make([]int, 0, len(limits))
	for id, n := range limits {
		if n > 0 {
			ids, lims = append(ids, id), append(lims, n)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	if rr, ok := s.d.(ReadyReader); ok {
		var rows []txRow
		if err := rr.SelectReadyOf(ctx, s.r, &rows, network, ids, lims); err != nil {
			return nil, s.wrap(err, "ready transactions of %d accounts on %s", len(ids), network)
		}
		txs, err := decoded(sqlrow.Transactions(rows))
		if err != nil {
			return nil, err
		}
		// In seq order overall, hence in seq order within each account.
		for _, tx := range txs {
			out[tx.AccountID] = append(out[tx.AccountID], tx)
		}
		return out, nil
	}
	err := s.readTx(ctx, func(tx Conn) error {
		st := tx.stmts() // one parse per limit, not per account
		defer st.Close()
		for i, id := range ids {
			var rows []txRow
			if err := st.Select(ctx, &rows, readyOfAccountLimit(lims[i]), id, network); err != nil {
				return s.wrap(err, "ready transactions of %s on %s", id, network)
			}
			txs, err := decoded(sqlrow.Transactions(rows))
			if err != nil {
				return err
			}
			if len(txs) > 0 {
				out[id] = txs
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
