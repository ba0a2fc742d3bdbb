package engine

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Callbacks (docs/api-decisions.md#callbacks): when a transaction reaches completed or
// failed, the store that makes the transition inserts one outbox row per
// callback URL in the same database transaction (see TxStore). A Dispatcher
// then POSTs {"transaction": <as GET /transactions/{id}>} to each URL, at
// least once, retrying with Backoff until the row is delivered or abandoned.

// CallbackStatus is the state of one outbox row.
type CallbackStatus string

// Outbox row states.
const (
	// CallbackPending rows are delivered when NextAttempt is due.
	CallbackPending CallbackStatus = "pending"
	// CallbackDelivered rows got a 2xx answer.
	CallbackDelivered CallbackStatus = "delivered"
	// CallbackAbandoned rows are given up: retries exhausted, an address
	// the dispatcher may not connect to, or a transaction that left its
	// terminal state (reorg; a new row follows when it ends again).
	CallbackAbandoned CallbackStatus = "abandoned"
)

// Callback is one row of the callback outbox: one delivery of one
// transaction's terminal state, or of one subscription's event, to one URL.
type Callback struct {
	// ID is sent as X-Callback-Id of a transaction's callback, the same on
	// every attempt.
	ID string
	// TxID is the transaction of a transaction's callback ("" for an
	// event's).
	TxID string
	// EventID is the delivery (SubscriptionEvent.ID, sent as
	// X-Callback-Id) of a subscription's callback, SubscriptionID its
	// subscription and EventSeq its Seq ("" and 0 for a transaction's).
	// The rows of one subscription and URL are delivered one at a time,
	// in EventSeq order.
	EventID        string
	SubscriptionID string
	EventSeq       int64
	URL            string
	// Status is pending, delivered or abandoned.
	Status CallbackStatus
	// Attempts counts the delivery attempts made so far.
	Attempts int
	// NextAttempt is when the row is due (pending rows).
	NextAttempt time.Time
	// LastError describes the last failed attempt ("" when none failed).
	LastError string
	// Created is when the transaction reached its terminal state.
	Created time.Time
	// Delivered is when a 2xx answer came (delivered rows).
	Delivered *time.Time
}

// CallbackStore keeps the callback outbox. Rows are inserted by the TxStore
// methods that move a transaction to completed or failed, and by
// SaveSubscriptionStep for the deliveries of subscriptions, never directly.
//
// Ordering rule of event rows: a pending row of a subscription's delivery
// is due (DueCallbacks, ClaimDueCallbacks) only when no pending row of the
// same subscription and URL has a lower EventSeq, so one subscription's
// deliveries to one URL go one at a time, in order: a failing receiver
// holds back the later ones until the earlier is delivered or abandoned.
// Transaction rows are not affected.
// The Mark methods change pending rows only: on a row that is delivered or
// abandoned already they fail with ErrConflict, on a missing row with
// ErrNotFound.
type CallbackStore interface {
	// DueCallbacks returns up to limit pending rows whose NextAttempt is
	// at or before now, the most overdue first (NextAttempt, then Created,
	// then insertion order).
	DueCallbacks(ctx context.Context, now time.Time, limit int) ([]Callback, error)
	// ClaimDueCallbacks claims for node, until now+claimFor, up to limit
	// pending rows whose NextAttempt is at or before now and that no other
	// node holds a claim on (unclaimed, claimed by node itself, or whose
	// claim ended at or before now), and returns them in DueCallbacks
	// order. Concurrent claimers get disjoint rows. The Mark methods clear
	// the claim.
	ClaimDueCallbacks(ctx context.Context, node string, now time.Time, claimFor time.Duration, limit int) ([]Callback, error)
	// MarkCallbackDelivered records the successful attempt: the row becomes
	// delivered at at, with attempts (the count including this one).
	MarkCallbackDelivered(ctx context.Context, id string, attempts int, at time.Time) error
	// MarkCallbackRetry records a failed attempt: the row stays pending
	// with attempts, lastErr and its next attempt at next.
	MarkCallbackRetry(ctx context.Context, id string, attempts int, next time.Time, lastErr string) error
	// MarkCallbackAbandoned gives up the row with attempts and lastErr.
	MarkCallbackAbandoned(ctx context.Context, id string, attempts int, lastErr string) error
	// PendingCallbacks returns how many rows are pending (the outbox depth).
	PendingCallbacks(ctx context.Context) (int, error)
}

// CallbackPayload is the body of a callback request.
type CallbackPayload struct {
	Transaction TransactionView `json:"transaction"`
}

// CallbackBody returns the JSON body of a callback for t: an object with one
// field, transaction, holding t exactly as GET /transactions/{id} shows it.
func CallbackBody(t *Transaction) ([]byte, error) {
	b, err := json.Marshal(CallbackPayload{Transaction: ViewTransaction(t)})
	if err != nil {
		return nil, fmt.Errorf("callback body of %s: %w", t.ID, err)
	}
	return b, nil
}

// Callback request headers.
const (
	HeaderCallbackID        = "X-Callback-Id"
	HeaderCallbackSignature = "X-Callback-Signature"
)

// Sign returns the X-Callback-Signature of body sent at timestamp:
// "t=<unix seconds>,v1=<hex HMAC-SHA256(key, t + "." + body)>".
//
// The key is the bytes of secret exactly as GET /users/me shows it in
// callbackSecret (the characters of the string, not a decoding of them), so
// an integrator verifies with the value they see.
func Sign(secret string, timestamp time.Time, body []byte) string {
	t := strconv.FormatInt(timestamp.Unix(), 10)
	return "t=" + t + ",v1=" + hex.EncodeToString(signatureMAC(secret, t, body))
}

func signatureMAC(secret, t string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(t))
	mac.Write([]byte("."))
	mac.Write(body)
	return mac.Sum(nil)
}

