package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlite"
)

// Store is the real embedded store with the store's faults: a transient
// error before a statement, a statement too slow for its deadline, and a
// write that committed but whose answer was lost; and crashes inside a
// call. It implements what the Sender and the Follower need.
type Store struct {
	s      *sqlite.Store
	faults *Faults
	log    *slog.Logger
}

var (
	_ engine.SenderStore   = (*Store)(nil)
	_ engine.FollowerStore = (*Store)(nil)
)

// errTransient is the store's injected transient failure (a dropped
// connection, SQLITE_BUSY past its timeout).
var errTransient = errors.New("sim: database connection reset")

// before is the fate of a call before it reaches the database.
func (st *Store) before(ctx context.Context, method string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st.faults.maybeCrash(method)
	switch {
	case st.faults.roll(FaultStoreTransient, method):
		st.log.Debug("sim: store fault", "method", method, "fault", FaultStoreTransient)
		return fmt.Errorf("%s: %w", method, errTransient)
	case st.faults.roll(FaultStoreSlow, method):
		st.log.Debug("sim: store fault", "method", method, "fault", FaultStoreSlow)
		return fmt.Errorf("%s: %w", method, context.DeadlineExceeded)
	}
	return nil
}

// after is the fate of a write's answer: err, or, when it committed, a
// lost answer now and then.
func (st *Store) after(method string, err error) error {
	st.faults.maybeCrash(method)
	if err == nil && st.faults.roll(FaultStoreLost, method) {
		st.log.Debug("sim: store fault", "method", method, "fault", FaultStoreLost)
		return fmt.Errorf("%s: commit: %w", method, errTransient)
	}
	return err
}

// read is a read's call: faults before it only.
func read[T any](st *Store, ctx context.Context, method string, fn func() (T, error)) (T, error) {
	if err := st.before(ctx, method); err != nil {
		var zero T
		return zero, err
	}
	return fn()
}

// write is a write's call: faults before and after it.
func (st *Store) write(ctx context.Context, method string, fn func() error) error {
	if err := st.before(ctx, method); err != nil {
		return err
	}
	return st.after(method, fn())
}

func (st *Store) InsertTransactions(ctx context.Context, txs []*engine.Transaction) error {
	return st.write(ctx, "InsertTransactions", func() error { return st.s.InsertTransactions(ctx, txs) })
}

func (st *Store) ReadyTransactions(ctx context.Context, accountID, network string, limit int) ([]*engine.Transaction, error) {
	return read(st, ctx, "ReadyTransactions", func() ([]*engine.Transaction, error) {
		return st.s.ReadyTransactions(ctx, accountID, network, limit)
	})
}

func (st *Store) InFlight(ctx context.Context, accountID, network string) ([]*engine.Transaction, error) {
	return read(st, ctx, "InFlight", func() ([]*engine.Transaction, error) { return st.s.InFlight(ctx, accountID, network) })
}

func (st *Store) InFlightSummary(ctx context.Context, accountID, network string) (engine.InFlightSummary, error) {
	return read(st, ctx, "InFlightSummary", func() (engine.InFlightSummary, error) {
		return st.s.InFlightSummary(ctx, accountID, network)
	})
}

func (st *Store) MaxNonce(ctx context.Context, accountID, network string) (uint64, bool, error) {
	type r struct {
		n  uint64
		ok bool
	}
	v, err := read(st, ctx, "MaxNonce", func() (r, error) {
		n, ok, err := st.s.MaxNonce(ctx, accountID, network)
		return r{n, ok}, err
	})
	return v.n, v.ok, err
}

func (st *Store) MarkSubmittedMany(ctx context.Context, f engine.Fence, txs []*engine.Transaction) error {
	return st.write(ctx, "MarkSubmittedMany", func() error { return st.s.MarkSubmittedMany(ctx, f, txs) })
}

func (st *Store) FailQueued(ctx context.Context, f engine.Fence, id string, txErr *engine.TxError, ended time.Time) error {
	return st.write(ctx, "FailQueued", func() error { return st.s.FailQueued(ctx, f, id, txErr, ended) })
}

func (st *Store) ReleaseNonce(ctx context.Context, f engine.Fence, id string, txErr *engine.TxError, ended time.Time) error {
	return st.write(ctx, "ReleaseNonce", func() error { return st.s.ReleaseNonce(ctx, f, id, txErr, ended) })
}

func (st *Store) MarkReplaced(ctx context.Context, f engine.Fence, tx *engine.Transaction) error {
	return st.write(ctx, "MarkReplaced", func() error { return st.s.MarkReplaced(ctx, f, tx) })
}

func (st *Store) FailSubmitted(ctx context.Context, f engine.Fence, id string, txErr *engine.TxError, ended time.Time) error {
	return st.write(ctx, "FailSubmitted", func() error { return st.s.FailSubmitted(ctx, f, id, txErr, ended) })
}

func (st *Store) NoteError(ctx context.Context, id string, status engine.TxStatus, txErr *engine.TxError) error {
	return st.write(ctx, "NoteError", func() error { return st.s.NoteError(ctx, id, status, txErr) })
}

func (st *Store) HashesOf(ctx context.Context, ids []string) (map[string][]common.Hash, error) {
	return read(st, ctx, "HashesOf", func() (map[string][]common.Hash, error) { return st.s.HashesOf(ctx, ids) })
}

func (st *Store) MarkMined(ctx context.Context, outcomes []engine.Mined) error {
	return st.write(ctx, "MarkMined", func() error { return st.s.MarkMined(ctx, outcomes) })
}

func (st *Store) ContractByID(ctx context.Context, id string) (*engine.Contract, error) {
	return read(st, ctx, "ContractByID", func() (*engine.Contract, error) { return st.s.ContractByID(ctx, id) })
}

func (st *Store) CheckFence(ctx context.Context, f engine.Fence) error {
	_, err := read(st, ctx, "CheckFence", func() (struct{}, error) { return struct{}{}, st.s.CheckFence(ctx, f) })
	return err
}

func (st *Store) Cursor(ctx context.Context, network string) (uint64, bool, error) {
	type r struct {
		n  uint64
		ok bool
	}
	v, err := read(st, ctx, "Cursor", func() (r, error) {
		n, ok, err := st.s.Cursor(ctx, network)
		return r{n, ok}, err
	})
	return v.n, v.ok, err
}

func (st *Store) SetCursor(ctx context.Context, network string, block uint64, hash common.Hash) error {
	return st.write(ctx, "SetCursor", func() error { return st.s.SetCursor(ctx, network, block, hash) })
}

func (st *Store) ProcessedHash(ctx context.Context, network string, number uint64) (common.Hash, bool, error) {
	type r struct {
		h  common.Hash
		ok bool
	}
	v, err := read(st, ctx, "ProcessedHash", func() (r, error) {
		h, ok, err := st.s.ProcessedHash(ctx, network, number)
		return r{h, ok}, err
	})
	return v.h, v.ok, err
}

func (st *Store) SubmittedByHash(ctx context.Context, network string, hashes []common.Hash) ([]*engine.Transaction, error) {
	return read(st, ctx, "SubmittedByHash", func() ([]*engine.Transaction, error) {
		return st.s.SubmittedByHash(ctx, network, hashes)
	})
}

func (st *Store) Unmine(ctx context.Context, network string, fromBlock uint64) ([]string, error) {
	if err := st.before(ctx, "Unmine"); err != nil {
		return nil, err
	}
	ids, err := st.s.Unmine(ctx, network, fromBlock)
	return ids, st.after("Unmine", err)
}
