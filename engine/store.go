package engine

import (
	"context"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// The store is split into small role interfaces; each component receives only
// the roles it uses. persistence/sqlite and persistence/postgres implement all
// of them (Store). Every method returns ErrNotFound (possibly wrapped) when the
// row it reads does not exist and ErrConflict when a unique key is taken.

// UserStore keeps users and the hashes of their API tokens.
type UserStore interface {
	// CreateUser inserts u and, when tokenHash is not nil, a token for it,
	// in one database transaction. When account is not nil it is inserted
	// too (as the user's default account).
	CreateUser(ctx context.Context, u *User, tokenHash []byte, account *Account) error
	// UserByTokenHash returns the user holding the token with this hash.
	UserByTokenHash(ctx context.Context, tokenHash []byte) (*User, error)
	// UserByID returns the user with this id.
	UserByID(ctx context.Context, id string) (*User, error)
	// AddToken stores one more token hash for the user, and idem (when not
	// nil) in the same database transaction.
	AddToken(ctx context.Context, userID string, tokenHash []byte, idem *IdempotencyRecord) error
	// FirstOperator returns the earliest created operator user.
	FirstOperator(ctx context.Context) (*User, error)
}

// IdempotencyStore looks up idempotency records. Records are written by the
// creating methods (CreateUser, AddToken, CreateAccount, CreateContract,
// InsertTransactions) in their own database transaction; an expired record
// of the same (user, key) is replaced there, a live one is ErrConflict.
type IdempotencyStore interface {
	// IdempotencyRecord returns the record of (userID, key), expired or not.
	IdempotencyRecord(ctx context.Context, userID, key string) (*IdempotencyRecord, error)
	// IdempotencyRecords returns the records of userID's keys that exist,
	// expired or not, by key (in one read).
	IdempotencyRecords(ctx context.Context, userID string, keys []string) (map[string]*IdempotencyRecord, error)
}

// UserAdminStore changes users after their creation.
type UserAdminStore interface {
	// SetUserLimits stores the rate limits of user id (nil: the defaults).
	SetUserLimits(ctx context.Context, id string, limits *RateLimits) error
}

// AccountsReader reads many accounts at once: the submit stage's merged
// reads and the HTTP account cache's merged misses.
type AccountsReader interface {
	// AccountsByID is AccountByID of each of ids, in one statement; an id
	// without an account is absent.
	AccountsByID(ctx context.Context, ids []string) (map[string]*Account, error)
}

// AccountStore keeps custodial accounts.
type AccountStore interface {
	AccountsReader
	// CreateAccount inserts a. When a.Default is true, the owner's other
	// accounts stop being default in the same database transaction.
	CreateAccount(ctx context.Context, a *Account) error
	// AccountByID returns the account with this id (any owner).
	AccountByID(ctx context.Context, id string) (*Account, error)
	// AccountByAddress returns the account with this address (any owner).
	AccountByAddress(ctx context.Context, addr common.Address) (*Account, error)
	// DefaultAccount returns the owner's default account.
	DefaultAccount(ctx context.Context, owner string) (*Account, error)
	// ListAccounts returns the owner's accounts, oldest first.
	ListAccounts(ctx context.Context, owner string) ([]*Account, error)
	// SetDefaultAccount makes account id the owner's only default account.
	SetDefaultAccount(ctx context.Context, owner, id string) error
}

// ContractFilter selects contracts in ListContracts. Empty fields match all.
type ContractFilter struct {
	Owner   string
	Network string
	// Text matches name or address, case-insensitively.
	Text string
	// Types keeps only contracts whose BWType is one of these.
	Types []string
}

// ContractReader reads one registered contract.
type ContractReader interface {
	// ContractByID returns the contract with this id (any owner).
	ContractByID(ctx context.Context, id string) (*Contract, error)
}

// ContractStore keeps registered contracts.
type ContractStore interface {
	// CreateContract inserts c.
	CreateContract(ctx context.Context, c *Contract) error
	ContractReader
	// ListContracts returns the contracts matching f, oldest first.
	ListContracts(ctx context.Context, f ContractFilter) ([]*Contract, error)
}

// Mined is the outcome of one transaction found in a block.
type Mined struct {
	ID     string
	Status TxStatus // StatusCompleted or StatusFailed
	// Hash is the hash of the version that was mined (a replaced
	// transaction has several); zero keeps the stored one.
	Hash        common.Hash
	BlockNumber uint64
	BlockHash   common.Hash
	GasUsed     uint64
	Events      []Event
	Error       *TxError
	Ended       time.Time
}

// TxCursor is a position in a transaction listing: the keyset (created,
// acceptance order) of the last row of a page.
type TxCursor struct {
	Created time.Time
	Seq     int64
}

// TxFilter selects and orders transactions in ListTransactions. Empty
// fields match all.
type TxFilter struct {
	// Owner is the user that requested the transactions (required by the API).
	Owner      string
	Statuses   []TxStatus
	ContractID string
	Method     string
	From       *common.Address
	Network    string
	// Pool keeps the transactions sent through this pool.
	Pool string
	// Since (inclusive) and Until (exclusive) bound Created.
	Since, Until *time.Time
	// Ascending sorts oldest first; the default is newest first. Ties on
	// Created are broken by acceptance order in the same direction.
	Ascending bool
	// After continues a listing after this position (exclusive).
	After *TxCursor
	// Limit bounds the page; it must be positive.
	Limit int
}

// InFlightSummary is what InFlightSummary returns.
type InFlightSummary struct {
	Count int
	// LowestNonce is the lowest nonce in flight (0 when none).
	LowestNonce uint64
}

// SubmitGroup is the signed transactions of one account's pump, with the
// fence of the account's activation (zero: single-node mode).
type SubmitGroup struct {
	Fence Fence
	Txs   []*Transaction
}

// StageStore is what a SubmitStage needs of the store beyond TxStore: the
// reads of many accounts' pumps on one network in one statement each, and
// their signed rows in one database transaction. Both persistence backends
// implement it.
type StageStore interface {
	// InFlightSummaries is InFlightSummary of each of accountIDs on network,
	// in one statement; an account with nothing in flight is absent.
	InFlightSummaries(ctx context.Context, network string, accountIDs []string) (map[string]InFlightSummary, error)
	// ReadyTransactionsOf is ReadyTransactions of each account of limits
	// (account id to limit, > 0) on network, in one statement: the account's
	// oldest transactions in status new, in acceptance order, at most its
	// limit. An account with none is absent.
	ReadyTransactionsOf(ctx context.Context, network string, limits map[string]int) (map[string][]*Transaction, error)
	// CountQueuedOf is CountQueued of each of accountIDs on network, in one
	// statement; an account with nothing queued is absent.
	CountQueuedOf(ctx context.Context, network string, accountIDs []string) (map[string]int, error)
	AccountsReader
	// MaxNonces is MaxNonce of each of accountIDs on network, in one
	// statement; an account that was never assigned a nonce is absent.
	MaxNonces(ctx context.Context, network string, accountIDs []string) (map[string]uint64, error)
	// MarkSubmittedGroups is MarkSubmittedMany of every group (each with
	// its own fence) in one database transaction, all or none: on the
	// first group that fails (ErrConflict, ErrNotFound, ErrFenced, as
	// MarkSubmittedMany) nothing is stored and its error is returned.
	MarkSubmittedGroups(ctx context.Context, groups []SubmitGroup) error
}

// NetworkStore keeps per-network bookkeeping of the watcher.
type NetworkStore interface {
	// Cursor returns the last block the watcher processed on network, and
	// false when it never processed one.
	Cursor(ctx context.Context, network string) (uint64, bool, error)
	// SetCursor records block, whose hash is hash, as the last processed
	// one (it may go back, after a reorg), and remembers the hash so that a
	// later Poll can tell whether the block is still on the chain. Hashes
	// of blocks more than ProcessedRetention below block are forgotten.
	SetCursor(ctx context.Context, network string, block uint64, hash common.Hash) error
	// ProcessedHash returns the hash recorded for block number on network,
	// and false when none is (never processed, or forgotten).
	ProcessedHash(ctx context.Context, network string, number uint64) (common.Hash, bool, error)
}

// ProcessedRetention is how many processed block hashes a store keeps per
// network: the deepest reorg the watcher can detect.
const ProcessedRetention = 256

// Fence identifies one activation of an account grain: the lease epoch it
// holds (AcquireAccountLease). The zero Fence (Epoch 0) is single-node
// mode: nothing is checked.
type Fence struct {
	AccountID, Node string
	Epoch           int64
}

// IsZero reports whether f is the zero Fence of single-node mode.
func (f Fence) IsZero() bool { return f.Epoch == 0 }

// FenceChecker checks an activation's fence.
type FenceChecker interface {
	// CheckFence returns ErrFenced (wrapped) when f's epoch is not the
	// current epoch of its account's lease, or the account has none; nil
	// for the zero Fence.
	CheckFence(ctx context.Context, f Fence) error
}

// LeaseStore keeps the leases of cluster mode (docs/cluster.md): one
// fencing lease per account, whose epoch orders the activations of the
// account's grain, and one lease with expiry per network, held by the node
// that runs the network's watcher.
type LeaseStore interface {
	// AcquireAccountLease takes the account's lease for a new activation
	// on node: the epoch goes up by one (1 on the first activation), in
	// one atomic statement, and the activation's Fence is returned. A
	// fenced write of an earlier activation that is in progress finishes
	// first (it holds the lease row); every later one gets ErrFenced.
	AcquireAccountLease(ctx context.Context, accountID, node string) (Fence, error)
	FenceChecker
	// AcquireNetworkLease takes the network's lease for node for ttl when
	// it is free or expired, or renews it when node holds it. held reports
	// whether node holds it now, epoch is the lease's epoch then (0 when
	// not held): it goes up when the holder changes and when a lease that
	// had expired (or was released) is taken again, and stays the same
	// when the holder renews in time. PostgreSQL measures expiry with the
	// database's clock, SQLite with this process's. ttl must be positive.
	AcquireNetworkLease(ctx context.Context, network, node string, ttl time.Duration) (held bool, epoch int64, err error)
	// ReleaseNetworkLease expires the network's lease now if node holds
	// it, so that another node may take it at once; otherwise it does
	// nothing.
	ReleaseNetworkLease(ctx context.Context, network, node string) error
}

// NetworkFence identifies one tenure of a network's lease
// (AcquireNetworkLease): the writes of the watcher that holds it carry it.
// The zero NetworkFence (Epoch 0) is single-node mode: nothing is checked.
type NetworkFence struct {
	Network, Node string
	Epoch         int64
}

// IsZero reports whether f is the zero NetworkFence of single-node mode.
func (f NetworkFence) IsZero() bool { return f.Epoch == 0 }

// FencedFollowerStore is the watcher's writes (FollowerStore's) fenced by
// the network lease. With a non-zero fence f, each method checks in its
// database transaction (holding the lease row, so that a new tenure cannot
// begin meanwhile) that f.Node holds f.Network's lease at f.Epoch and that
// the lease has not expired by the database's clock; otherwise it returns
// ErrLeaseLost (wrapped) and writes nothing. The zero fence checks nothing.
type FencedFollowerStore interface {
	// SetCursorFenced is SetCursor of f.Network, fenced.
	SetCursorFenced(ctx context.Context, f NetworkFence, block uint64, hash common.Hash) error
	// MarkMinedFenced is MarkMined of f.Network, fenced, that applies the
	// outcomes whose transactions are still submitted and leaves the
	// others unchanged: it returns their ids (skipped) instead of failing,
	// so the watcher walks on. ErrNotFound (nothing applied) if one does
	// not exist.
	MarkMinedFenced(ctx context.Context, f NetworkFence, outcomes []Mined) (skipped []string, err error)
	// UnmineFenced is Unmine of f.Network, fenced.
	UnmineFenced(ctx context.Context, f NetworkFence, fromBlock uint64) ([]string, error)
}

// Attempt is one broadcast version of a transaction, as recorded by
// MarkSubmittedMany and MarkReplaced.
type Attempt struct {
	TxID      string
	AccountID string
	Network   string
	Nonce     uint64
	Hash      common.Hash
	// Node and Epoch are those of the Fence of the write (empty and 0 in
	// single-node mode).
	Node  string
	Epoch int64
	// Created is when the version was signed (zero for versions recorded
	// before attempts carried it).
	Created time.Time
}

// AttemptStore reads the recorded broadcast versions.
type AttemptStore interface {
	// Attempts returns every recorded version of the account's
	// transactions on the network, by nonce, then time. Versions of a
	// released nonce are forgotten (ReleaseNonce).
	Attempts(ctx context.Context, accountID, network string) ([]Attempt, error)
}

// Buckets of the sliding rate windows. A window of length L counts the
// requests in the buckets that overlap (now-L, now]: the current bucket and
// the L/bucket before it. That over-counts by at most one bucket, never
// under-counts, so no period of length L ever holds more than the limit
// (fixed windows allowed twice the limit across a boundary).
const (
	// RateSecondBucket is the bucket of the one-second window.
	RateSecondBucket = 100 * time.Millisecond
	// RateHourBucket is the bucket of the one-hour window.
	RateHourBucket = time.Minute
)

// RateWindowCount is the state of one sliding window after CountRequest.
type RateWindowCount struct {
	// Count is the number of requests the window holds.
	Count int
	// Oldest is the start of the oldest bucket holding any of them (zero
	// when Count is 0); they leave the window at Oldest + window length +
	// bucket.
	Oldest time.Time
}

// Uncount takes back the request that a refused CountRequest counted in
// the window's current bucket.
func (w RateWindowCount) Uncount() RateWindowCount {
	w.Count--
	if w.Count <= 0 {
		return RateWindowCount{}
	}
	return w
}

// RateCounterStore counts requests per key (a user, or whatever the
// limiter budgets on) in sliding windows shared by every node: the
// cluster-wide rate limits.
type RateCounterStore interface {
	// CountRequest counts one request of key at now in the sliding second
	// and hour windows (buckets RateSecondBucket and RateHourBucket), only
	// if both hold fewer than perSecond and perHour requests: a refused
	// request does not count. It returns both windows after the call and
	// whether the request was counted. Calls for one key are serialised.
	CountRequest(ctx context.Context, key string, now time.Time, perSecond, perHour int) (second, hour RateWindowCount, allowed bool, err error)
	// PruneRateCounters removes the buckets no window counts in any more
	// at now: second buckets older than a minute, hour buckets older than
	// two hours (margins for clocks of nodes that differ).
	PruneRateCounters(ctx context.Context, now time.Time) error
}

// FaucetStore reads the faucet grants that CreateAccount and CreateUser
// record (Account.Faucet).
type FaucetStore interface {
	// FaucetGrantsSince returns, per network, how many faucet grants the
	// accounts of root's tree had since since.
	FaucetGrantsSince(ctx context.Context, root string, since time.Time) (map[string]int, error)
}

// Store is everything a persistence backend implements.
type Store interface {
	UserStore
	FaucetStore
	AccountStore
	ContractStore
	TxStore
	NetworkStore
	IdempotencyStore
	UserAdminStore
	TokenStore
	TransferIndexStore
	CallbackStore
	OutboxPruner
	LeaseStore
	FencedFollowerStore
	AttemptStore
	RateCounterStore
	SubscriptionStore
	SubscriptionProcessorStore
	PoolStore
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}
