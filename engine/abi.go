package engine

// ABI codec, encoding side: parsing JSON ABIs, resolving methods by name or
// signature, and turning the API's JSON `arg` into call data (API.md,
// "Contracts" → "ABI values").
//
// JSON encoding of ABI values, in both directions:
//
//	uintN, intN   decimal string ("-5" only for intN); JSON numbers are
//	              accepted on input when they are plain integer literals
//	              (no fraction, no exponent: 100 yes, 1e2 and 100.0 no);
//	              hex strings are refused. Always a decimal string on output.
//	address       0x + 40 hex digits; mixed case must pass EIP-55; output
//	              is checksummed.
//	bool          JSON true/false only.
//	string        JSON string.
//	bytes         0x-prefixed hex string with an even number of digits.
//	bytesN        0x-prefixed hex string of exactly N bytes (no padding).
//	function      like bytes24.
//	T[k], T[]     JSON array (exactly k elements for T[k]).
//	tuple         JSON object keyed by component name (every component
//	              required, no unknown keys), or a positional JSON array;
//	              an object on output.

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

// ParseABI parses a JSON ABI (a JSON array of function, event, error,
// constructor, fallback and receive descriptions). Anything that is not a
// valid ABI, including integer types whose size is not a multiple of 8 in
// 8..256, is invalid_argument on field "abi".
func ParseABI(raw []byte) (a *abi.ABI, err error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, Invalid("abi", "abi must be a JSON array")
	}
	defer func() {
		// go-ethereum builds Go struct types for tuples with reflect and may
		// panic on exotic input; user input must never crash the service.
		if r := recover(); r != nil {
			a, err = nil, Invalid("abi", "invalid abi: %v", r)
		}
	}()
	var parsed abi.ABI
	if err := json.Unmarshal(trimmed, &parsed); err != nil {
		return nil, Invalid("abi", "invalid abi: %s", strings.TrimPrefix(err.Error(), "argument json err: "))
	}
	check := func(kind, name string, args abi.Arguments) error {
		for _, arg := range args {
			if err := abiCheckType(arg.Type); err != nil {
				return Invalid("abi", "invalid abi: %s %s, parameter %q: %v", kind, name, arg.Name, err)
			}
		}
		return nil
	}
	if err := check("constructor", "", parsed.Constructor.Inputs); err != nil {
		return nil, err
	}
	for _, m := range parsed.Methods {
		if err := check("function", m.RawName, m.Inputs); err != nil {
			return nil, err
		}
		if err := check("function", m.RawName, m.Outputs); err != nil {
			return nil, err
		}
	}
	for _, e := range parsed.Events {
		if err := check("event", e.RawName, e.Inputs); err != nil {
			return nil, err
		}
	}
	for _, e := range parsed.Errors {
		if err := check("error", e.Name, e.Inputs); err != nil {
			return nil, err
		}
	}
	return &parsed, nil
}

// abiCheckType rejects the types go-ethereum parses but that are not ABI types
// (uint7, int512, ...) or that it cannot encode (fixed-point).
func abiCheckType(t abi.Type) error {
	switch t.T {
	case abi.IntTy, abi.UintTy:
		if t.Size < 8 || t.Size > 256 || t.Size%8 != 0 {
			return fmt.Errorf("unsupported integer type %s", t)
		}
	case abi.SliceTy, abi.ArrayTy:
		return abiCheckType(*t.Elem)
	case abi.TupleTy:
		for _, e := range t.TupleElems {
			if err := abiCheckType(*e); err != nil {
				return err
			}
		}
	case abi.FixedPointTy, abi.HashTy:
		return fmt.Errorf("unsupported type %s", t)
	}
	return nil
}

