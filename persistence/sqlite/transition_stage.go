package sqlite

// TRANSITION: what stage.go still calls until it moves to sqlstore (whose
// submitGroups is MarkSubmittedGroups' body, and Dialect.List the chunks
// of inChunks): delete this file then.

import (
	"context"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
)

// markSubmitted marks one transaction submitted inside dbtx (sqlstore's).
func (s *Store) markSubmitted(ctx context.Context, dbtx *sqlx.Tx, f engine.Fence, tx *engine.Transaction) error {
	return s.MarkSubmittedIn(ctx, dbtx, f, tx)
}

// inChunks calls fn for each chunk of at most listChunk ids with the
// chunk's placeholder list "(?, ?, ...)" and its arguments.
func inChunks(ids []string, fn func(in string, args []any) error) error {
	for start := 0; start < len(ids); start += listChunk {
		chunk := ids[start:min(start+listChunk, len(ids))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		if err := fn(`(?`+strings.Repeat(`, ?`, len(chunk)-1)+`)`, args); err != nil {
			return err
		}
	}
	return nil
}
