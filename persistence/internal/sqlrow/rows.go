package sqlrow

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// UserColumns are the columns of users that CreateUser inserts.
const UserColumns = `id, owner, operator, callback_secret, created`

// UserSelect are the columns of users a read returns (into a User).
const UserSelect = UserColumns + `, limit_per_second, limit_per_hour, root_id`

// User is a row of users.
type User[T TimeColumn] struct {
	ID             string         `db:"id"`
	Owner          sql.NullString `db:"owner"`
	Operator       bool           `db:"operator"`
	CallbackSecret []byte         `db:"callback_secret"`
	Created        T              `db:"created"`
	PerSecond      sql.NullInt64  `db:"limit_per_second"`
	PerHour        sql.NullInt64  `db:"limit_per_hour"`
	// Root is NULL for a user that is its own budget root.
	Root sql.NullString `db:"root_id"`
	// RootPerSecond and RootPerHour are the limits of the root, read by
	// UserByTokenHash only (UserByTokenSelect).
	RootPerSecond sql.NullInt64 `db:"root_limit_per_second"`
	RootPerHour   sql.NullInt64 `db:"root_limit_per_hour"`
}

// NotNullBytes is b, or an empty slice for nil (which would be NULL).
func NotNullBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// UserByTokenSelect is the statement of UserByTokenHash, the placeholder of
// the token hash left to the dialect: the user with its root's limits.
const UserByTokenSelect = `SELECT u.id, u.owner, u.operator, u.callback_secret, u.created, u.root_id,
		u.limit_per_second, u.limit_per_hour,
		r.limit_per_second AS root_limit_per_second, r.limit_per_hour AS root_limit_per_hour
		FROM api_tokens t JOIN users u ON u.id = t.user_id LEFT JOIN users r ON r.id = u.root_id
		WHERE t.revoked IS NULL AND t.hash = `

// User converts the row.
func (r *User[T]) User() (*engine.User, error) {
	created, err := requiredTime("created", r.Created)
	if err != nil {
		return nil, fmt.Errorf("user %s: %w", r.ID, err)
	}
	u := &engine.User{
		ID:             r.ID,
		Owner:          r.Owner.String,
		Operator:       r.Operator,
		CallbackSecret: r.CallbackSecret,
		Created:        created,
		Root:           r.Root.String,
	}
	if u.Root == "" {
		u.Root = u.ID
	}
	if r.PerSecond.Valid && r.PerHour.Valid {
		u.Limits = &engine.RateLimits{PerSecond: int(r.PerSecond.Int64), PerHour: int(r.PerHour.Int64)}
	}
	if r.RootPerSecond.Valid && r.RootPerHour.Valid {
		u.RootLimits = &engine.RateLimits{PerSecond: int(r.RootPerSecond.Int64), PerHour: int(r.RootPerHour.Int64)}
	}
	return u, nil
}

// AccountColumns are the columns of accounts, inserted and read.
const AccountColumns = `id, owner, address, is_default, encrypted_key, kms_key_id, created`

// Account is a row of accounts.
type Account[T TimeColumn] struct {
	ID           string         `db:"id"`
	Owner        string         `db:"owner"`
	Address      string         `db:"address"`
	Default      bool           `db:"is_default"`
	EncryptedKey []byte         `db:"encrypted_key"`
	KMSKeyID     sql.NullString `db:"kms_key_id"`
	Created      T              `db:"created"`
}

// Account converts the row.
func (r *Account[T]) Account() (*engine.Account, error) {
	addr, err := FromAddress("address", r.Address)
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", r.ID, err)
	}
	created, err := requiredTime("created", r.Created)
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", r.ID, err)
	}
	return &engine.Account{
		ID:           r.ID,
		Owner:        r.Owner,
		Address:      addr,
		Default:      r.Default,
		EncryptedKey: r.EncryptedKey,
		KMSKeyID:     r.KMSKeyID.String,
		Created:      created,
	}, nil
}

// Accounts converts rows, in order.
func Accounts[T TimeColumn](rows []Account[T]) ([]*engine.Account, error) {
	return Convert(rows, (*Account[T]).Account)
}

// ContractColumns are the columns of contracts, inserted and read.
const ContractColumns = `id, owner, name, network, address, abi, bwtype, bwver, block, created`

// Contract is a row of contracts.
type Contract[T TimeColumn] struct {
	ID      string         `db:"id"`
	Owner   string         `db:"owner"`
	Name    string         `db:"name"`
	Network string         `db:"network"`
	Address string         `db:"address"`
	ABI     sql.NullString `db:"abi"`
	BWType  string         `db:"bwtype"`
	BWVer   string         `db:"bwver"`
	Block   int64          `db:"block"`
	Created T              `db:"created"`
}

