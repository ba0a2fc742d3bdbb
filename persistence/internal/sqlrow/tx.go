package sqlrow

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// TxColumns are the columns of transactions but seq, in the order of the
// values of TxArgs.
const TxColumns = `id, owner, account_id, network, from_address,
	contract_id, contract_address, contract_name, contract_bwtype,
	method, parameters, data, value, status, created, submitted, ended,
	nonce, gas_limit, hash, raw_tx, block_number, block_hash, gas_used,
	events, error, callbacks, depends_on, wait_for_asset, wait_for_value, abi, wait_until, replaced,
	pool_id, ordering_key, pool_asset, pool_value`

// TxSelect reads whole rows of transactions (into a Tx); a store appends
// its WHERE and ORDER BY.
const TxSelect = `SELECT seq, ` + TxColumns + ` FROM transactions`

// Prefixed qualifies every column of a comma-separated list with p (a table
// alias and a dot).
func Prefixed(p, columns string) string {
	parts := strings.Split(columns, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// Tx is a row of transactions, with its timestamps scanned into T.
type Tx[T TimeColumn] struct {
	Seq             int64          `db:"seq"`
	ID              string         `db:"id"`
	Owner           string         `db:"owner"`
	AccountID       string         `db:"account_id"`
	Network         string         `db:"network"`
	From            string         `db:"from_address"`
	ContractID      string         `db:"contract_id"`
	ContractAddress string         `db:"contract_address"`
	ContractName    string         `db:"contract_name"`
	ContractBWType  string         `db:"contract_bwtype"`
	Method          string         `db:"method"`
	Parameters      sql.NullString `db:"parameters"`
	Data            []byte         `db:"data"`
	Value           sql.NullString `db:"value"`
	Status          string         `db:"status"`
	Created         T              `db:"created"`
	Submitted       T              `db:"submitted"`
	Ended           T              `db:"ended"`
	Nonce           sql.NullInt64  `db:"nonce"`
	GasLimit        sql.NullInt64  `db:"gas_limit"`
	Hash            sql.NullString `db:"hash"`
	RawTx           []byte         `db:"raw_tx"`
	BlockNumber     sql.NullInt64  `db:"block_number"`
	BlockHash       sql.NullString `db:"block_hash"`
	GasUsed         sql.NullInt64  `db:"gas_used"`
	Events          sql.NullString `db:"events"`
	Error           sql.NullString `db:"error"`
	Callbacks       sql.NullString `db:"callbacks"`
	DependsOn       sql.NullString `db:"depends_on"`
	WaitForAsset    string         `db:"wait_for_asset"`
	WaitForValue    sql.NullString `db:"wait_for_value"`
	ABI             sql.NullString `db:"abi"`
	WaitUntil       T              `db:"wait_until"`
	Replaced        T              `db:"replaced"`
	PoolID          sql.NullString `db:"pool_id"`
	OrderingKey     sql.NullString `db:"ordering_key"`
	PoolAsset       sql.NullString `db:"pool_asset"`
	PoolValue       sql.NullString `db:"pool_value"`
	// MatchedHash, when set, is the hash by which the query found the row
	// (a version of a replaced transaction); it becomes the Hash.
	MatchedHash sql.NullString `db:"matched_hash"`
}

// TxArgs returns the values of TxColumns for t, timestamps encoded with tv.
// Every field is stored as given but an empty Status, which is new.
func TxArgs(t *engine.Transaction, tv TimeValue) ([]any, error) {
	var contractAddr string
	if t.ContractAddress != (common.Address{}) {
		contractAddr = t.ContractAddress.Hex()
	}
	params, err := NullJSON("parameters", t.Parameters, t.Parameters == nil)
	if err != nil {
		return nil, err
	}
	nonce, err := NullUint("nonce", t.Nonce)
	if err != nil {
		return nil, err
	}
	gasLimit, err := GasLimit(t.GasLimit)
	if err != nil {
		return nil, err
	}
	blockNumber, err := NullUint("blockNumber", t.BlockNumber)
	if err != nil {
		return nil, err
	}
	gasUsed, err := NullUint("gasUsed", t.GasUsed)
	if err != nil {
		return nil, err
	}
	events, err := NullJSON("events", t.Events, t.Events == nil)
	if err != nil {
		return nil, err
	}
	txErr, err := NullJSON("error", t.Error, t.Error == nil)
	if err != nil {
		return nil, err
	}
	callbacks, err := NullJSON("callbacks", t.Callbacks, t.Callbacks == nil)
	if err != nil {
		return nil, err
	}
	dependsOn, err := NullJSON("dependsOn", t.DependsOn, t.DependsOn == nil)
	if err != nil {
		return nil, err
	}
	status := t.Status
	if status == "" {
		status = engine.StatusNew
	}
	return []any{
		t.ID, t.Owner, t.AccountID, t.Network, t.From.Hex(),
		t.ContractID, contractAddr, t.ContractName, t.ContractBWType,
		t.Method, params, NullBytes(t.Data), NullBig(t.Value), string(status),
		tv(&t.Created), tv(t.Submitted), tv(t.Ended),
		nonce, gasLimit, NullHash(t.Hash), NullBytes(t.RawTx), blockNumber, NullHash(t.BlockHash), gasUsed,
		events, txErr, callbacks, dependsOn, t.WaitForAsset, NullBig(t.WaitForValue),
		NullString(string(t.ABI)), tv(t.WaitUntil), tv(t.Replaced),
		NullString(t.PoolID), NullString(t.OrderingKey), NullString(t.PoolAsset), NullBig(t.PoolValue),
	}, nil
}

// Transaction converts the row.
func (r *Tx[T]) Transaction() (*engine.Transaction, error) {
	t := &engine.Transaction{
		ID:             r.ID,
		Owner:          r.Owner,
		AccountID:      r.AccountID,
		Network:        r.Network,
		ContractID:     r.ContractID,
		ContractName:   r.ContractName,
		ContractBWType: r.ContractBWType,
		Method:         r.Method,
		Data:           r.Data,
		Status:         engine.TxStatus(r.Status),
		Submitted:      nullTime(r.Submitted),
		Ended:          nullTime(r.Ended),
		RawTx:          r.RawTx,
		WaitForAsset:   r.WaitForAsset,
		WaitUntil:      nullTime(r.WaitUntil),
		Replaced:       nullTime(r.Replaced),
		PoolID:         r.PoolID.String,
		OrderingKey:    r.OrderingKey.String,
		PoolAsset:      r.PoolAsset.String,
	}
	var err error
	fail := func(err error) (*engine.Transaction, error) {
		return nil, fmt.Errorf("transaction %s: %w", r.ID, err)
	}
	if t.Created, err = requiredTime("created", r.Created); err != nil {
		return fail(err)
	}
	if t.From, err = FromAddress("from", r.From); err != nil {
		return fail(err)
	}
	if t.ContractAddress, err = FromAddress("contractAddress", r.ContractAddress); err != nil {
		return fail(err)
	}
	if err = FromNullJSON("parameters", r.Parameters, &t.Parameters); err != nil {
		return fail(err)
	}
	if t.Value, err = FromNullBig("value", r.Value); err != nil {
		return fail(err)
	}
	if t.Nonce, err = FromNullUint("nonce", r.Nonce); err != nil {
		return fail(err)
	}
	if r.GasLimit.Valid {
		if t.GasLimit, err = Uint64Of("gasLimit", r.GasLimit.Int64); err != nil {
			return fail(err)
		}
	}
	if t.Hash, err = FromNullHash("hash", r.Hash); err != nil {
		return fail(err)
	}
	if r.MatchedHash.Valid {
		h := common.HexToHash(r.MatchedHash.String)
		t.Hash = &h
	}
	if t.BlockNumber, err = FromNullUint("blockNumber", r.BlockNumber); err != nil {
		return fail(err)
	}
	if t.BlockHash, err = FromNullHash("blockHash", r.BlockHash); err != nil {
		return fail(err)
	}
	if t.GasUsed, err = FromNullUint("gasUsed", r.GasUsed); err != nil {
		return fail(err)
	}
	if err = FromNullJSON("events", r.Events, &t.Events); err != nil {
		return fail(err)
	}
	if r.Error.Valid {
		t.Error = new(engine.TxError)
		if err = FromNullJSON("error", r.Error, t.Error); err != nil {
			return fail(err)
		}
	}
	if err = FromNullJSON("callbacks", r.Callbacks, &t.Callbacks); err != nil {
		return fail(err)
	}
	if err = FromNullJSON("dependsOn", r.DependsOn, &t.DependsOn); err != nil {
		return fail(err)
	}
	if t.WaitForValue, err = FromNullBig("waitForValue", r.WaitForValue); err != nil {
		return fail(err)
	}
	if t.PoolValue, err = FromNullBig("poolValue", r.PoolValue); err != nil {
		return fail(err)
	}
	if r.ABI.Valid {
		t.ABI = json.RawMessage(r.ABI.String)
	}
	return t, nil
}

// Transactions converts rows, in order.
func Transactions[T TimeColumn](rows []Tx[T]) ([]*engine.Transaction, error) {
	return Convert(rows, (*Tx[T]).Transaction)
}

// TxPage converts the rows of a listing that read one row more than limit
// (which tells whether a next page exists): the first limit rows, and the
// cursor after the last of them when more rows follow (nil otherwise).
func TxPage[T TimeColumn](rows []Tx[T], limit int) ([]*engine.Transaction, *engine.TxCursor, error) {
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	txs, err := Transactions(rows)
	if err != nil || !more || len(txs) == 0 {
		return txs, nil, err
	}
	last := txs[len(txs)-1]
	return txs, &engine.TxCursor{Created: last.Created, Seq: rows[len(rows)-1].Seq}, nil
}

// MinedValues are the encoded values of one engine.Mined outcome.
type MinedValues struct {
	BlockNumber, GasUsed int64
	Events, Error        sql.NullString
	// Hash is the mined version's hash, NULL to keep the stored one.
	Hash sql.NullString
}

// EncodeMined encodes the values of o that MarkMined stores (but the
// status, the block hash and the end time, stored as they are or encoded
// by the store).
func EncodeMined(o engine.Mined) (MinedValues, error) {
	var (
		v   MinedValues
		err error
	)
	if v.BlockNumber, err = Int64Of("blockNumber", o.BlockNumber); err != nil {
		return v, err
	}
	if v.GasUsed, err = Int64Of("gasUsed", o.GasUsed); err != nil {
		return v, err
	}
	if v.Events, err = NullJSON("events", o.Events, o.Events == nil); err != nil {
		return v, err
	}
	if v.Error, err = NullJSON("error", o.Error, o.Error == nil); err != nil {
		return v, err
	}
	if o.Hash != (common.Hash{}) {
		v.Hash = sql.NullString{String: o.Hash.Hex(), Valid: true}
	}
	return v, nil
}

// Convert converts rows with conv, in order (an empty slice for none).
func Convert[R, V any](rows []R, conv func(*R) (V, error)) ([]V, error) {
	out := make([]V, 0, len(rows))
	for i := range rows {
		v, err := conv(&rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
