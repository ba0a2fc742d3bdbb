package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
	"github.com/txengine/txengine/persistence/sqlstore"
)

var _ sqlstore.IdempotencyWriter = dialect{}

// idempotencyChunk bounds the records of one statement (six parameters
// each, within SQLite's bound on a statement's parameters).
const idempotencyChunk = 500

// InsertIdempotency implements sqlstore.IdempotencyWriter with one upsert
// per idempotencyChunk records: a record whose (user, key) holds an
// expired record replaces it (ON CONFLICT … DO UPDATE where the stored one
// is expired); one whose (user, key) holds a live record is not written,
// and then the call is engine.ErrConflict, which rolls the caller's
// transaction back, as the unique violation of a plain insert did.
// RETURNING counts what was written. It replaces a delete of the expired
// record and an insert per record: 128 statements of a group commit of 64
// requests with keys, in the one writer's transaction
// (BenchmarkInsertWithKeys).
func (dialect) InsertIdempotency(ctx context.Context, tx sqlstore.Conn, rs []*engine.IdempotencyRecord) error {
	for start := 0; start < len(rs); start += idempotencyChunk {
		chunk := rs[start:min(start+idempotencyChunk, len(rs))]
		args := make([]any, 0, 6*len(chunk)+1)
		for _, r := range chunk {
			args = append(args, r.UserID, r.Key, r.RequestHash, r.Status, r.Body, r.Created.UnixMilli())
		}
		args = append(args, engine.IdempotencyTTL.Milliseconds())
		var written []int
		if err := tx.Select(ctx, &written, `INSERT INTO idempotency_keys (`+sqlrow.IdempotencyColumns+`)
			VALUES (?, ?, ?, ?, ?, ?)`+strings.Repeat(`, (?, ?, ?, ?, ?, ?)`, len(chunk)-1)+`
			ON CONFLICT (user_id, key) DO UPDATE SET request_hash = excluded.request_hash, status = excluded.status,
				body = excluded.body, created = excluded.created
			WHERE idempotency_keys.created <= excluded.created - ?
			RETURNING 1`, args...); err != nil {
			return err
		}
		if len(written) < len(chunk) {
			return fmt.Errorf("%d of %d idempotency keys are held by live records: %w", len(chunk)-len(written), len(chunk), engine.ErrConflict)
		}
	}
	return nil
}
