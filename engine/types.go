package engine

import (
	"encoding/json"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// User is an API user. Tokens are stored elsewhere, only as hashes.
type User struct {
	ID string
	// Owner is the id of the user that created this one; empty when ownerless.
	Owner string
	// Root is the id of the user whose budget this one shares (rate
	// limits, caps, faucet): its own id when ownerless, an operator or
	// created by one, else its owner's root. Stores fill it on reads; an
	// empty Root passed to CreateUser means the user's own id.
	Root string
	// Operator users administer the service and are exempt from rate limits.
	Operator bool
	// CallbackSecret is the sealed key of the HMAC signatures of this
	// user's callbacks (keystore.KeySealer.NewCallbackSecret, OpenCallbackSecret).
	CallbackSecret []byte
	Created        time.Time
	// Limits are the per-user rate limits an operator set; nil means the
	// service defaults apply. A zero field means the configured default for
	// that window.
	Limits *RateLimits
	// RootLimits are the Limits of the user's Root, read with the user by
	// UserByTokenHash (nil: none, or not read).
	RootLimits *RateLimits
	// Idempotency, when set on a user passed to CreateUser, is stored in
	// the same database transaction. Stores never fill it on reads.
	Idempotency *IdempotencyRecord
	// Quota, when set on a user passed to CreateUser, is checked in the
	// same database transaction (see Quota). Stores never fill it on reads.
	Quota *Quota
}

// RateLimits are per-user request limits (PUT /users/{id}/limits).
type RateLimits struct {
	PerSecond int
	PerHour   int
}

// Account is a custodial blockchain account. Its private key is stored only
// encrypted (EncryptedKey) and is never returned by the API.
type Account struct {
	ID           string
	Owner        string
	Address      common.Address
	Default      bool
	EncryptedKey []byte
	// KMSKeyID, when set, is the ARN of the AWS KMS key that holds the
	// account's key (EncryptedKey is then empty): see keystore.KMSSigner.
	KMSKeyID string
	Created  time.Time
	// Idempotency, when set on an account passed to CreateAccount, is
	// stored in the same database transaction. Stores never fill it on reads.
	Idempotency *IdempotencyRecord
	// Quota, when set on an account passed to CreateAccount, is checked in
	// the same database transaction (see Quota). CreateUser checks the
	// user's. Stores never fill it on reads.
	Quota *Quota
	// Faucet lists the networks whose faucet the creation asks to fund the
	// account, each with whether it is granted (see FaucetGrant). Set on
	// an account passed to CreateAccount or CreateUser; stores never fill
	// it on reads.
	Faucet []FaucetGrant
}

// Contract is a contract registered by a user on one network.
type Contract struct {
	ID      string
	Owner   string
	Name    string
	Network string
	Address common.Address
	// ABI is the JSON ABI as registered.
	ABI json.RawMessage
	// BWType and BWVer are set for built-in contract types (erc20, ...).
	BWType string
	BWVer  string
	// Block is the chain head when the contract was registered.
	Block   uint64
	Created time.Time
	// Idempotency, when set on a contract passed to CreateContract, is
	// stored in the same database transaction. Stores never fill it on reads.
	Idempotency *IdempotencyRecord
}

// IsToken reports whether the contract is of a token type served under /tokens.
func (c *Contract) IsToken() bool {
	return c.BWType == TypeERC20 || c.BWType == TypeERC20Security
}

// Built-in contract types (the `type` of PUT /contracts, `bwtype` of a contract).
const (
	TypeERC20         = "erc20"
	TypeERC20Security = "erc20-security"
	TypeERC721        = "erc721"
)

// TxStatus is the lifecycle state of a transaction.
type TxStatus string

// Transaction states (docs/api-decisions.md#transactions).
const (
	StatusNew       TxStatus = "new"
	StatusWaiting   TxStatus = "waiting"
	StatusSubmitted TxStatus = "submitted"
	StatusCompleted TxStatus = "completed"
	StatusFailed    TxStatus = "failed"
)

// Terminal reports whether no further transition is possible (except a reorg).
func (s TxStatus) Terminal() bool { return s == StatusCompleted || s == StatusFailed }

// Transaction is one blockchain write requested through the API.
type Transaction struct {
	ID string
	// Owner is the id of the user that requested the transaction.
	Owner     string
	AccountID string
	Network   string
	From      common.Address

	ContractID      string
	ContractAddress common.Address
	ContractName    string
	ContractBWType  string

	Method     string
	Parameters []any
	// Data is the ABI-encoded call data.
	Data  []byte
	Value *big.Int

	Status    TxStatus
	Created   time.Time
	Submitted *time.Time
	Ended     *time.Time

	Nonce    *uint64
	GasLimit uint64
	// Replaced is when the transaction was last replaced (same nonce,
	// higher fees) because it was not mined in time.
	Replaced    *time.Time
	Hash        *common.Hash
	RawTx       []byte
	BlockNumber *uint64
	BlockHash   *common.Hash
	GasUsed     *uint64
	Events      []Event
	Error       *TxError

	Callbacks    []string
	DependsOn    []string
	WaitForAsset string
	WaitForValue *big.Int
	// WaitUntil is the deadline of the conditions (waitTimeout): a
	// transaction still waiting then fails with TxExpired.
	WaitUntil *time.Time

	// PoolID is the sender pool the transaction was sent through (its
	// member is From); empty when sent from an account. OrderingKey is the
	// send's orderingKey (a pool's sends of one key go to one member, in
	// order); empty when none.
	PoolID      string
	OrderingKey string
	// PoolAsset and PoolValue are what a send through a pool needs of its
	// member (PoolNeed: "ETH" or a token's EIP-55 address, and the value);
	// PoolLoads sums them into PoolMemberLoad.Reserved. Empty/nil otherwise.
	PoolAsset string
	PoolValue *big.Int

	// Idempotency, when set on a transaction passed to InsertTransactions,
	// is stored in the same database transaction (the group commit). Stores
	// never fill it on reads.
	Idempotency *IdempotencyRecord

	// ABI is the JSON ABI the follower decodes the transaction's events
	// with when ContractID is empty (a direct send to an unregistered
	// contract). Nil for transactions of registered contracts, whose ABI
	// is read from the contract.
	ABI json.RawMessage
}

// Event is one decoded log of a transaction or of a contract.
type Event struct {
	Event           string         `json:"event"`
	Signature       string         `json:"signature"`
	Address         common.Address `json:"address"`
	BlockNumber     uint64         `json:"blockNumber"`
	BlockHash       common.Hash    `json:"blockHash"`
	TransactionHash common.Hash    `json:"transactionHash"`
	LogIndex        uint           `json:"logIndex"`
	ReturnValues    map[string]any `json:"returnValues"`
}

// MarshalJSON encodes the event with its address EIP-55 checksummed (the
// API returns every address checksummed; common.Address encodes lower case).
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	return json.Marshal(struct {
		plain
		Address string `json:"address"`
	}{plain: plain(e), Address: e.Address.Hex()})
}
