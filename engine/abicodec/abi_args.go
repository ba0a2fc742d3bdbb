package abicodec

// The API's JSON arguments to ABI values (the table of encodings is in
// abi.go's header).

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
)

// FromJSON converts one JSON value, given at path (the field named in
// errors), to the Go value go-ethereum packs for t (t.GetType()) and to its
// normalized JSON form.
func FromJSON(t abi.Type, raw json.RawMessage, path string) (reflect.Value, any, error) {
	raw = bytes.TrimSpace(raw)
	switch t.T {
	case abi.IntTy, abi.UintTy:
		return abiIntegerFromJSON(t, raw, path)
	case abi.BoolTy:
		var b bool
		if len(raw) == 0 || (raw[0] != 't' && raw[0] != 'f') || json.Unmarshal(raw, &b) != nil {
			return reflect.Value{}, nil, abiTypeError(t, raw, path, "true or false")
		}
		return reflect.ValueOf(b), b, nil
	case abi.StringTy:
		s, ok := abiJSONString(raw)
		if !ok {
			return reflect.Value{}, nil, abiTypeError(t, raw, path, "a JSON string")
		}
		return reflect.ValueOf(s), s, nil
	case abi.AddressTy:
		s, ok := abiJSONString(raw)
		if !ok {
			return reflect.Value{}, nil, abiTypeError(t, raw, path, "a 0x-prefixed hex address string")
		}
		addr, err := ParseAddress(path, s)
		if err != nil {
			return reflect.Value{}, nil, err
		}
		return reflect.ValueOf(addr), addr.Hex(), nil
	case abi.BytesTy:
		b, err := abiParseHex(t, raw, path, -1)
		if err != nil {
			return reflect.Value{}, nil, err
		}
		return reflect.ValueOf(b), abiHex(b), nil
	case abi.FixedBytesTy, abi.FunctionTy:
		size := t.Size
		b, err := abiParseHex(t, raw, path, size)
		if err != nil {
			return reflect.Value{}, nil, err
		}
		v := reflect.New(t.GetType()).Elem()
		reflect.Copy(v, reflect.ValueOf(b))
		return v, abiHex(b), nil
	case abi.SliceTy, abi.ArrayTy:
		return abiListFromJSON(t, raw, path)
	case abi.TupleTy:
		return abiTupleFromJSON(t, raw, path)
	default:
		return reflect.Value{}, nil, invalid(path, "%s: the ABI type %s is not supported", path, t)
	}
}

// abiTupleFromJSON converts a JSON object keyed by component name, or a
// positional JSON array, to a value of t.TupleType.
func abiTupleFromJSON(t abi.Type, raw json.RawMessage, path string) (reflect.Value, any, error) {
	names := t.TupleRawNames
	elems := make([]json.RawMessage, len(names))
	switch {
	case len(raw) > 0 && raw[0] == '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return reflect.Value{}, nil, abiTypeError(t, raw, path, "a JSON object")
		}
		for i, name := range names {
			e, ok := obj[name]
			if !ok {
				return reflect.Value{}, nil, invalid(path+"."+name, "%s (%s): missing tuple component %q (components: %s)", path, t, name, strings.Join(names, ", "))
			}
			elems[i] = e
		}
		if len(obj) != len(names) {
			var unknown []string
			for k := range obj {
				if !abiContains(names, k) {
					unknown = append(unknown, fmt.Sprintf("%q", k))
				}
			}
			sort.Strings(unknown)
			return reflect.Value{}, nil, invalid(path, "%s (%s): unknown tuple component(s) %s (components: %s)", path, t, strings.Join(unknown, ", "), strings.Join(names, ", "))
		}
	case len(raw) > 0 && raw[0] == '[':
		var arr []json.RawMessage
		if err := json.Unmarshal(raw, &arr); err != nil {
			return reflect.Value{}, nil, abiTypeError(t, raw, path, "a JSON object keyed by component name")
		}
		if len(arr) != len(names) {
			return reflect.Value{}, nil, invalid(path, "%s (%s): expected %d tuple components (%s), got an array of %d", path, t, len(names), strings.Join(names, ", "), len(arr))
		}
		copy(elems, arr)
	default:
		return reflect.Value{}, nil, abiTypeError(t, raw, path, "a JSON object keyed by component name ("+strings.Join(names, ", ")+")")
	}
	v := reflect.New(t.TupleType).Elem()
	norm := make(map[string]any, len(names))
	for i, name := range names {
		ev, en, err := FromJSON(*t.TupleElems[i], elems[i], path+"."+name)
		if err != nil {
			return reflect.Value{}, nil, err
		}
		// go-ethereum builds TupleType with one field per component, in order.
		v.Field(i).Set(ev)
		norm[name] = en
	}
	return v, norm, nil
}

func abiContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// abiParseInteger parses a decimal string or an integer JSON number literal and
// checks it against the range of t (uintN or intN).
func abiParseInteger(t abi.Type, raw json.RawMessage, path string) (*big.Int, error) {
	want := "a decimal string"
	if t.T == abi.IntTy {
		want = "a decimal string (optionally negative)"
	}
	if len(raw) == 0 {
		return nil, abiTypeError(t, raw, path, want)
	}
	var s string
	switch c := raw[0]; {
	case c == '"':
		str, ok := abiJSONString(raw)
		if !ok {
			return nil, abiTypeError(t, raw, path, want)
		}
		s = str
		switch {
		case s == "":
			return nil, invalid(path, "%s (%s): expected %s, got an empty string", path, t, want)
		case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") || strings.HasPrefix(s, "-0x"):
			return nil, invalid(path, "%s (%s): hex is not accepted for integers, use decimal digits (got %s)", path, t, abiQuote(s))
		case strings.ContainsAny(s, "."):
			return nil, invalid(path, "%s (%s): expected an integer, got %s with a decimal point", path, t, abiQuote(s))
		case strings.ContainsAny(s, "eE") && strings.Trim(s, "-+0123456789eE") == "":
			return nil, invalid(path, "%s (%s): exponents are not accepted, use decimal digits (got %s)", path, t, abiQuote(s))
		}
	case c == '-' || c >= '0' && c <= '9':
		s = string(raw)
		if strings.ContainsAny(s, ".eE") {
			return nil, invalid(path, "%s (%s): the JSON number %s is not an exact integer literal (fraction or exponent); pass a decimal string", path, t, abiTruncate(s))
		}
	default:
		return nil, abiTypeError(t, raw, path, want)
	}
	digits := strings.TrimPrefix(s, "-")
	if digits == "" {
		return nil, invalid(path, "%s (%s): expected %s, got %s", path, t, want, abiQuote(s))
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return nil, invalid(path, "%s (%s): expected %s, got %s", path, t, want, abiQuote(s))
		}
	}
	neg := len(digits) != len(s)
	if neg && t.T == abi.UintTy {
		return nil, invalid(path, "%s (%s): negative values are not allowed for unsigned integers (got %s)", path, t, abiTruncate(s))
	}
	min, max := abiIntRange(t)
	if len(strings.TrimLeft(digits, "0")) > 80 { // > 2^256 by far; spare the parse
		return nil, invalid(path, "%s (%s): %s is out of range [%s, %s]", path, t, abiTruncate(s), min, max)
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, invalid(path, "%s (%s): expected %s, got %s", path, t, want, abiQuote(s))
	}
	if n.Cmp(min) < 0 || n.Cmp(max) > 0 {
		return nil, invalid(path, "%s (%s): %s is out of range [%s, %s]", path, t, abiTruncate(s), min, max)
	}
	return n, nil
}

// abiIntRange returns the inclusive bounds of the integer type t.
func abiIntRange(t abi.Type) (min, max *big.Int) {
	one := big.NewInt(1)
	if t.T == abi.UintTy {
		max = new(big.Int).Lsh(one, uint(t.Size))
		return new(big.Int), max.Sub(max, one)
	}
	max = new(big.Int).Lsh(one, uint(t.Size-1))
	min = new(big.Int).Neg(max)
	return min, max.Sub(max, one)
}

