package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// decodeBody decodes the JSON object of the request body into dst (a pointer
// to a struct) strictly:
//   - a body over MaxBodyBytes is payload_too_large;
//   - an empty body is invalid_json, unless optional, when dst stays as is;
//   - malformed JSON and anything after the object is invalid_json;
//   - a body that is not an object, a field of the wrong JSON type, an
//     unknown field and a field given twice are invalid_argument, naming
//     the field. Field names match exactly: encoding/json alone would take
//     "Value" for "value" and the last of two "value"s, so that a proxy
//     that validates the body and the service could read different values.
func (s *Server) decodeBody(c *gin.Context, dst any, optional bool) error {
	raw, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return tooLarge(tooBig.Limit)
		}
		return engine.Errorf(engine.CodeInvalidJSON, "", "reading the request body failed")
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		if optional {
			return nil
		}
		return engine.Errorf(engine.CodeInvalidJSON, "", "request body is empty: a JSON object is required")
	}

	// First pass: well-formed JSON, one value, nothing after it. json.Valid
	// answers that without allocating; the decoder runs only to describe
	// what is wrong.
	var value json.RawMessage
	if json.Valid(raw) {
		value = bytes.TrimSpace(raw)
	} else {
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&value); err != nil {
			return engine.Errorf(engine.CodeInvalidJSON, "", "malformed JSON: %s", jsonErrorText(err))
		}
		if _, err := dec.Token(); err != io.EOF {
			return engine.Errorf(engine.CodeInvalidJSON, "", "malformed JSON: unexpected data after the JSON object")
		}
	}
	if value[0] != '{' {
		return engine.Invalid("", "request body must be a JSON object, not %s", jsonKindOf(value))
	}

	if err := checkFieldNames(value, dst); err != nil {
		return err
	}

	// Second pass: the shape of dst. Every member name is one of dst's
	// (checkFieldNames), so DisallowUnknownFields has nothing left to find
	// but stays, for a dst whose names checkFieldNames could not see.
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			field := typeErr.Field
			return engine.Invalid(field, "wrong JSON type for %s: expected %s, got %s", fieldLabel(field), describeType(typeErr.Type), typeErr.Value)
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			name = strings.Trim(name, `"`)
			return engine.Invalid(name, "unknown field %q", name)
		}
		return engine.Errorf(engine.CodeInvalidJSON, "", "malformed JSON: %s", jsonErrorText(err))
	}
	return nil
}

func fieldLabel(field string) string {
	if field == "" {
		return "the request body"
	}
	return field
}

// jsonErrorText is the text of a JSON syntax error without the "json: "
// prefix, plus the byte offset when known.
func jsonErrorText(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("%s (at byte %d)", strings.TrimPrefix(syn.Error(), "json: "), syn.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKindOf names the JSON type of a well-formed value.
func jsonKindOf(v json.RawMessage) string {
	switch v[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// describeType names the JSON type that decodes into t.
func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return "a JSON value of another type"
	}
}

// checkFieldNames checks the member names of the JSON object obj (well
// formed) against the json tags of the struct dst points to: each name must
// be one of them exactly (case included) and appear once. Nested values are
// not inspected.
func checkFieldNames(obj json.RawMessage, dst any) error {
	known := jsonFieldNames(reflect.TypeOf(dst))
	if names, ok := memberNames(obj); ok {
		for i, name := range names {
			if !known[name] {
				return engine.Invalid(name, "unknown field %q", name)
			}
			if slices.Contains(names[:i], name) {
				return engine.Invalid(name, "field %q is given more than once", name)
			}
		}
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		return engine.Errorf(engine.CodeInvalidJSON, "", "malformed JSON: %s", jsonErrorText(err))
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return engine.Errorf(engine.CodeInvalidJSON, "", "malformed JSON: %s", jsonErrorText(err))
		}
		name, _ := tok.(string)
		if !known[name] {
			return engine.Invalid(name, "unknown field %q", name)
		}
		if seen[name] {
			return engine.Invalid(name, "field %q is given more than once", name)
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return engine.Errorf(engine.CodeInvalidJSON, "", "malformed JSON: %s", jsonErrorText(err))
		}
	}
	return nil
}

// maxFastMembers bounds the members memberNames reads; an object with more
// (no request body has that many fields) takes the decoder.
const maxFastMembers = 16

// memberNames returns the member names of the JSON object obj (well
// formed: json.Valid), in order, without a decoder. It reports false, and
// leaves the names to the decoder, for a name with an escape sequence or a
// byte outside ASCII (which the decoder may replace) and for an object of
// more than maxFastMembers members.
func memberNames(obj []byte) ([]string, bool) {
	names := make([]string, 0, 8)
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return names, true
	}
	for i < len(obj) {
		if obj[i] != '"' || len(names) == maxFastMembers {
			return nil, false
		}
		end := i + 1
		for end < len(obj) && obj[end] != '"' {
			if obj[end] == '\\' || obj[end] >= 0x80 {
				return nil, false // escapes and UTF-8: the decoder reads them
			}
			end++
		}
		if end >= len(obj) {
			return nil, false
		}
		names = append(names, string(obj[i+1:end]))
		i = skipSpace(obj, end+1)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		i = skipValue(obj, skipSpace(obj, i+1))
		i = skipSpace(obj, i)
		if i >= len(obj) {
			return nil, false
		}
		switch obj[i] {
		case '}':
			return names, true
		case ',':
			i = skipSpace(obj, i+1)
		default:
			return nil, false
		}
	}
	return nil, false
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the well-formed JSON value that
// starts at i: strings are skipped with their escapes, objects and arrays
// to their matching bracket.
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			i++
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing object
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
}

// fieldNames caches jsonFieldNames by type: request types are few and fixed.
var fieldNames sync.Map // reflect.Type → map[string]bool

// jsonFieldNames returns the JSON names of the exported fields of the
// struct t (or t points to), as encoding/json names them. The map is
// shared: do not modify it.
func jsonFieldNames(t reflect.Type) map[string]bool {
	if v, ok := fieldNames.Load(t); ok {
		return v.(map[string]bool)
	}
	names := fieldNamesOf(t)
	fieldNames.Store(t, names)
	return names
}

// fieldNamesOf computes jsonFieldNames.
func fieldNamesOf(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	names := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return names
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
	return names
}
