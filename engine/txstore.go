package engine

import (
	"context"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// TxStore keeps transactions and their lifecycle; it is made of the roles
// below, and each component takes only the roles it uses (SenderStore).
//
// Callback outbox rule: every method that moves a transaction to completed
// or failed (today MarkMined, MarkFailed, FailQueued, ReleaseNonce with an
// error and CancelTransaction; any method added later too) inserts, in the
// same database transaction as that change of status, one pending
// CallbackStore row per URL in the transaction's Callbacks (due at once, at
// the time the transaction ended), so that a crash can never lose a
// callback. Rows are added only when the status actually changes from
// non-terminal to terminal; a call that fails (e.g. ErrConflict) adds none.
// A transaction that completes again after a reorg (Unmine, then MarkMined)
// gets new rows: delivery is at least once, and receivers deduplicate by
// transaction id and status, or by X-Callback-Id for retries of one row.
type TxStore interface {
	TxInserter
	QueueReader
	SubmitWriter
	MinedWriter
	TxReader
	NetworkTxStore
	TxCanceller
	WaitingStore
}

// TxInserter stores accepted transactions.
type TxInserter interface {
	// InsertTransactions inserts txs (status new) in one database
	// transaction: all or none. This is the group commit of the account actor.
	InsertTransactions(ctx context.Context, txs []*Transaction) error
}

// QueueReader reads an account's queue on a network: what is ready, what
// is in flight, and the nonces and hashes it holds.
type QueueReader interface {
	// ReadyTransactions returns up to limit transactions of the account on
	// the network in status new, in acceptance order (first come, first served).
	ReadyTransactions(ctx context.Context, accountID, network string, limit int) ([]*Transaction, error)
	// InFlight returns the account's transactions on the network in status
	// submitted, by nonce.
	InFlight(ctx context.Context, accountID, network string) ([]*Transaction, error)
	// InFlightSummary tells, without reading the rows, how many of the
	// account's transactions on the network are submitted and the lowest
	// nonce in flight; zero values when none.
	InFlightSummary(ctx context.Context, accountID, network string) (InFlightSummary, error)
	// MaxNonce returns the highest nonce ever assigned to the account on the
	// network, and false when none was.
	MaxNonce(ctx context.Context, accountID, network string) (uint64, bool, error)
	// HashesOf returns every recorded version hash of each of ids
	// (tx_attempts), for the transactions that have any.
	HashesOf(ctx context.Context, ids []string) (map[string][]common.Hash, error)
}

// SubmitWriter records what a Sender does with a queued or in-flight
// transaction: nonces assigned and signed versions stored, replacements,
// releases and failures. Writes that take a Fence are fenced.
type SubmitWriter interface {
	// MarkSubmittedMany records, for every tx, nonce, gas limit, hash,
	// signed bytes and the submitted time, clears the error noted while it
	// was new (NoteError) and moves it from new to submitted, in one database transaction, all or none: ErrConflict (and
	// nothing stored) if one is no longer new. Each version is recorded as
	// an attempt (account, nonce, hash, f.Node, f.Epoch, submitted time).
	// With a non-zero fence f (the fence of the transactions' account), the
	// account's lease row is locked in the same database transaction and
	// ErrFenced is returned, nothing stored, unless f.Epoch is current.
	MarkSubmittedMany(ctx context.Context, f Fence, txs []*Transaction) error
	// MarkReplaced records a replacement of a submitted transaction: the
	// same nonce signed again with higher fees, or a filler (a 0-value
	// transfer to itself that takes the nonce). Hash, RawTx, Replaced and
	// Error (nil, or the failure a filler ends the transaction with) of tx
	// are stored; the earlier hashes stay known to SubmittedByHash,
	// since the chain may still mine an earlier version. ErrConflict if tx
	// is no longer submitted with this nonce. The version is recorded as an
	// attempt (at Replaced) and the fence is checked as in MarkSubmittedMany.
	MarkReplaced(ctx context.Context, f Fence, tx *Transaction) error
	// FailSubmitted moves a submitted transaction to failed with txErr and
	// ended, keeping its nonce, hashes and attempts (the nonce was used on
	// chain, by none of its versions: nonce_consumed). ErrConflict if it is
	// not submitted; the fence is checked as in MarkSubmittedMany.
	FailSubmitted(ctx context.Context, f Fence, id string, txErr *TxError, ended time.Time) error
	// NoteError records txErr on a transaction that is in status (new or
	// submitted) without changing its status: on a new one, why the node
	// refuses it for now (node_refused); on a submitted one, the failure it
	// ends with once a filler version takes its nonce (abandoned, or the
	// node's final refusal). ErrConflict if it is in another status.
	NoteError(ctx context.Context, id string, status TxStatus, txErr *TxError) error
	// FailQueued is the Sender's MarkFailed: it moves a transaction that is
	// still new (queued: what the Sender read) to failed with txErr and
	// ended, in one conditional update. It fails with ErrConflict if the
	// transaction is no longer new (cancelled, held, or submitted by
	// another activation) and ErrNotFound if there is none; the fence is
	// checked first, as in MarkSubmittedMany (ErrFenced, nothing changed).
	FailQueued(ctx context.Context, f Fence, id string, txErr *TxError, ended time.Time) error
	// ReleaseNonce undoes MarkSubmittedMany for a submitted transaction that
	// the node certainly rejected: nonce, gas limit, hash, signed bytes and
	// submitted time are cleared, so MaxNonce no longer counts the nonce,
	// and its recorded attempts are forgotten (no version was accepted).
	// With txErr nil the transaction goes back to new (it is submitted again
	// in its place in the queue); otherwise it becomes failed with txErr and
	// ended. It fails with ErrConflict if the transaction is not submitted,
	// and with ErrFenced (nothing changed) as MarkSubmittedMany does.
	ReleaseNonce(ctx context.Context, f Fence, id string, txErr *TxError, ended time.Time) error
}

// NonceRelease is one nonce that ReleaseNonces gives back: the
// transaction, and the error that fails it (nil: back to new).
type NonceRelease struct {
	ID  string
	Err *TxError
}

// NonceBatchReleaser is a TxStore that gives back several nonces in one
// database transaction: ReleaseNonce for each of rs, in that order, all
// or none. The sender uses it for the tail of a batch the node refused (a
// busy node refuses hundreds at once: one commit, not one each); a store
// without it is asked once per nonce.
type NonceBatchReleaser interface {
	ReleaseNonces(ctx context.Context, f Fence, rs []NonceRelease, ended time.Time) error
}

// MinedWriter records transactions found in blocks.
type MinedWriter interface {
	// MarkMined applies the outcomes in one database transaction, all or
	// none: a transaction is mined only from submitted, so it fails with
	// ErrConflict (nothing applied) if one is not submitted and ErrNotFound
	// if one does not exist. (The watcher uses MarkMinedFenced, which skips
	// what is not submitted.)
	MarkMined(ctx context.Context, outcomes []Mined) error
}

// TxReader reads transactions by id, by filter, and by dependency.
type TxReader interface {
	// TransactionByID returns the transaction with this id (any owner).
	TransactionByID(ctx context.Context, id string) (*Transaction, error)
	// ListTransactions returns up to f.Limit transactions matching f in its
	// order, and the cursor of the next page (nil when no row follows).
	ListTransactions(ctx context.Context, f TxFilter) ([]*Transaction, *TxCursor, error)
	// Statuses returns the status of each of ids that exists.
	Statuses(ctx context.Context, ids []string) (map[string]TxStatus, error)
	// Dependents returns the transactions in status new or waiting that
	// depend on any of ids, in acceptance order.
	Dependents(ctx context.Context, ids []string) ([]*Transaction, error)
}

// NetworkTxStore is what follows a network's chain: submitted
// transactions by hash, reorged blocks undone, and the accounts with
// pending work after a restart.
type NetworkTxStore interface {
	// SubmittedByHash returns the submitted transactions on the network of
	// which a broadcast version has one of hashes; the Hash of each is the
	// matching one.
	SubmittedByHash(ctx context.Context, network string, hashes []common.Hash) ([]*Transaction, error)
	// Unmine moves every transaction of the network that was mined in block
	// fromBlock or later (completed, or failed with a block number; no
	// other status is touched) back to
	// submitted, clearing block number, block hash, gas used, events, error
	// and ended, because those blocks left the chain. It returns the ids of
	// the accounts concerned (each once).
	Unmine(ctx context.Context, network string, fromBlock uint64) ([]string, error)
	// PendingAccounts returns the ids of the accounts (each once) that have
	// transactions on the network in status new, waiting or submitted:
	// those whose actors must run after a restart.
	PendingAccounts(ctx context.Context, network string) ([]string, error)
}

// TxCanceller ends a transaction that is not terminal.
type TxCanceller interface {
	// MarkFailed moves a transaction that is not terminal to failed.
	MarkFailed(ctx context.Context, id string, txErr *TxError, ended time.Time) error
	// CancelTransaction moves a transaction that is new or waiting to
	// failed with txErr and ended, in one conditional update, and returns
	// it. It fails with ErrConflict if the transaction is in another state.
	CancelTransaction(ctx context.Context, id string, txErr *TxError, ended time.Time) (*Transaction, error)
}

// WaitingStore holds back transactions whose conditions do not hold and
// lets them go.
type WaitingStore interface {
	// MarkWaiting moves a new transaction to waiting: its conditions
	// (dependsOn, waitForAsset) do not hold yet. ErrConflict if it is not
	// new. The Sender holds transactions back with it, so the fence is
	// checked as in MarkSubmittedMany (ErrFenced, nothing changed).
	MarkWaiting(ctx context.Context, f Fence, id string) error
	// MarkReady moves those of ids that are waiting back to new (their
	// conditions hold) and returns them; the others are left alone.
	MarkReady(ctx context.Context, ids []string) ([]string, error)
	// Waiting and ExpireWaiting: see ConditionStore.
	Waiting(ctx context.Context, network, after string, limit int) ([]*Transaction, error)
	ExpireWaiting(ctx context.Context, network string, now time.Time, limit int) ([]string, error)
}