// abiParseHex parses a 0x-prefixed hex string; size >= 0 demands exactly
// that many bytes.
func abiParseHex(t abi.Type, raw json.RawMessage, path string, size int) ([]byte, error) {
	want := "a 0x-prefixed hex string"
	if size >= 0 {
		want = fmt.Sprintf("a 0x-prefixed hex string of exactly %d bytes", size)
	}
	s, ok := abiJSONString(raw)
	if !ok {
		return nil, abiTypeError(t, raw, path, want)
	}
	body, ok := strings.CutPrefix(s, "0x")
	if !ok {
		body, ok = strings.CutPrefix(s, "0X")
	}
	if !ok {
		return nil, invalid(path, "%s (%s): expected %s, got %s without the 0x prefix", path, t, want, abiQuote(s))
	}
	if len(body)%2 != 0 {
		return nil, invalid(path, "%s (%s): hex string %s has an odd number of digits", path, t, abiQuote(s))
	}
	b, err := hex.DecodeString(body)
	if err != nil {
		return nil, invalid(path, "%s (%s): %s is not valid hex", path, t, abiQuote(s))
	}
	if size >= 0 && len(b) != size {
		return nil, invalid(path, "%s (%s): expected exactly %d bytes, got %d", path, t, size, len(b))
	}
	return b, nil
}

// abiJSONString decodes raw when it is a JSON string.
func abiJSONString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// abiTypeError reports a JSON value of the wrong kind for t.
func abiTypeError(t abi.Type, raw json.RawMessage, path, want string) *FieldError {
	return invalid(path, "%s (%s): expected %s, got %s", path, t, want, abiDescribeJSON(raw))
}

// abiDescribeJSON names the kind (and, for scalars, the value) of a JSON value.
func abiDescribeJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "a JSON object"
	case '[':
		return "a JSON array"
	case '"':
		if s, ok := abiJSONString(raw); ok {
			return "the string " + abiQuote(s)
		}
		return "an invalid string"
	case 't', 'f':
		return "the boolean " + string(raw)
	case 'n':
		return "null"
	default:
		return "the number " + abiTruncate(string(raw))
	}
}

func abiTruncate(s string) string {
	const maxLen = 80
	if len(s) > maxLen {
		return s[:maxLen] + "..."
	}
	return s
}

func abiQuote(s string) string { return fmt.Sprintf("%q", abiTruncate(s)) }

func abiHex(b []byte) string { return "0x" + hex.EncodeToString(b) }

// abiIntegerFromJSON converts a JSON integer (abiParseInteger) to the Go
// value of the uintN or intN type t.
func abiIntegerFromJSON(t abi.Type, raw json.RawMessage, path string) (reflect.Value, any, error) {
	n, err := abiParseInteger(t, raw, path)
	if err != nil {
		return reflect.Value{}, nil, err
	}
	goType := t.GetType()
	v := reflect.New(goType).Elem()
	switch goType.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(n.Uint64())
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(n.Int64())
	default:
		v = reflect.ValueOf(n)
	}
	return v, n.String(), nil
}

// abiListFromJSON converts a JSON array to a value of the array or slice
// type t, element by element.
func abiListFromJSON(t abi.Type, raw json.RawMessage, path string) (reflect.Value, any, error) {
	var elems []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		return reflect.Value{}, nil, abiTypeError(t, raw, path, "a JSON array")
	}
	var v reflect.Value
	if t.T == abi.ArrayTy {
		if len(elems) != t.Size {
			return reflect.Value{}, nil, invalid(path, "%s (%s): expected an array of exactly %d elements, got %d", path, t, t.Size, len(elems))
		}
		v = reflect.New(t.GetType()).Elem()
	} else {
		v = reflect.MakeSlice(t.GetType(), len(elems), len(elems))
	}
	norm := make([]any, len(elems))
	for i, e := range elems {
		ev, en, err := FromJSON(*t.Elem, e, fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			return reflect.Value{}, nil, err
		}
		v.Index(i).Set(ev)
		norm[i] = en
	}
	return v, norm, nil
}
