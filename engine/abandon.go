package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// AbandonStore is what Abandon needs of the store.
type AbandonStore interface {
	TransactionByID(ctx context.Context, id string) (*Transaction, error)
	CancelTransaction(ctx context.Context, id string, txErr *TxError, ended time.Time) (*Transaction, error)
	NoteError(ctx context.Context, id string, status TxStatus, txErr *TxError) error
}

// AbandonedError is the failure of a transaction an operator abandoned.
func AbandonedError() *TxError {
	return &TxError{Code: TxAbandoned, Message: "abandoned by an operator"}
}

// Abandon is an operator's way out of a transaction that does not end: one
// still new or waiting fails at once with TxAbandoned (ended is true); one
// submitted gets TxAbandoned noted, and its account's sender fills its
// nonce with a 0-value transfer to itself at its next check, so later
// nonces proceed: it fails abandoned when the filler is mined (or
// completes, if a version of its own is mined first). It returns the
// transaction as stored afterwards. A transaction already completed or
// failed is an ErrConflict (wrapped).
func Abandon(ctx context.Context, store AbandonStore, id string, now time.Time) (tx *Transaction, ended bool, err error) {
	for range 3 { // the status may move between the read and the write
		tx, err := store.TransactionByID(ctx, id)
		if err != nil {
			return nil, false, fmt.Errorf("abandon %s: %w", id, err)
		}
		switch tx.Status {
		case StatusNew, StatusWaiting:
			cancelled, err := store.CancelTransaction(ctx, id, AbandonedError(), now)
			if errors.Is(err, ErrConflict) {
				continue
			}
			if err != nil {
				return nil, false, fmt.Errorf("abandon %s: %w", id, err)
			}
			return cancelled, true, nil
		case StatusSubmitted:
			if tx.Error != nil && tx.Error.Code == TxAbandoned {
				return tx, false, nil // asked before: the filler is on its way
			}
			err := store.NoteError(ctx, id, StatusSubmitted, AbandonedError())
			if errors.Is(err, ErrConflict) {
				continue
			}
			if err != nil {
				return nil, false, fmt.Errorf("abandon %s: %w", id, err)
			}
			tx.Error = AbandonedError()
			return tx, false, nil
		default:
			return tx, false, Errorf(CodeConflict, "", "transaction %s is %s: only a transaction that has not ended can be abandoned", id, tx.Status)
		}
	}
	return nil, false, Errorf(CodeConflict, "", "transaction %s changed status while being abandoned; try again", id)
}