// NullABI encodes a contract's ABI as JSON text; nil is NULL.
func NullABI(abi json.RawMessage) sql.NullString {
	if abi == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: string(abi), Valid: true}
}

// Contract converts the row.
func (r *Contract[T]) Contract() (*engine.Contract, error) {
	fail := func(err error) (*engine.Contract, error) {
		return nil, fmt.Errorf("contract %s: %w", r.ID, err)
	}
	addr, err := FromAddress("address", r.Address)
	if err != nil {
		return fail(err)
	}
	block, err := Uint64Of("block", r.Block)
	if err != nil {
		return fail(err)
	}
	created, err := requiredTime("created", r.Created)
	if err != nil {
		return fail(err)
	}
	c := &engine.Contract{
		ID:      r.ID,
		Owner:   r.Owner,
		Name:    r.Name,
		Network: r.Network,
		Address: addr,
		BWType:  r.BWType,
		BWVer:   r.BWVer,
		Block:   block,
		Created: created,
	}
	if r.ABI.Valid {
		c.ABI = json.RawMessage(r.ABI.String)
	}
	return c, nil
}

// Contracts converts rows, in order.
func Contracts[T TimeColumn](rows []Contract[T]) ([]*engine.Contract, error) {
	return Convert(rows, (*Contract[T]).Contract)
}

// CallbackColumns are the columns of callback_outbox a read returns (into a
// Callback).
const CallbackColumns = `id, tx_id, event_id, subscription_id, event_seq, url, status, attempts, next_attempt, last_error, created, delivered`

// Callback is a row of callback_outbox: a transaction's (TxID) or a
// subscription's delivery (EventID, SubscriptionID, EventSeq).
type Callback[T TimeColumn] struct {
	ID             string         `db:"id"`
	TxID           sql.NullString `db:"tx_id"`
	EventID        sql.NullString `db:"event_id"`
	SubscriptionID sql.NullString `db:"subscription_id"`
	EventSeq       sql.NullInt64  `db:"event_seq"`
	URL            string         `db:"url"`
	Status         string         `db:"status"`
	Attempts       int            `db:"attempts"`
	NextAttempt    T              `db:"next_attempt"`
	LastError      string         `db:"last_error"`
	Created        T              `db:"created"`
	Delivered      T              `db:"delivered"`
}

// Callback converts the row.
func (r *Callback[T]) Callback() (engine.Callback, error) {
	next, err := requiredTime("next_attempt", r.NextAttempt)
	if err != nil {
		return engine.Callback{}, fmt.Errorf("callback %s: %w", r.ID, err)
	}
	created, err := requiredTime("created", r.Created)
	if err != nil {
		return engine.Callback{}, fmt.Errorf("callback %s: %w", r.ID, err)
	}
	return engine.Callback{
		ID:             r.ID,
		TxID:           r.TxID.String,
		EventID:        r.EventID.String,
		SubscriptionID: r.SubscriptionID.String,
		EventSeq:       r.EventSeq.Int64,
		URL:            r.URL,
		Status:         engine.CallbackStatus(r.Status),
		Attempts:       r.Attempts,
		NextAttempt:    next,
		LastError:      r.LastError,
		Created:        created,
		Delivered:      nullTime(r.Delivered),
	}, nil
}

// Callbacks converts rows, in order (an empty slice for none).
func Callbacks[T TimeColumn](rows []Callback[T]) ([]engine.Callback, error) {
	return Convert(rows, (*Callback[T]).Callback)
}

// Idempotency is a row of idempotency_keys.
type Idempotency[T TimeColumn] struct {
	UserID      string `db:"user_id"`
	Key         string `db:"key"`
	RequestHash string `db:"request_hash"`
	Status      int    `db:"status"`
	Body        []byte `db:"body"`
	Created     T      `db:"created"`
}

// IdempotencyColumns are the columns of idempotency_keys, inserted and read.
const IdempotencyColumns = `user_id, key, request_hash, status, body, created`

// Record converts the row.
func (r *Idempotency[T]) Record() (*engine.IdempotencyRecord, error) {
	created, err := requiredTime("created", r.Created)
	if err != nil {
		return nil, fmt.Errorf("idempotency key %s of %s: %w", r.Key, r.UserID, err)
	}
	return &engine.IdempotencyRecord{
		UserID: r.UserID, Key: r.Key, RequestHash: r.RequestHash, Status: r.Status, Body: r.Body,
		Created: created,
	}, nil
}

// CheckIdempotency rejects a record without user, key or request hash.
func CheckIdempotency(r *engine.IdempotencyRecord) error {
	if r.UserID == "" || r.Key == "" || r.RequestHash == "" {
		return fmt.Errorf("idempotency record: user, key and request hash are required")
	}
	return nil
}

// TransferColumns are the columns of token_transfers, inserted and read.
const TransferColumns = `network, token, block_number, block_hash, tx_hash, log_index, from_address, to_address, value`

