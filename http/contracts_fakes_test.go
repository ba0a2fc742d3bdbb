package http

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/txengine/txengine/engine"
)

// ListTransactions implements Store on the fake: filters and keyset order
// as the real stores (created, then insertion order via Created ties on id
// order of arrival is approximated by the seq the fake assigns).
func (s *fakeStore) ListTransactions(_ context.Context, f engine.TxFilter) ([]*engine.Transaction, *engine.TxCursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	type row struct {
		tx  *engine.Transaction
		seq int64
	}
	var rows []row
	for _, tx := range s.txs {
		switch {
		case f.Owner != "" && tx.Owner != f.Owner,
			len(f.Statuses) > 0 && !slices.Contains(f.Statuses, tx.Status),
			f.ContractID != "" && tx.ContractID != f.ContractID,
			f.Method != "" && tx.Method != f.Method,
			f.From != nil && tx.From != *f.From,
			f.Network != "" && tx.Network != f.Network,
			f.Since != nil && tx.Created.Before(*f.Since),
			f.Until != nil && !tx.Created.Before(*f.Until):
			continue
		}
		cp := *tx
		rows = append(rows, row{&cp, s.seq[tx.ID]})
	}
	less := func(a, b row) bool {
		if !a.tx.Created.Equal(b.tx.Created) {
			return a.tx.Created.Before(b.tx.Created)
		}
		return a.seq < b.seq
	}
	sort.Slice(rows, func(i, j int) bool {
		if f.Ascending {
			return less(rows[i], rows[j])
		}
		return less(rows[j], rows[i])
	})
	if f.After != nil {
		cur := row{&engine.Transaction{Created: f.After.Created}, f.After.Seq}
		i := 0
		for i < len(rows) && (f.Ascending && !less(cur, rows[i]) || !f.Ascending && !less(rows[i], cur)) {
			i++
		}
		rows = rows[i:]
	}
	var next *engine.TxCursor
	if len(rows) > f.Limit {
		rows = rows[:f.Limit]
		last := rows[len(rows)-1]
		next = &engine.TxCursor{Created: last.tx.Created, Seq: last.seq}
	}
	out := make([]*engine.Transaction, len(rows))
	for i, r := range rows {
		out[i] = r.tx
	}
	return out, next, nil
}

// NoteError implements Store on the fake.
func (s *fakeStore) NoteError(_ context.Context, id string, status engine.TxStatus, txErr *engine.TxError) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, found := s.txs[id]
	if !found {
		return engine.ErrNotFound
	}
	if tx.Status != status {
		return engine.ErrConflict
	}
	tx.Error = txErr
	s.writes++
	return nil
}

// CancelTransaction implements Store on the fake.
func (s *fakeStore) CancelTransaction(_ context.Context, id string, txErr *engine.TxError, ended time.Time) (*engine.Transaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, found := s.txs[id]
	if !found {
		return nil, engine.ErrNotFound
	}
	if tx.Status != engine.StatusNew && tx.Status != engine.StatusWaiting {
		return nil, engine.ErrConflict
	}
	tx.Status, tx.Error, tx.Ended = engine.StatusFailed, txErr, &ended
	s.writes++
	cp := *tx
	return &cp, nil
}
