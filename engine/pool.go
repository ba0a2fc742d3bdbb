package engine

import (
	"context"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// Bounds of a sender pool.
const (
	// MinPoolSize and MaxPoolSize bound a pool's members.
	MinPoolSize = 1
	MaxPoolSize = 256
	// MaxPoolNameLen bounds a pool's name, in characters.
	MaxPoolNameLen = 100
	// MaxOrderingKeyLen bounds a send's orderingKey, in characters.
	MaxOrderingKeyLen = 200
)

// Pool is a named group of one user's accounts on one network that sends
// as one (docs/pools.md): a send through the pool is assigned a member at
// acceptance, durably (the member is the transaction's sender).
type Pool struct {
	ID      string
	Owner   string
	Name    string
	Network string
	// Size is the number of members.
	Size int
	// TreasuryID is the id of the owner's account that funds the members
	// (gas and tokens); empty when the pool has none (the faucet funds gas
	// where one is configured).
	TreasuryID string
	Created    time.Time
	// Members are the pool's accounts by Slot (0..Size-1); filled by
	// PoolByID and ListPools.
	Members []PoolMember
	// Idempotency, when set on a pool passed to CreatePool, is stored in
	// the same database transaction. Stores never fill it on reads.
	Idempotency *IdempotencyRecord
}

// PoolMember is one account of a pool.
type PoolMember struct {
	AccountID string
	Address   common.Address
	// Slot is the member's position, 0..Size-1: resizing down removes the
	// highest slots.
	Slot int
}

// PoolMemberLoad is what a member holds that is not ended: its queue
// (new and waiting) and in-flight (submitted) transactions, and the value
// they will move, per asset ("ETH" for the value sent with calls, else the
// token's EIP-55 address for token transfers).
type PoolMemberLoad struct {
	AccountID string
	Queued    int
	InFlight  int
	// Reserved is the sum of the values of the non-ended transactions,
	// by asset.
	Reserved map[string]*big.Int
}

// PoolStore keeps sender pools. Members are ordinary accounts of the
// owner: CreatePool and ResizePool insert them like CreateAccount (each
// counted against a.Quota, faucet grants stored), in the same database
// transaction as the pool's row. Removing a member (ResizePool down,
// DeletePool) never deletes its account.
type PoolStore interface {
	// CreatePool inserts p with members (new accounts, Slot 0..len-1, not
	// default) and p.Idempotency in one database transaction.
	CreatePool(ctx context.Context, p *Pool, members []*Account) error
	// PoolByID returns the pool with its members (any owner), or
	// ErrNotFound (deleted pools too).
	PoolByID(ctx context.Context, id string) (*Pool, error)
	// ListPools returns the owner's pools with their members, oldest first.
	ListPools(ctx context.Context, owner string) ([]*Pool, error)
	// ResizePool sets the pool's size: down removes the members of the
	// highest slots (they stay accounts), up adds add (new accounts, as in
	// CreatePool, taking the next slots). ErrNotFound for an unknown pool.
	ResizePool(ctx context.Context, id string, size int, add []*Account) error
	// DeletePool deletes the pool; its members stay as ordinary accounts
	// and its transactions keep their pool id. ErrNotFound when unknown.
	DeletePool(ctx context.Context, id string) error
	// PoolLoads returns the load of every current member of the pool (a
	// member with nothing pending has zero counts).
	PoolLoads(ctx context.Context, poolID string) ([]PoolMemberLoad, error)
	// PendingPools returns the ids of the pools on network that have
	// non-ended transactions (recovery: their keeper resumes top-ups).
	PendingPools(ctx context.Context, network string) ([]string, error)
	// OrderingKeyMember returns the member holding the latest non-ended
	// transaction of (poolID, key), and false when no transaction of the
	// key is pending.
	OrderingKeyMember(ctx context.Context, poolID, key string) (string, bool, error)
	// PoolTopUps returns the pool's top-ups (its treasury's transactions
	// of the pool whose OrderingKey starts with TopUpKeyPrefix): how many
	// were sent, in any status, and the keys of those not ended. A pool
	// without a treasury has none; ErrNotFound for an unknown pool.
	PoolTopUps(ctx context.Context, poolID string) (PoolTopUps, error)
}

// PoolTopUps is what a pool's treasury has sent its members.
type PoolTopUps struct {
	// Sent counts the top-up transactions, whatever their status.
	Sent int
	// Pending are the OrderingKeys of the top-ups not ended (new,
	// waiting, submitted), in no particular order.
	Pending []string
}

// TopUpKeyPrefix starts the OrderingKey of a pool's top-ups:
// "txengine:topup:<member account id>:<asset>" (a top-up is an ordinary
// transaction from the treasury, PoolID set), "txengine:topup:batch:<asset>"
// for a batch that refills many members (TopUpBatchKey), and
// "txengine:topup:disperser" and "txengine:topup:approve:<token>" for what
// prepares batches. A member has at most one pending top-up per asset, and
// none while a batch of the asset is pending: the keeper reads the pending
// keys (PoolTopUps) before the balances and sends none for a pending key,
// so a restart never pays twice. Users' keys may not start with it.
const TopUpKeyPrefix = "txengine:topup:"

// PoolNeed is what a send through a pool needs of the member it is given:
// Value of Asset ("ETH" or a token's EIP-55 address; zero value: only gas)
// and the gas of one transaction.
type PoolNeed struct {
	Asset string
	Value *big.Int
	// OrderingKey, when set, keeps the sends of one key on one member.
	OrderingKey string
}

// PoolAssignment is the member a send through a pool is given. When no
// member can cover the need, the least loaded one is given with Wait set:
// the transaction then waits for Asset/Value (as waitForAsset does) until
// the treasury refills the member.
type PoolAssignment struct {
	Member PoolMember
	Wait   bool
	// WaitAsset and WaitValue, with Wait, are what the transaction waits
	// for: the token when the member lacks the token (its gas top-up is
	// sent first), else ETH for the value and the gas of one transaction.
	WaitAsset string
	WaitValue *big.Int
}

// PoolMemberStatus is one member as GET /pools/{id} shows it.
type PoolMemberStatus struct {
	PoolMember
	// Balance is the member's ETH balance, in wei (nil: the node did not answer).
	Balance *big.Int
	// Tokens are the member's balances of the tokens the pool sends and
	// the owner's registered ERC-20 tokens on the network, by token EIP-55
	// address (nil when the node did not answer).
	Tokens   map[string]*big.Int
	Queued   int
	InFlight int
	// Window is the member's adaptive in-flight window (0: not running).
	Window int
	// NonceHealth is "ok", or what NonceBook says of a stuck member.
	NonceHealth string
}

// PoolStatus is a pool's live state: its members' balances and loads, its
// top-ups, and why the treasury cannot refill (empty when it can).
type PoolStatus struct {
	Members []PoolMemberStatus
	// TopUps counts the top-up transactions the pool has sent (the
	// store's count: the same on every node, kept across restarts).
	TopUps int
	// Short is why the pool cannot cover what its members need (no
	// treasury, or the treasury's balance), empty when it can.
	Short string
}
