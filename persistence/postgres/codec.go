package postgres

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// Column encodings shared by the tables (see migrations/0001_init.sql).
// They match persistence/sqlite's, but for timestamps (TIMESTAMPTZ instead
// of INTEGER milliseconds) and amounts (NUMERIC instead of decimal TEXT,
// both written and read as decimal text).

// ts encodes t for a TIMESTAMPTZ column: UTC, sub-millisecond precision
// dropped as the SQLite store and the API's timestamps do.
func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// fromTS decodes a TIMESTAMPTZ column into a UTC time.
func fromTS(t time.Time) time.Time { return t.UTC() }

// tsText encodes t as ISO 8601 text in UTC at millisecond precision (as ts
// does), for the elements of a timestamptz[] parameter, which lib/pq has
// no array type for.
func tsText(t time.Time) string { return ts(t).Format("2006-01-02T15:04:05.000Z07:00") }

// nullTS encodes an optional timestamp; nil is NULL.
func nullTS(t *time.Time) sql.NullTime {
	if t == nil {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: ts(*t), Valid: true}
}

// fromNullTS decodes an optional timestamp.
func fromNullTS(v sql.NullTime) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromTS(v.Time)
	return &t
}

// int64Of converts an unsigned value for a BIGINT column.
func int64Of(field string, v uint64) (int64, error) {
	if v > math.MaxInt64 {
		return 0, fmt.Errorf("%s %d exceeds the 2^63-1 a BIGINT column holds", field, v)
	}
	return int64(v), nil
}

// nullUint encodes an optional unsigned integer; nil is NULL.
func nullUint(field string, v *uint64) (sql.NullInt64, error) {
	if v == nil {
		return sql.NullInt64{}, nil
	}
	i, err := int64Of(field, *v)
	if err != nil {
		return sql.NullInt64{}, err
	}
	return sql.NullInt64{Int64: i, Valid: true}, nil
}

// uint64Of decodes a BIGINT column holding an unsigned value.
func uint64Of(field string, v int64) (uint64, error) {
	if v < 0 {
		return 0, fmt.Errorf("%s is negative (%d)", field, v)
	}
	return uint64(v), nil
}

// fromNullUint decodes an optional unsigned integer.
func fromNullUint(field string, v sql.NullInt64) (*uint64, error) {
	if !v.Valid {
		return nil, nil
	}
	u, err := uint64Of(field, v.Int64)
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// nullBig encodes an optional amount as decimal text for a NUMERIC column;
// nil is NULL.
func nullBig(v *big.Int) sql.NullString {
	if v == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: v.String(), Valid: true}
}

// fromNullBig decodes an optional amount (NUMERIC(78,0) reads as an
// integer in decimal text).
func fromNullBig(field string, v sql.NullString) (*big.Int, error) {
	if !v.Valid {
		return nil, nil
	}
	b, ok := new(big.Int).SetString(v.String, 10)
	if !ok {
		return nil, fmt.Errorf("%s %q is not a decimal integer", field, v.String)
	}
	return b, nil
}

// nullHash encodes an optional hash as lower-case 0x hex; nil is NULL.
func nullHash(h *common.Hash) sql.NullString {
	if h == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: h.Hex(), Valid: true}
}

// fromNullHash decodes an optional hash.
func fromNullHash(field string, v sql.NullString) (*common.Hash, error) {
	if !v.Valid {
		return nil, nil
	}
	b, err := hexBytes(v.String)
	if err != nil || len(b) != common.HashLength {
		return nil, fmt.Errorf("%s %q is not a 32-byte hex hash", field, v.String)
	}
	h := common.BytesToHash(b)
	return &h, nil
}

// hexBytes decodes 0x-prefixed hex.
func hexBytes(s string) ([]byte, error) {
	if len(s) < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return nil, fmt.Errorf("missing 0x prefix")
	}
	return common.ParseHexOrString(s)
}

// address encodes an address as EIP-55 hex.
func address(a common.Address) string { return a.Hex() }

// fromAddress decodes an address column.
func fromAddress(field, s string) (common.Address, error) {
	if s == "" {
		return common.Address{}, nil
	}
	if !common.IsHexAddress(s) {
		return common.Address{}, fmt.Errorf("%s %q is not an address", field, s)
	}
	return common.HexToAddress(s), nil
}

// nullJSON encodes v as JSON text; a nil v (nil slice, map or pointer) is
// NULL, so nil and empty stay distinct.
func nullJSON(field string, v any, isNil bool) (sql.NullString, error) {
	if isNil {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("encode %s: %w", field, err)
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// fromNullJSON decodes a JSON column into dst; NULL leaves dst untouched.
// Numbers inside untyped values (any) decode as float64, as encoding/json
// does everywhere else in the service.
func fromNullJSON(field string, v sql.NullString, dst any) error {
	if !v.Valid {
		return nil
	}
	if err := json.Unmarshal([]byte(v.String), dst); err != nil {
		return fmt.Errorf("decode %s: %w", field, err)
	}
	return nil
}

// nullString encodes an optional text; "" is NULL.
func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

// nullBytes keeps a nil byte slice NULL and an empty one an empty BYTEA.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