// FindMethod resolves name to one function of a. name is either a method
// name ("transfer") or a full signature ("transfer(address,uint256)") as
// needed for overloaded methods. Signatures tolerate spaces, parameter names
// and data locations ("transfer(address to, uint amount)"), the aliases
// uint/int/byte, and "tuple(...)" for "(...)".
//
// A name shared by several overloads is invalid_argument on field "method"
// and lists the candidate signatures; an unknown method is not_found on
// field "method". go-ethereum's internal overload names (foo0, foo1) are not
// accepted: names match the ABI's own names only.
func FindMethod(a *abi.ABI, name string) (*abi.Method, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, Invalid("method", "method must be a method name or signature")
	}
	if a == nil {
		return nil, Errorf(CodeNotFound, "method", "method %q not found: the contract has no ABI", name)
	}
	if strings.Contains(name, "(") {
		sig, err := abiCanonicalSignature(name)
		if err != nil {
			return nil, Invalid("method", "malformed method signature %q: %v", name, err)
		}
		for key, m := range a.Methods {
			if m.Sig == sig {
				found := a.Methods[key] // one copy on the heap, not one per method
				return &found, nil
			}
		}
		raw := sig[:strings.IndexByte(sig, '(')]
		if cands := abiOverloads(a, raw); len(cands) > 0 {
			return nil, Errorf(CodeNotFound, "method", "method %s not found in the ABI; %s has the signatures %s", sig, raw, strings.Join(cands, ", "))
		}
		return nil, Errorf(CodeNotFound, "method", "method %s not found in the ABI", sig)
	}
	var found *abi.Method
	overloads := 0
	for key, m := range a.Methods {
		if m.RawName == name {
			if found == nil {
				m := a.Methods[key] // one copy on the heap, not one per method
				found = &m
			}
			overloads++
		}
	}
	if found == nil {
		return nil, Errorf(CodeNotFound, "method", "method %q not found in the ABI", name)
	}
	if overloads > 1 {
		cands := abiOverloads(a, name)
		return nil, Invalid("method", "method %q is overloaded; use one of the signatures %s", name, strings.Join(cands, ", "))
	}
	return found, nil
}

// abiOverloads returns the sorted signatures of the functions named rawName.
func abiOverloads(a *abi.ABI, rawName string) []string {
	var sigs []string
	for _, m := range a.Methods {
		if m.RawName == rawName {
			sigs = append(sigs, m.Sig)
		}
	}
	sort.Strings(sigs)
	return sigs
}

// abiCanonicalSignature turns a user-written signature into go-ethereum's Sig
// form: name(type,type,...) with canonical type names and no spaces.
func abiCanonicalSignature(s string) (string, error) {
	s = strings.TrimSpace(s)
	open := strings.IndexByte(s, '(')
	name := strings.TrimSpace(s[:open])
	if !abiIsIdent(name) {
		return "", fmt.Errorf("%q is not a method name", name)
	}
	if !strings.HasSuffix(s, ")") {
		return "", fmt.Errorf("missing closing parenthesis")
	}
	params, err := abiCanonicalList(s[open+1 : len(s)-1])
	if err != nil {
		return "", err
	}
	return name + "(" + params + ")", nil
}

// abiCanonicalList canonicalizes a comma-separated parameter list.
func abiCanonicalList(s string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", nil
	}
	var (
		parts []string
		depth int
		start int
	)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
			if depth < 0 {
				return "", fmt.Errorf("unbalanced %q", s[i])
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return "", fmt.Errorf("unbalanced parentheses or brackets")
	}
	parts = append(parts, s[start:])
	for i, p := range parts {
		c, err := abiCanonicalType(p)
		if err != nil {
			return "", err
		}
		parts[i] = c
	}
	return strings.Join(parts, ","), nil
}

// abiTypeAliases maps Solidity type aliases to their canonical ABI names.
var abiTypeAliases = map[string]string{"uint": "uint256", "int": "int256", "byte": "bytes1"}

// abiCanonicalType canonicalizes one parameter: its type with array suffixes,
// optionally followed by a data location and/or a parameter name (ignored).
func abiCanonicalType(p string) (string, error) {
	p = strings.TrimSpace(p)
	if rest, ok := strings.CutPrefix(p, "tuple"); ok && strings.HasPrefix(strings.TrimSpace(rest), "(") {
		p = strings.TrimSpace(rest)
	}
	if p == "" {
		return "", fmt.Errorf("empty parameter type")
	}
	var base, rest string
	if p[0] == '(' {
		depth, end := 0, -1
		for i := 0; i < len(p) && end < 0; i++ {
			switch p[i] {
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					end = i
				}
			}
		}
		if end < 0 {
			return "", fmt.Errorf("unbalanced parentheses in %q", p)
		}
		inner, err := abiCanonicalList(p[1:end])
		if err != nil {
			return "", err
		}
		base, rest = "("+inner+")", p[end+1:]
	} else {
		i := 0
		for i < len(p) && abiIsIdentByte(p[i]) {
			i++
		}
		if i == 0 {
			return "", fmt.Errorf("invalid parameter type %q", p)
		}
		base, rest = p[:i], p[i:]
		if alias, ok := abiTypeAliases[base]; ok {
			base = alias
		}
	}
	for {
		r := strings.TrimLeft(rest, " \t\r\n")
		if !strings.HasPrefix(r, "[") {
			break
		}
		end := strings.IndexByte(r, ']')
		if end < 0 {
			return "", fmt.Errorf("unbalanced brackets in %q", p)
		}
		size := strings.TrimSpace(r[1:end])
		for j := 0; j < len(size); j++ {
			if size[j] < '0' || size[j] > '9' {
				return "", fmt.Errorf("invalid array size %q", size)
			}
		}
		base += "[" + size + "]"
		rest = r[end+1:]
	}
	for _, word := range strings.Fields(rest) {
		if !abiIsIdent(word) {
			return "", fmt.Errorf("invalid parameter %q", p)
		}
	}
	return base, nil
}

func abiIsIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func abiIsIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !abiIsIdentByte(s[i]) {
			return false
		}
	}
	return true
}

// NormalizeArgs splits the API's `arg` into positional arguments: absent,
// empty or null is no argument; a JSON array is always the positional list
// (so a method whose single input is an array type takes `[[...]]`); any
// other JSON value is the one argument. Invalid JSON is invalid_argument on
// field "arg".
func NormalizeArgs(raw json.RawMessage) ([]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	if !json.Valid(trimmed) {
		return nil, Invalid("arg", "arg is not valid JSON")
	}
	if trimmed[0] != '[' {
		return []json.RawMessage{json.RawMessage(trimmed)}, nil
	}
	var args []json.RawMessage
	if err := json.Unmarshal(trimmed, &args); err != nil {
		return nil, Invalid("arg", "arg is not valid JSON")
	}
	return args, nil
}

// PackCall encodes a call of m with the positional JSON arguments args
// (NormalizeArgs). It returns the call data (method ID followed by the
// encoded arguments) and params, the arguments in their normalized JSON form
// (integers as decimal strings, checksummed addresses, 0x-hex bytes, arrays
// as []any, tuples as map[string]any), which is what a transaction records
// as its parameters. Every error is invalid_argument on field "arg" (wrong
// argument count), "arg[i]" or a path into it such as "arg[0].to" or
// "arg[1][2]"; the message names the expected ABI type and what was given.
func PackCall(m *abi.Method, args []json.RawMessage) (data []byte, params []any, err error) {
	if len(args) != len(m.Inputs) {
		return nil, nil, Invalid("arg", "%s takes %d argument(s) (%s), got %d", m.RawName, len(m.Inputs), abiInputTypes(m.Inputs), len(args))
	}
	values := make([]any, len(args))
	params = make([]any, len(args))
	for i, input := range m.Inputs {
		v, p, err := abiFromJSON(input.Type, args[i], fmt.Sprintf("arg[%d]", i))
		if err != nil {
			return nil, nil, err
		}
		values[i], params[i] = v.Interface(), p
	}
	packed, err := m.Inputs.Pack(values...)
	if err != nil {
		return nil, nil, Invalid("arg", "cannot encode the arguments of %s: %v", m.Sig, err)
	}
	data = make([]byte, 0, len(m.ID)+len(packed))
	data = append(append(data, m.ID...), packed...)
	return data, params, nil
}

func abiInputTypes(args abi.Arguments) string {
	types := make([]string, len(args))
	for i, a := range args {
		types[i] = a.Type.String()
		if a.Name != "" {
			types[i] += " " + a.Name
		}
	}
	return strings.Join(types, ", ")
}