// ErrBadSignature is returned by VerifySignature when a signature header is
// malformed, does not match, or is older than the tolerance.
var ErrBadSignature = errors.New("invalid callback signature")

// VerifySignature checks header (X-Callback-Signature) against body and
// secret, and that its timestamp is within tolerance of now (tolerance <= 0
// skips that check). It is what a receiver written in Go would run.
func VerifySignature(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var t, v1 string
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			t = v
		case "v1":
			v1 = v
		}
	}
	unix, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: no t=<unix seconds>", ErrBadSignature)
	}
	got, err := hex.DecodeString(v1)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%w: no v1=<hex HMAC-SHA256>", ErrBadSignature)
	}
	if !hmac.Equal(got, signatureMAC(secret, t, body)) {
		return fmt.Errorf("%w: HMAC does not match", ErrBadSignature)
	}
	if tolerance > 0 {
		if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
			return fmt.Errorf("%w: timestamp %d is %s away from now", ErrBadSignature, unix, d)
		}
	}
	return nil
}

// Backoff is the retry schedule of callbacks: the wait after the n-th
// failed attempt is Initial·2^(n-1), capped at Max, shortened by a random
// fraction of at most Jitter (so the cap holds and deliveries that failed
// together spread out). A callback is abandoned after MaxAttempts attempts,
// the fewest whose shortest possible waits add up to MinTotal: retries go on
// for at least MinTotal after the first attempt, whatever the jitter.
type Backoff struct {
	Initial  time.Duration
	Max      time.Duration
	MinTotal time.Duration
	// Jitter is in [0, 1).
	Jitter float64
}

// DefaultBackoff returns the schedule of docs/api-decisions.md#callbacks: from 1 s doubling, at most
// 1 h per wait, at least 24 h in all, jitter 10%. That is 39 attempts
// (waits of 1 s to 2048 s, then 26 of about an hour; 24.1 to 27.1 h).
func DefaultBackoff() Backoff {
	return Backoff{Initial: time.Second, Max: time.Hour, MinTotal: 24 * time.Hour, Jitter: 0.1}
}

// base is the wait after the n-th failure before jitter.
func (b Backoff) base(n int) time.Duration {
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Wait returns the pause after the n-th failed attempt (n >= 1); r is a
// random number in [0, 1) that picks the jitter.
func (b Backoff) Wait(n int, r float64) time.Duration {
	d := b.base(max(n, 1))
	return d - time.Duration(float64(d)*b.Jitter*r)
}

// MaxAttempts returns how many attempts are made before a callback is
// abandoned (at least 1).
func (b Backoff) MaxAttempts() int {
	if b.Initial <= 0 || b.Max <= 0 {
		return 1
	}
	var total time.Duration
	n := 1
	for total < b.MinTotal {
		total += b.Wait(n, 1) // the shortest wait
		n++
	}
	return n
}
