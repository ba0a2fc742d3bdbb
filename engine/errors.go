package engine

import (
	"errors"
	"fmt"
)

// Code is a machine-readable error code. The HTTP layer maps each code to a
// status in one table; the engine never speaks HTTP.
type Code string

// Error codes of the API contract (docs/api-decisions.md#errors).
const (
	CodeInvalidJSON     Code = "invalid_json"
	CodeInvalidArgument Code = "invalid_argument"
	CodeUnauthenticated Code = "unauthenticated"
	CodeForbidden       Code = "forbidden"
	CodeNotFound        Code = "not_found"
	CodeConflict        Code = "conflict"
	CodePayloadTooLarge Code = "payload_too_large"
	CodeRateLimited     Code = "rate_limited"
	CodeInternal        Code = "internal"
	CodeUnavailable     Code = "unavailable"
)

// Error is the one error type that crosses the engine boundary with a code.
// Message is safe to show to the caller; Field names the input at fault.
type Error struct {
	Code    Code
	Message string
	Field   string
}

// Error implements error.
func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s (field %s)", e.Code, e.Message, e.Field)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code, field and formatted message.
func Errorf(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns an invalid_argument error for field.
func Invalid(field, format string, args ...any) *Error {
	return Errorf(CodeInvalidArgument, field, format, args...)
}

// ErrNotFound is returned by stores when a row does not exist. Callers that
// know what was looked up wrap it into a more precise *Error.
var ErrNotFound = &Error{Code: CodeNotFound, Message: "not found"}

// ErrConflict is returned by stores when a unique constraint is violated.
var ErrConflict = &Error{Code: CodeConflict, Message: "conflict"}

// ErrFenced is returned (wrapped) by the writes of an account's activation
// whose Fence is no longer current: another activation of the account (on
// this node or another) took the account's lease, and nothing was written.
// An activation that gets it must stop. It carries no API code: callers see
// it as internal.
var ErrFenced = errors.New("fenced: another activation holds the account's lease")

// ErrNodeBusy is returned (wrapped) by a Pump whose transactions the node
// refused for now (underpriced, pool full, rate limit, nonce too high):
// they are back in the queue and the caller should back off.
var ErrNodeBusy = errors.New("the node refuses transactions for now")

// ErrLeaseLost is returned (wrapped) by the watcher's writes fenced with a
// NetworkFence whose tenure is over: the network's lease is held by another
// node, by this node under a later epoch, or it expired by the database's
// clock; nothing was written. The watcher that gets it must stop following
// the network.
var ErrLeaseLost = errors.New("network lease lost: another tenure follows the network")

// AsError returns the first *Error in err's chain or, when there is none,
// the engine's form of an ABI codec's field error (CodecError), so that a
// codec refusal answers as the engine's own wherever it is mapped.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	if errors.As(CodecError(err), &e) {
		return e, true
	}
	return nil, false
}

// ErrorCode returns the code of err: the Code of the first *Error in its
// chain (AsError), or CodeInternal for any other non-nil error.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	if e, ok := AsError(err); ok {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the caller-safe message of err: the Message of the
// first *Error in its chain (AsError), or a generic text that leaks nothing.
func ErrorMessage(err error) string {
	if e, ok := AsError(err); ok {
		return e.Message
	}
	return "internal error"
}

// IsNotFound reports whether err carries CodeNotFound.
func IsNotFound(err error) bool { return ErrorCode(err) == CodeNotFound }

// TxErrorCode classifies why a transaction failed (Transaction.Error.Code).
type TxErrorCode string

// Failure codes of a transaction (docs/api-decisions.md#transactions).
const (
	TxReverted          TxErrorCode = "reverted"
	TxDependencyFailed  TxErrorCode = "dependency_failed"
	TxExpired           TxErrorCode = "expired"
	TxInsufficientFunds TxErrorCode = "insufficient_funds"
	TxInvalid           TxErrorCode = "invalid"
	TxCancelled         TxErrorCode = "cancelled"
	// TxNonceConsumed: the chain used the transaction's nonce for a
	// transaction the service did not sign (the key used elsewhere, a
	// restored backup); none of its versions was mined.
	TxNonceConsumed TxErrorCode = "nonce_consumed"
	// TxAbandoned: an operator abandoned the transaction while it was in
	// flight; a 0-value transfer to itself took its nonce.
	TxAbandoned TxErrorCode = "abandoned"
	// TxNodeRefused is noted on a transaction still new (status unchanged)
	// while the node refuses to estimate or accept it for a reason that is
	// not a revert (its message says why); it is tried again, and fails
	// with this code when the node still refuses to estimate it after
	// several blocks (see parkedTx).
	TxNodeRefused TxErrorCode = "node_refused"
	// TxKeyAccessDenied: the account's key is in AWS KMS and KMS refused
	// to sign with it (the service's credentials may not use the key, or
	// the key is disabled or pending deletion); no nonce was taken.
	TxKeyAccessDenied TxErrorCode = "key_access_denied"
)

// TxError is the failure reason stored on a failed transaction.
type TxError struct {
	Code    TxErrorCode `json:"code"`
	Message string      `json:"message"`
}
