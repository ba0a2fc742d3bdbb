package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// IdempotencyTTL is how long an Idempotency-Key is remembered: the same key
// with the same request within this time returns the first response again.
const IdempotencyTTL = 24 * time.Hour

// IdempotencyRecord remembers the first response to a creating request that
// carried an Idempotency-Key. It is stored in the same database transaction
// as what the request created, so a record exists exactly when the thing
// does. (UserID, Key) is unique.
type IdempotencyRecord struct {
	UserID string
	Key    string
	// RequestHash identifies the request (RequestHash of method, path and
	// body); the same key with another hash is a conflict.
	RequestHash string
	// Status and Body are the first response. Body is sealed by the HTTP
	// layer (it may carry a one-time API token) and opaque to stores.
	Status int
	Body   []byte
	// Created is when the record was made; it expires IdempotencyTTL later.
	Created time.Time
}

// Expired reports whether the record is older than IdempotencyTTL at now.
func (r *IdempotencyRecord) Expired(now time.Time) bool {
	return now.Sub(r.Created) >= IdempotencyTTL
}

// RequestHash returns the hex SHA-256 of method, path and body, the
// identity of a request for idempotency. The body is compared byte for byte.
func RequestHash(method, path string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}
