package postgres

import (
	"context"
)

// AppliedMigrations returns the versions recorded in schema_migrations.
func AppliedMigrations(ctx context.Context, s *Store) ([]int, error) {
	var vs []int
	err := s.db.SelectContext(ctx, &vs, `SELECT version FROM schema_migrations ORDER BY version`)
	return vs, err
}

// EmbeddedMigrations returns the versions of the embedded migrations.
func EmbeddedMigrations() ([]int, error) {
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	vs := make([]int, len(ms))
	for i, m := range ms {
		vs[i] = m.version
	}
	return vs, nil
}
