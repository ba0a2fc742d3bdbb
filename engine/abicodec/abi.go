package abicodec

// ABI codec, encoding side: parsing JSON ABIs, resolving methods by name or
// signature, and turning the API's JSON `arg` into call data
// (docs/api-decisions.md#contracts, "ABI values").
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
	"encoding/json"
	"fmt"
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
		return nil, invalid("abi", "abi must be a JSON array")
	}
	defer func() {
		// go-ethereum builds Go struct types for tuples with reflect and may
		// panic on exotic input; user input must never crash the service.
		if r := recover(); r != nil {
			a, err = nil, invalid("abi", "invalid abi: %v", r)
		}
	}()
	var parsed abi.ABI
	if err := json.Unmarshal(trimmed, &parsed); err != nil {
		return nil, invalid("abi", "invalid abi: %s", strings.TrimPrefix(err.Error(), "argument json err: "))
	}
	check := func(kind, name string, args abi.Arguments) error {
		for _, arg := range args {
			if err := abiCheckType(arg.Type); err != nil {
				return invalid("abi", "invalid abi: %s %s, parameter %q: %v", kind, name, arg.Name, err)
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
		return nil, invalid("method", "method must be a method name or signature")
	}
	if a == nil {
		return nil, notFound("method", "method %q not found: the contract has no ABI", name)
	}
	if strings.Contains(name, "(") {
		sig, err := abiCanonicalSignature(name)
		if err != nil {
			return nil, invalid("method", "malformed method signature %q: %v", name, err)
		}
		for key, m := range a.Methods {
			if m.Sig == sig {
				found := a.Methods[key] // one copy on the heap, not one per method
				return &found, nil
			}
		}
		raw := sig[:strings.IndexByte(sig, '(')]
		if cands := abiOverloads(a, raw); len(cands) > 0 {
			return nil, notFound("method", "method %s not found in the ABI; %s has the signatures %s", sig, raw, strings.Join(cands, ", "))
		}
		return nil, notFound("method", "method %s not found in the ABI", sig)
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
		return nil, notFound("method", "method %q not found in the ABI", name)
	}
	if overloads > 1 {
		cands := abiOverloads(a, name)
		return nil, invalid("method", "method %q is overloaded; use one of the signatures %s", name, strings.Join(cands, ", "))
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
		return nil, invalid("arg", "arg is not valid JSON")
	}
	if trimmed[0] != '[' {
		return []json.RawMessage{json.RawMessage(trimmed)}, nil
	}
	var args []json.RawMessage
	if err := json.Unmarshal(trimmed, &args); err != nil {
		return nil, invalid("arg", "arg is not valid JSON")
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
		return nil, nil, invalid("arg", "%s takes %d argument(s) (%s), got %d", m.RawName, len(m.Inputs), abiInputTypes(m.Inputs), len(args))
	}
	values := make([]any, len(args))
	params = make([]any, len(args))
	for i, input := range m.Inputs {
		v, p, err := FromJSON(input.Type, args[i], fmt.Sprintf("arg[%d]", i))
		if err != nil {
			return nil, nil, err
		}
		values[i], params[i] = v.Interface(), p
	}
	packed, err := m.Inputs.Pack(values...)
	if err != nil {
		return nil, nil, invalid("arg", "cannot encode the arguments of %s: %v", m.Sig, err)
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