// Transfer is a row of token_transfers.
type Transfer struct {
	Network     string `db:"network"`
	Token       string `db:"token"`
	BlockNumber int64  `db:"block_number"`
	BlockHash   string `db:"block_hash"`
	TxHash      string `db:"tx_hash"`
	LogIndex    int64  `db:"log_index"`
	From        string `db:"from_address"`
	To          string `db:"to_address"`
	Value       string `db:"value"`
}

// Transfer converts the row.
func (r *Transfer) Transfer() (engine.TokenTransfer, error) {
	fail := func(err error) (engine.TokenTransfer, error) {
		return engine.TokenTransfer{}, fmt.Errorf("transfer %s/%d: %w", r.TxHash, r.LogIndex, err)
	}
	if r.LogIndex < 0 {
		return fail(fmt.Errorf("log index is negative (%d)", r.LogIndex))
	}
	t := engine.TokenTransfer{Network: r.Network, LogIndex: uint(r.LogIndex)}
	var err error
	if t.Token, err = FromAddress("token", r.Token); err != nil {
		return fail(err)
	}
	if t.From, err = FromAddress("from", r.From); err != nil {
		return fail(err)
	}
	if t.To, err = FromAddress("to", r.To); err != nil {
		return fail(err)
	}
	if t.BlockNumber, err = Uint64Of("blockNumber", r.BlockNumber); err != nil {
		return fail(err)
	}
	bh, err := HexBytes(r.BlockHash)
	if err != nil {
		return fail(err)
	}
	th, err := HexBytes(r.TxHash)
	if err != nil {
		return fail(err)
	}
	t.BlockHash, t.TxHash = common.BytesToHash(bh), common.BytesToHash(th)
	if t.Value, err = bigOf("value", r.Value); err != nil {
		return fail(err)
	}
	return t, nil
}

// TransferPage converts the rows of a listing that read one row more than
// limit: the first limit transfers, and the cursor after the last of them
// when more rows follow (nil otherwise).
func TransferPage(rows []Transfer, limit int) ([]engine.TokenTransfer, *engine.TransferCursor, error) {
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	out, err := Convert(rows, (*Transfer).Transfer)
	if err != nil || !more || len(out) == 0 {
		return out, nil, err
	}
	last := out[len(out)-1]
	return out, &engine.TransferCursor{BlockNumber: last.BlockNumber, LogIndex: last.LogIndex}, nil
}

// Stream is a row of token_index_streams, as IndexStreams reads it.
type Stream struct {
	Address string `db:"address"`
	Next    int64  `db:"next_block"`
}

// Streams converts rows into the next block to read of each contract.
func Streams(rows []Stream) (map[common.Address]uint64, error) {
	out := make(map[common.Address]uint64, len(rows))
	for _, r := range rows {
		a, err := FromAddress("address", r.Address)
		if err != nil {
			return nil, err
		}
		n, err := Uint64Of("next_block", r.Next)
		if err != nil {
			return nil, err
		}
		out[a] = n
	}
	return out, nil
}

// Block is a row of token_index_blocks, as IndexedBlocks reads it.
type Block struct {
	Number int64  `db:"number"`
	Hash   string `db:"hash"`
}

// Blocks converts rows, in order.
func Blocks(rows []Block) ([]engine.IndexedBlock, error) {
	return Convert(rows, func(r *Block) (engine.IndexedBlock, error) {
		n, err := Uint64Of("number", r.Number)
		if err != nil {
			return engine.IndexedBlock{}, err
		}
		h, err := HexBytes(r.Hash)
		if err != nil {
			return engine.IndexedBlock{}, fmt.Errorf("block %d: %w", n, err)
		}
		return engine.IndexedBlock{Number: n, Hash: common.BytesToHash(h)}, nil
	})
}

// Owners decodes the owner addresses NFTOwners reads, in order, without
// the zero address.
func Owners(owners []string) ([]common.Address, error) {
	out := make([]common.Address, 0, len(owners))
	for _, o := range owners {
		a, err := FromAddress("owner", o)
		if err != nil {
			return nil, err
		}
		if a != (common.Address{}) {
			out = append(out, a)
		}
	}
	return out, nil
}

// InFlightRow is one account's COUNT(*) and MIN(nonce) of its submitted
// transactions (InFlightSummary, InFlightSummaries).
type InFlightRow struct {
	AccountID string        `db:"account_id"`
	Count     int           `db:"n"`
	Lowest    sql.NullInt64 `db:"lowest"`
}

// Summary is the engine.InFlightSummary of r.
func (r InFlightRow) Summary() engine.InFlightSummary {
	out := engine.InFlightSummary{Count: r.Count}
	if r.Lowest.Valid && r.Lowest.Int64 >= 0 {
		out.LowestNonce = uint64(r.Lowest.Int64)
	}
	return out
}
