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
