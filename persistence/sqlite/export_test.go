package sqlite

import (
	"context"
	"fmt"
	"strings"
)

// PragmaForTest returns the value of pragma on one connection of the pool
// named "write" or "read".
func PragmaForTest(ctx context.Context, s *Store, pool, pragma string) (string, error) {
	db := s.w
	if pool == "read" {
		db = s.r
	}
	var v string
	if err := db.GetContext(ctx, &v, "PRAGMA "+pragma); err != nil {
		return "", fmt.Errorf("pragma %s: %w", pragma, err)
	}
	return v, nil
}

// OpenAt opens the store at path with the migrations up to version only.
func OpenAt(ctx context.Context, path string, version int) (*Store, error) {
	return open(ctx, path, version)
}

// ExecForTest runs a statement on the write pool.
func ExecForTest(ctx context.Context, s *Store, query string, args ...any) error {
	_, err := s.w.ExecContext(ctx, query, args...)
	return err
}

// ExplainPoolQueries returns EXPLAIN QUERY PLAN of the statements of
// PoolLoads, OrderingKeyMember and PendingPools (sqlstore.PoolQueries) by
// method, the detail of each step on a line.
func ExplainPoolQueries(ctx context.Context, s *Store) (map[string]string, error) {
	plans := map[string]string{}
	for name, q := range s.Store.PoolQueries() {
		args := []any{"p"}
		if name == "OrderingKeyMember" || strings.HasPrefix(name, "TopUps") {
			args = append(args, "k")
		}
		var steps []struct {
			ID, Parent, NotUsed int
			Detail              string
		}
		if err := s.r.SelectContext(ctx, &steps, `EXPLAIN QUERY PLAN `+q, args...); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		var lines []string
		for _, st := range steps {
			lines = append(lines, st.Detail)
		}
		plans[name] = strings.Join(lines, "\n")
	}
	return plans, nil
}