// abiFromJSON converts one JSON value to the Go value go-ethereum packs for t
// (t.GetType()) and to its normalized JSON form.
func abiFromJSON(t abi.Type, raw json.RawMessage, path string) (reflect.Value, any, error) {
	raw = bytes.TrimSpace(raw)
	switch t.T {
	case abi.IntTy, abi.UintTy:
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
		var elems []json.RawMessage
		if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
			return reflect.Value{}, nil, abiTypeError(t, raw, path, "a JSON array")
		}
		var v reflect.Value
		if t.T == abi.ArrayTy {
			if len(elems) != t.Size {
				return reflect.Value{}, nil, Invalid(path, "%s (%s): expected an array of exactly %d elements, got %d", path, t, t.Size, len(elems))
			}
			v = reflect.New(t.GetType()).Elem()
		} else {
			v = reflect.MakeSlice(t.GetType(), len(elems), len(elems))
		}
		norm := make([]any, len(elems))
		for i, e := range elems {
			ev, en, err := abiFromJSON(*t.Elem, e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return reflect.Value{}, nil, err
			}
			v.Index(i).Set(ev)
			norm[i] = en
		}
		return v, norm, nil
	case abi.TupleTy:
		return abiTupleFromJSON(t, raw, path)
	default:
		return reflect.Value{}, nil, Invalid(path, "%s: the ABI type %s is not supported", path, t)
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
				return reflect.Value{}, nil, Invalid(path+"."+name, "%s (%s): missing tuple component %q (components: %s)", path, t, name, strings.Join(names, ", "))
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
			return reflect.Value{}, nil, Invalid(path, "%s (%s): unknown tuple component(s) %s (components: %s)", path, t, strings.Join(unknown, ", "), strings.Join(names, ", "))
		}
	case len(raw) > 0 && raw[0] == '[':
		var arr []json.RawMessage
		if err := json.Unmarshal(raw, &arr); err != nil {
			return reflect.Value{}, nil, abiTypeError(t, raw, path, "a JSON object keyed by component name")
		}
		if len(arr) != len(names) {
			return reflect.Value{}, nil, Invalid(path, "%s (%s): expected %d tuple components (%s), got an array of %d", path, t, len(names), strings.Join(names, ", "), len(arr))
		}
		copy(elems, arr)
	default:
		return reflect.Value{}, nil, abiTypeError(t, raw, path, "a JSON object keyed by component name ("+strings.Join(names, ", ")+")")
	}
	v := reflect.New(t.TupleType).Elem()
	norm := make(map[string]any, len(names))
	for i, name := range names {
		ev, en, err := abiFromJSON(*t.TupleElems[i], elems[i], path+"."+name)
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
			return nil, Invalid(path, "%s (%s): expected %s, got an empty string", path, t, want)
		case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") || strings.HasPrefix(s, "-0x"):
			return nil, Invalid(path, "%s (%s): hex is not accepted for integers, use decimal digits (got %s)", path, t, abiQuote(s))
		case strings.ContainsAny(s, "."):
			return nil, Invalid(path, "%s (%s): expected an integer, got %s with a decimal point", path, t, abiQuote(s))
		case strings.ContainsAny(s, "eE") && strings.Trim(s, "-+0123456789eE") == "":
			return nil, Invalid(path, "%s (%s): exponents are not accepted, use decimal digits (got %s)", path, t, abiQuote(s))
		}
	case c == '-' || c >= '0' && c <= '9':
		s = string(raw)
		if strings.ContainsAny(s, ".eE") {
			return nil, Invalid(path, "%s (%s): the JSON number %s is not an exact integer literal (fraction or exponent); pass a decimal string", path, t, abiTruncate(s))
		}
	default:
		return nil, abiTypeError(t, raw, path, want)
	}
	digits := strings.TrimPrefix(s, "-")
	if digits == "" {
		return nil, Invalid(path, "%s (%s): expected %s, got %s", path, t, want, abiQuote(s))
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return nil, Invalid(path, "%s (%s): expected %s, got %s", path, t, want, abiQuote(s))
		}
	}
	neg := len(digits) != len(s)
	if neg && t.T == abi.UintTy {
		return nil, Invalid(path, "%s (%s): negative values are not allowed for unsigned integers (got %s)", path, t, abiTruncate(s))
	}
	min, max := abiIntRange(t)
	if len(strings.TrimLeft(digits, "0")) > 80 { // > 2^256 by far; spare the parse
		return nil, Invalid(path, "%s (%s): %s is out of range [%s, %s]", path, t, abiTruncate(s), min, max)
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, Invalid(path, "%s (%s): expected %s, got %s", path, t, want, abiQuote(s))
	}
	if n.Cmp(min) < 0 || n.Cmp(max) > 0 {
		return nil, Invalid(path, "%s (%s): %s is out of range [%s, %s]", path, t, abiTruncate(s), min, max)
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
		return nil, Invalid(path, "%s (%s): expected %s, got %s without the 0x prefix", path, t, want, abiQuote(s))
	}
	if len(body)%2 != 0 {
		return nil, Invalid(path, "%s (%s): hex string %s has an odd number of digits", path, t, abiQuote(s))
	}
	b, err := hex.DecodeString(body)
	if err != nil {
		return nil, Invalid(path, "%s (%s): %s is not valid hex", path, t, abiQuote(s))
	}
	if size >= 0 && len(b) != size {
		return nil, Invalid(path, "%s (%s): expected exactly %d bytes, got %d", path, t, size, len(b))
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
func abiTypeError(t abi.Type, raw json.RawMessage, path, want string) *Error {
	return Invalid(path, "%s (%s): expected %s, got %s", path, t, want, abiDescribeJSON(raw))
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
