// Package sqlrow holds what persistence/sqlite and persistence/postgres
// share: the encodings of their columns, the column lists of their tables,
// the row types they scan into and the conversion of those rows to and from
// the engine's types.
//
// Only timestamps are encoded differently (INTEGER unix milliseconds on
// SQLite, TIMESTAMPTZ on PostgreSQL). The row types are therefore generic
// in the type a store scans its timestamp columns into (a TimeColumn), and
// the encoding of a row's values takes the store's TimeValue. Besides column
// lists (and TxSelect, which has no placeholder), the SQL statements, whose
// placeholders and idioms differ, stay in each store.
//
// Errors of the conversions name the row and the field; the stores add
// their own name in front.
package sqlrow

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
)

// Column encodings shared by the tables of both stores: integers are signed
// 64-bit (INTEGER, BIGINT); addresses are EIP-55 hex text; hashes are
// lower-case 0x hex text; amounts are decimal text (SQLite's TEXT, or
// PostgreSQL's NUMERIC written and read as text); lists and structured
// values are JSON text. NULL means "not set" for every optional field.

// Int64Of converts an unsigned value for a signed 64-bit column.
func Int64Of(field string, v uint64) (int64, error) {
	if v > math.MaxInt64 {
		return 0, fmt.Errorf("%s %d exceeds the 2^63-1 a 64-bit integer column holds", field, v)
	}
	return int64(v), nil
}

// NullUint encodes an optional unsigned integer; nil is NULL.
func NullUint(field string, v *uint64) (sql.NullInt64, error) {
	if v == nil {
		return sql.NullInt64{}, nil
	}
	i, err := Int64Of(field, *v)
	if err != nil {
		return sql.NullInt64{}, err
	}
	return sql.NullInt64{Int64: i, Valid: true}, nil
}

// Uint64Of decodes a signed 64-bit column holding an unsigned value.
func Uint64Of(field string, v int64) (uint64, error) {
	if v < 0 {
		return 0, fmt.Errorf("%s is negative (%d)", field, v)
	}
	return uint64(v), nil
}

// FromNullUint decodes an optional unsigned integer.
func FromNullUint(field string, v sql.NullInt64) (*uint64, error) {
	if !v.Valid {
		return nil, nil
	}
	u, err := Uint64Of(field, v.Int64)
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// GasLimit encodes a gas limit; 0 (not estimated yet) is NULL.
func GasLimit(v uint64) (sql.NullInt64, error) {
	if v == 0 {
		return sql.NullInt64{}, nil
	}
	return NullUint("gasLimit", &v)
}

// NullBig encodes an optional amount as decimal text; nil is NULL.
func NullBig(v *big.Int) sql.NullString {
	if v == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: v.String(), Valid: true}
}

// FromNullBig decodes an optional amount.
func FromNullBig(field string, v sql.NullString) (*big.Int, error) {
	if !v.Valid {
		return nil, nil
	}
	return bigOf(field, v.String)
}

// bigOf decodes an amount in decimal text.
func bigOf(field, s string) (*big.Int, error) {
	b, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, fmt.Errorf("%s %q is not a decimal integer", field, s)
	}
	return b, nil
}

// NullHash encodes an optional hash as lower-case 0x hex; nil is NULL.
func NullHash(h *common.Hash) sql.NullString {
	if h == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: h.Hex(), Valid: true}
}

// FromNullHash decodes an optional hash.
func FromNullHash(field string, v sql.NullString) (*common.Hash, error) {
	if !v.Valid {
		return nil, nil
	}
	b, err := HexBytes(v.String)
	if err != nil || len(b) != common.HashLength {
		return nil, fmt.Errorf("%s %q is not a 32-byte hex hash", field, v.String)
	}
	h := common.BytesToHash(b)
	return &h, nil
}

// HexBytes decodes 0x-prefixed hex.
func HexBytes(s string) ([]byte, error) {
	if len(s) < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return nil, fmt.Errorf("missing 0x prefix")
	}
	return common.ParseHexOrString(s)
}

// Address encodes an address as EIP-55 hex.
func Address(a common.Address) string { return a.Hex() }

// FromAddress decodes an address column; "" is the zero address.
func FromAddress(field, s string) (common.Address, error) {
	if s == "" {
		return common.Address{}, nil
	}
	if !common.IsHexAddress(s) {
		return common.Address{}, fmt.Errorf("%s %q is not an address", field, s)
	}
	return common.HexToAddress(s), nil
}

// NullJSON encodes v as JSON text; a nil v (nil slice, map or pointer) is
// NULL, so nil and empty stay distinct.
func NullJSON(field string, v any, isNil bool) (sql.NullString, error) {
	if isNil {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("encode %s: %w", field, err)
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// FromNullJSON decodes a JSON column into dst; NULL leaves dst untouched.
// Numbers inside untyped values (any) decode as float64, as encoding/json
// does everywhere else in the service.
func FromNullJSON(field string, v sql.NullString, dst any) error {
	if !v.Valid {
		return nil
	}
	if err := json.Unmarshal([]byte(v.String), dst); err != nil {
		return fmt.Errorf("decode %s: %w", field, err)
	}
	return nil
}

// NullString encodes an optional text; "" is NULL.
func NullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

// NullBytes keeps a nil byte slice NULL and an empty one an empty BLOB
// (BYTEA).
func NullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
