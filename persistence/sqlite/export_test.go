package sqlite

import (
	"context"
	"fmt"
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
