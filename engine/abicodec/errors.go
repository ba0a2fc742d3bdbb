package abicodec

import "fmt"

// Kind says what kind of fault a FieldError is.
type Kind int

// The kinds of FieldError.
const (
	// Invalid: the input is malformed or does not fit the ABI (the API's
	// invalid_argument).
	Invalid Kind = iota
	// NotFound: the method named is not in the ABI (the API's not_found).
	NotFound
)

// FieldError is the codec's error for input at fault: an ABI, a method
// name, an argument (Field is its JSON path, e.g. "arg[1].owner") or a call
// result (Field empty). Message is safe to show to the caller. The engine
// maps it to its own error (engine.CodecError) without changing a byte.
type FieldError struct {
	Kind    Kind
	Field   string
	Message string
}

// Error implements error.
func (e *FieldError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s (field %s)", e.Message, e.Field)
	}
	return e.Message
}

// invalid returns an Invalid error for field.
func invalid(field, format string, args ...any) *FieldError {
	return &FieldError{Kind: Invalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// notFound returns a NotFound error for field.
func notFound(field, format string, args ...any) *FieldError {
	return &FieldError{Kind: NotFound, Field: field, Message: fmt.Sprintf(format, args...)}
}

// String names the kind.
func (k Kind) String() string {
	if k == NotFound {
		return "not found"
	}
	return "invalid"
}
