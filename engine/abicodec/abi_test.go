package abicodec

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/engine/internal/abitest"
)

// abiTestERC20 is a standard ERC-20 ABI plus an overloaded transfer (ERC-223
// style), a multi-output method, a method without outputs, an event with an
// unnamed and an indexed dynamic parameter, and a custom error.
const abiTestERC20 = `[
 {"type":"function","name":"name","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"string"}]},
 {"type":"function","name":"symbol","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"string"}]},
 {"type":"function","name":"decimals","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint8"}]},
 {"type":"function","name":"totalSupply","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint256"}]},
 {"type":"function","name":"balanceOf","stateMutability":"view","inputs":[{"name":"owner","type":"address"}],"outputs":[{"name":"balance","type":"uint256"}]},
 {"type":"function","name":"allowance","stateMutability":"view","inputs":[{"name":"owner","type":"address"},{"name":"spender","type":"address"}],"outputs":[{"name":"","type":"uint256"}]},
 {"type":"function","name":"transfer","stateMutability":"nonpayable","inputs":[{"name":"to","type":"address"},{"name":"value","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]},
 {"type":"function","name":"transfer","stateMutability":"nonpayable","inputs":[{"name":"to","type":"address"},{"name":"value","type":"uint256"},{"name":"data","type":"bytes"}],"outputs":[{"name":"","type":"bool"}]},
 {"type":"function","name":"transferFrom","stateMutability":"nonpayable","inputs":[{"name":"from","type":"address"},{"name":"to","type":"address"},{"name":"value","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]},
 {"type":"function","name":"approve","stateMutability":"nonpayable","inputs":[{"name":"spender","type":"address"},{"name":"value","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]},
 {"type":"function","name":"info","stateMutability":"view","inputs":[],"outputs":[{"name":"supply","type":"uint256"},{"name":"owner","type":"address"},{"name":"paused","type":"bool"}]},
 {"type":"function","name":"pause","stateMutability":"nonpayable","inputs":[],"outputs":[]},
 {"type":"event","name":"Transfer","anonymous":false,"inputs":[{"indexed":true,"name":"from","type":"address"},{"indexed":true,"name":"to","type":"address"},{"indexed":false,"name":"value","type":"uint256"}]},
 {"type":"event","name":"Approval","anonymous":false,"inputs":[{"indexed":true,"name":"owner","type":"address"},{"indexed":true,"name":"spender","type":"address"},{"indexed":false,"name":"value","type":"uint256"}]},
 {"type":"event","name":"Memo","anonymous":false,"inputs":[{"indexed":true,"name":"tag","type":"string"},{"indexed":false,"name":"","type":"int256"}]},
 {"type":"error","name":"InsufficientBalance","inputs":[{"name":"available","type":"uint256"},{"name":"required","type":"uint256"}]}
]`

func abiTestParse(t *testing.T, raw string) *abi.ABI {
	t.Helper()
	a, err := ParseABI([]byte(raw))
	if err != nil {
		t.Fatalf("ParseABI: %v", err)
	}
	return a
}

// canon re-encodes a JSON text so that it compares with json.Marshal output.
func abiTestCanon(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// abiTestOneArg builds an ABI with f(T x) returns (T) and returns f.
func abiTestOneArg(t *testing.T, typ, components string) *abi.Method {
	t.Helper()
	param := `{"name":"x","type":"` + typ + `"`
	if components != "" {
		param += `,"components":` + components
	}
	param += `}`
	a := abiTestParse(t, `[{"type":"function","name":"f","inputs":[`+param+`],"outputs":[`+param+`]}]`)
	m, err := FindMethod(a, "f")
	if err != nil {
		t.Fatalf("FindMethod: %v", err)
	}
	return m
}

const abiTestNested = `[{"name":"id","type":"uint256"},{"name":"meta","type":"tuple","components":[{"name":"owner","type":"address"},{"name":"tags","type":"string[]"}]}]`

func TestPackUnpackRoundTrip(t *testing.T) {
	tests := []struct {
		name, typ, components string
		arg, want             string
	}{
		{"uint8 string", "uint8", "", `"255"`, `"255"`},
		{"uint8 number", "uint8", "", `7`, `"7"`},
		{"uint8 leading zeros", "uint8", "", `"007"`, `"7"`},
		{"uint16", "uint16", "", `65535`, `"65535"`},
		{"uint24 (big.Int size)", "uint24", "", `"16777215"`, `"16777215"`},
		{"uint64 max", "uint64", "", `"18446744073709551615"`, `"18446744073709551615"`},
		{"uint256 max", "uint256", "", `"` + abitest.MaxU256 + `"`, `"` + abitest.MaxU256 + `"`},
		{"uint256 zero", "uint256", "", `0`, `"0"`},
		{"int8 min", "int8", "", `-128`, `"-128"`},
		{"int8 max", "int8", "", `"127"`, `"127"`},
		{"int64 min", "int64", "", `"-9223372036854775808"`, `"-9223372036854775808"`},
		{"int256 -1", "int256", "", `"-1"`, `"-1"`},
		{"int256 min", "int256", "", `"` + abitest.MinI256 + `"`, `"` + abitest.MinI256 + `"`},
		{"address lower", "address", "", `"` + abitest.AddrLower + `"`, `"` + abitest.AddrCheck + `"`},
		{"address checksummed", "address", "", `"` + abitest.AddrCheck + `"`, `"` + abitest.AddrCheck + `"`},
		{"address upper", "address", "", `"0x` + strings.ToUpper(abitest.AddrLower[2:]) + `"`, `"` + abitest.AddrCheck + `"`},
		{"bool true", "bool", "", `true`, `true`},
		{"bool false", "bool", "", `false`, `false`},
		{"string", "string", "", `"héllo \"world\""`, `"héllo \"world\""`},
		{"string empty", "string", "", `""`, `""`},
		{"bytes", "bytes", "", `"0xDEADbeef"`, `"0xdeadbeef"`},
		{"bytes empty", "bytes", "", `"0x"`, `"0x"`},
		{"bytes 0X", "bytes", "", `"0XABCD"`, `"0xabcd"`},
		{"bytes32", "bytes32", "", `"0x` + strings.Repeat("ab", 32) + `"`, `"0x` + strings.Repeat("ab", 32) + `"`},
		{"bytes1", "bytes1", "", `"0x01"`, `"0x01"`},
		{"uint256[]", "uint256[]", "", `["1", 2, "` + abitest.MaxU256 + `"]`, `["1","2","` + abitest.MaxU256 + `"]`},
		{"uint256[] empty", "uint256[]", "", `[]`, `[]`},
		{"address[2]", "address[2]", "", `["` + abitest.AddrLower + `","` + abitest.Addr2 + `"]`, `["` + abitest.AddrCheck + `","` + abitest.Addr2 + `"]`},
		{"uint8[2][]", "uint8[2][]", "", `[[1,2],["3","4"]]`, `[["1","2"],["3","4"]]`},
		{"string[]", "string[]", "", `["a","","ccc"]`, `["a","","ccc"]`},
		{"tuple by name", "tuple", `[{"name":"to","type":"address"},{"name":"amount","type":"uint256"}]`,
			`{"amount":"5","to":"` + abitest.AddrLower + `"}`, `{"to":"` + abitest.AddrCheck + `","amount":"5"}`},
		{"tuple positional", "tuple", `[{"name":"to","type":"address"},{"name":"amount","type":"uint256"}]`,
			`["` + abitest.AddrLower + `", 5]`, `{"to":"` + abitest.AddrCheck + `","amount":"5"}`},
		{"tuple snake_case names", "tuple", `[{"name":"max_value","type":"uint256"},{"name":"_flag","type":"bool"}]`,
			`{"max_value":"9","_flag":true}`, `{"max_value":"9","_flag":true}`},
		{"nested tuple array", "tuple[]", abiTestNested,
			`[{"id":"1","meta":{"owner":"` + abitest.AddrLower + `","tags":["x","y"]}},{"id":2,"meta":["` + abitest.Addr2 + `",[]]}]`,
			`[{"id":"1","meta":{"owner":"` + abitest.AddrCheck + `","tags":["x","y"]}},{"id":"2","meta":{"owner":"` + abitest.Addr2 + `","tags":[]}}]`},
		{"fixed tuple array", "tuple[2]", `[{"name":"a","type":"int16"},{"name":"b","type":"bytes2"}]`,
			`[{"a":-3,"b":"0x0102"},{"a":"4","b":"0xffff"}]`, `[{"a":"-3","b":"0x0102"},{"a":"4","b":"0xffff"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := abiTestOneArg(t, tc.typ, tc.components)
			args, err := NormalizeArgs(json.RawMessage(`[` + tc.arg + `]`))
			if err != nil {
				t.Fatalf("NormalizeArgs: %v", err)
			}
			data, params, err := PackCall(m, args)
			if err != nil {
				t.Fatalf("PackCall: %v", err)
			}
			if !bytes.Equal(data[:4], m.ID) {
				t.Fatalf("data starts with %x, want method id %x", data[:4], m.ID)
			}
			if got, want := abitest.Marshal(t, params), abiTestCanon(t, `[`+tc.want+`]`); got != want {
				t.Errorf("params = %s, want %s", got, want)
			}
			// f returns its argument: its encoding is the same as the input's.
			res, err := UnpackResult(m, data[4:])
			if err != nil {
				t.Fatalf("UnpackResult: %v", err)
			}
			if got, want := abitest.Marshal(t, res), abiTestCanon(t, tc.want); got != want {
				t.Errorf("UnpackResult = %s, want %s", got, want)
			}
		})
	}
}

// TestPackKnownEncodings checks the packed bytes against independently known
// encodings, so that a round trip through a wrong encoding cannot pass.
func TestPackKnownEncodings(t *testing.T) {
	a := abiTestParse(t, abiTestERC20)
	m, err := FindMethod(a, "transfer(address,uint256)")
	if err != nil {
		t.Fatal(err)
	}
	data, params, err := PackCall(m, []json.RawMessage{json.RawMessage(`"` + abitest.AddrLower + `"`), json.RawMessage(`"1000"`)})
	if err != nil {
		t.Fatal(err)
	}
	want := "a9059cbb" + strings.Repeat("0", 24) + abitest.AddrLower[2:] + strings.Repeat("0", 61) + "3e8"
	if got := hex.EncodeToString(data); got != want {
		t.Errorf("transfer data = %s, want %s", got, want)
	}
	if got := abitest.Marshal(t, params); got != `["`+abitest.AddrCheck+`","1000"]` {
		t.Errorf("params = %s", got)
	}

	words := []struct {
		typ, arg, want string
	}{
		{"int256", `"-1"`, strings.Repeat("ff", 32)},
		{"int8", `-2`, strings.Repeat("ff", 31) + "fe"},
		{"uint8", `255`, strings.Repeat("00", 31) + "ff"},
		{"bool", `true`, strings.Repeat("00", 31) + "01"},
		{"bytes2", `"0xabcd"`, "abcd" + strings.Repeat("00", 30)},
		{"bytes", `"0x0102"`, strings.Repeat("00", 31) + "20" + strings.Repeat("00", 31) + "02" + "0102" + strings.Repeat("00", 30)},
	}
	for _, w := range words {
		m := abiTestOneArg(t, w.typ, "")
		data, _, err := PackCall(m, []json.RawMessage{json.RawMessage(w.arg)})
		if err != nil {
			t.Fatalf("%s %s: %v", w.typ, w.arg, err)
		}
		if got := hex.EncodeToString(data[4:]); got != w.want {
			t.Errorf("%s %s packed = %s, want %s", w.typ, w.arg, got, w.want)
		}
	}
}

func TestIntegerRange(t *testing.T) {
	// abitest.MinI256 must be exactly -2^255.
	n, _ := new(big.Int).SetString(abitest.MinI256, 10)
	if want := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 255)); n.Cmp(want) != 0 {
		t.Fatalf("abitest.MinI256 constant is wrong")
	}
}

func TestPackRejections(t *testing.T) {
	tuple := `[{"name":"to","type":"address"},{"name":"amount","type":"uint256"}]`
	tests := []struct {
		name, typ, components string
		arg                   string
		field, msg            string
	}{
		{"decimal point string", "uint256", "", `"1.5"`, "arg[0]", "decimal point"},
		{"decimal point number", "uint256", "", `1.5`, "arg[0]", "not an exact integer"},
		{"integral fraction number", "uint256", "", `100.0`, "arg[0]", "not an exact integer"},
		{"exponent number", "uint256", "", `1e2`, "arg[0]", "not an exact integer"},
		{"exponent string", "uint256", "", `"1e2"`, "arg[0]", "exponent"},
		{"hex string for int", "uint256", "", `"0x10"`, "arg[0]", "hex is not accepted"},
		{"negative hex for int", "int256", "", `"-0x10"`, "arg[0]", "hex is not accepted"},
		{"negative for uint string", "uint256", "", `"-1"`, "arg[0]", "negative"},
		{"negative for uint number", "uint8", "", `-1`, "arg[0]", "negative"},
		{"uint8 overflow string", "uint8", "", `"256"`, "arg[0]", "out of range [0, 255]"},
		{"uint8 overflow number", "uint8", "", `256`, "arg[0]", "out of range"},
		{"uint256 2^256", "uint256", "", `"` + abitest.TwoTo256 + `"`, "arg[0]", "out of range"},
		{"uint256 huge", "uint256", "", `"` + strings.Repeat("9", 500) + `"`, "arg[0]", "out of range"},
		{"int8 underflow", "int8", "", `"-129"`, "arg[0]", "out of range [-128, 127]"},
		{"int8 overflow", "int8", "", `128`, "arg[0]", "out of range"},
		{"int256 2^255", "int256", "", `"` + strings.TrimPrefix(abitest.MinI256, "-") + `"`, "arg[0]", "out of range"},
		{"plus sign", "uint256", "", `"+1"`, "arg[0]", "expected a decimal string"},
		{"space", "uint256", "", `" 1"`, "arg[0]", "expected a decimal string"},
		{"empty string int", "uint256", "", `""`, "arg[0]", "empty string"},
		{"lone minus", "int256", "", `"-"`, "arg[0]", "expected"},
		{"object for uint", "uint256", "", `{"a":1}`, "arg[0]", "expected a decimal string, got a JSON object"},
		{"array for uint", "uint256", "", `[1]`, "arg[0]", "got a JSON array"},
		{"bool for uint", "uint256", "", `true`, "arg[0]", "got the boolean true"},
		{"null for uint", "uint256", "", `null`, "arg[0]", "got null"},
		{"bad checksum address", "address", "", `"` + abitest.AddrBad + `"`, "arg[0]", "EIP-55"},
		{"short address", "address", "", `"0x1234"`, "arg[0]", "20-byte"},
		{"address without 0x", "address", "", `"` + abitest.AddrLower[2:] + `"`, "arg[0]", "0x-prefixed"},
		{"number for address", "address", "", `5`, "arg[0]", "got the number 5"},
		{"string for bool", "bool", "", `"true"`, "arg[0]", "expected true or false"},
		{"number for bool", "bool", "", `1`, "arg[0]", "expected true or false"},
		{"number for string", "string", "", `5`, "arg[0]", "expected a JSON string"},
		{"odd-length hex bytes", "bytes", "", `"0xabc"`, "arg[0]", "odd number of digits"},
		{"bytes without 0x", "bytes", "", `"abcd"`, "arg[0]", "without the 0x prefix"},
		{"bytes not hex", "bytes", "", `"0xzz"`, "arg[0]", "not valid hex"},
		{"bytes32 too short", "bytes32", "", `"0x1234"`, "arg[0]", "exactly 32 bytes, got 2"},
		{"bytes32 too long", "bytes32", "", `"0x` + strings.Repeat("00", 33) + `"`, "arg[0]", "exactly 32 bytes, got 33"},
		{"bytes4 number", "bytes4", "", `1`, "arg[0]", "got the number 1"},
		{"string for array", "uint256[]", "", `"1"`, "arg[0]", "expected a JSON array"},
		{"array element", "uint256[]", "", `["1","x"]`, "arg[0][1]", "got \"x\""},
		{"fixed array length", "address[2]", "", `["` + abitest.AddrLower + `"]`, "arg[0]", "exactly 2 elements, got 1"},
		{"tuple missing component", "tuple", tuple, `{"to":"` + abitest.AddrLower + `"}`, "arg[0].amount", `missing tuple component "amount"`},
		{"tuple unknown component", "tuple", tuple, `{"to":"` + abitest.AddrLower + `","amount":"1","extra":1}`, "arg[0]", `unknown tuple component(s) "extra"`},
		{"tuple positional count", "tuple", tuple, `["` + abitest.AddrLower + `"]`, "arg[0]", "expected 2 tuple components"},
		{"tuple component type", "tuple", tuple, `{"to":"` + abitest.AddrLower + `","amount":"-1"}`, "arg[0].amount", "negative"},
		{"tuple from string", "tuple", tuple, `"x"`, "arg[0]", "JSON object keyed by component name"},
		{"nested path", "tuple[]", abiTestNested, `[{"id":"1","meta":{"owner":"` + abitest.AddrLower + `","tags":[]}},{"id":"2","meta":{"owner":"` + abitest.AddrBad + `","tags":[]}}]`, "arg[0][1].meta.owner", "EIP-55"},
		{"nested array element", "tuple[]", abiTestNested, `[{"id":"1","meta":{"owner":"` + abitest.AddrLower + `","tags":["a",7]}}]`, "arg[0][0].meta.tags[1]", "expected a JSON string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := abiTestOneArg(t, tc.typ, tc.components)
			data, params, err := PackCall(m, []json.RawMessage{json.RawMessage(tc.arg)})
			assertABIInvalid(t, err, tc.field, tc.msg)
			if data != nil || params != nil {
				t.Errorf("got data %x params %v with an error", data, params)
			}
		})
	}
}

func assertABIInvalid(t *testing.T, err error, field, msg string) {
	t.Helper()
	var e *FieldError
	if !errors.As(err, &e) {
		t.Fatalf("error = %v, want *FieldError", err)
	}
	if e.Kind != Invalid || e.Field != field || !strings.Contains(e.Message, msg) {
		t.Fatalf("error = {%s %q %q}, want {invalid %q containing %q}", e.Kind, e.Field, e.Message, field, msg)
	}
}

func TestPackCallArgCount(t *testing.T) {
	a := abiTestParse(t, abiTestERC20)
	m, err := FindMethod(a, "transfer(address,uint256)")
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{``, `"` + abitest.AddrLower + `"`, `["` + abitest.AddrLower + `","1","2"]`} {
		args, err := NormalizeArgs(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = PackCall(m, args)
		assertABIInvalid(t, err, "arg", "takes 2 argument(s) (address to, uint256 value), got")
	}
	// A method without inputs takes no arg.
	m, err = FindMethod(a, "totalSupply")
	if err != nil {
		t.Fatal(err)
	}
	data, params, err := PackCall(m, nil)
	if err != nil || hex.EncodeToString(data) != "18160ddd" || len(params) != 0 {
		t.Fatalf("totalSupply: data %x params %v err %v", data, params, err)
	}
}

func TestNormalizeArgs(t *testing.T) {
	tests := []struct {
		raw  string
		want []string
		err  bool
	}{
		{``, nil, false},
		{`  `, nil, false},
		{`null`, nil, false},
		{`"5"`, []string{`"5"`}, false},
		{` 5 `, []string{`5`}, false},
		{`{"a":1}`, []string{`{"a":1}`}, false},
		{`[]`, []string{}, false},
		{`[1, "2"]`, []string{`1`, `"2"`}, false},
		{`[[1,2]]`, []string{`[1,2]`}, false},
		{`[1,`, nil, true},
		{`{`, nil, true},
	}
	for _, tc := range tests {
		got, err := NormalizeArgs(json.RawMessage(tc.raw))
		if tc.err {
			assertABIInvalid(t, err, "arg", "not valid JSON")
			continue
		}
		if err != nil {
			t.Fatalf("NormalizeArgs(%q): %v", tc.raw, err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("NormalizeArgs(%q) = %d args, want %d", tc.raw, len(got), len(tc.want))
		}
		for i := range got {
			if string(got[i]) != tc.want[i] {
				t.Errorf("NormalizeArgs(%q)[%d] = %s, want %s", tc.raw, i, got[i], tc.want[i])
			}
		}
	}
}

func TestParseABI(t *testing.T) {
	a := abiTestParse(t, abiTestERC20)
	if len(a.Methods) != 12 || len(a.Events) != 3 || len(a.Errors) != 1 {
		t.Fatalf("parsed %d methods %d events %d errors", len(a.Methods), len(a.Events), len(a.Errors))
	}
	for _, bad := range []string{
		``, `null`, `{}`, `"x"`, `[`, `[{"type":"nonsense","name":"x"}]`,
		`[{"type":"function","name":"f","inputs":[{"name":"x","type":"uint7"}]}]`,
		`[{"type":"function","name":"f","inputs":[{"name":"x","type":"int264"}]}]`,
		`[{"type":"function","name":"f","inputs":[{"name":"x","type":"uint"}]}]`,
		`[{"type":"function","name":"f","inputs":[{"name":"x","type":"bytes33"}]}]`,
		`[{"type":"function","name":"f","inputs":[{"name":"x","type":"tuple","components":[{"name":"","type":"uint256"}]}]}]`,
		`[{"type":"event","name":"E","inputs":[{"name":"x","type":"uint3[]"}]}]`,
	} {
		_, err := ParseABI([]byte(bad))
		var e *FieldError
		if !errors.As(err, &e) || e.Kind != Invalid || e.Field != "abi" {
			t.Errorf("ParseABI(%s) = %v, want invalid_argument on abi", bad, err)
		}
	}
	if a, err := ParseABI([]byte(` [] `)); err != nil || len(a.Methods) != 0 {
		t.Errorf("ParseABI([]) = %v, %v", a, err)
	}
}

func TestFindMethod(t *testing.T) {
	a := abiTestParse(t, abiTestERC20)
	ok := []struct{ name, sig string }{
		{"balanceOf", "balanceOf(address)"},
		{" balanceOf ", "balanceOf(address)"},
		{"transfer(address,uint256)", "transfer(address,uint256)"},
		{"transfer( address , uint256 )", "transfer(address,uint256)"},
		{"transfer(address to, uint amount)", "transfer(address,uint256)"},
		{"transfer(address,uint256,bytes)", "transfer(address,uint256,bytes)"},
		{"transfer(address to, uint256 value, bytes memory data)", "transfer(address,uint256,bytes)"},
		{"totalSupply()", "totalSupply()"},
		{"pause", "pause()"},
	}
	for _, tc := range ok {
		m, err := FindMethod(a, tc.name)
		if err != nil {
			t.Errorf("FindMethod(%q): %v", tc.name, err)
			continue
		}
		if m.Sig != tc.sig {
			t.Errorf("FindMethod(%q) = %s, want %s", tc.name, m.Sig, tc.sig)
		}
	}

	_, err := FindMethod(a, "transfer")
	assertABIInvalid(t, err, "method", "transfer(address,uint256), transfer(address,uint256,bytes)")

	for _, name := range []string{"nope", "transfer0", "Transfer", "transfer(address)", "balanceOf(address,address)"} {
		_, err := FindMethod(a, name)
		var e *FieldError
		if !errors.As(err, &e) || e.Kind != NotFound || e.Field != "method" {
			t.Errorf("FindMethod(%q) = %v, want not_found on method", name, err)
		}
	}
	_, err = FindMethod(a, "transfer(address)")
	if !strings.Contains(fieldMessage(err), "transfer(address,uint256,bytes)") {
		t.Errorf("not-found signature does not list the overloads: %v", err)
	}
	for _, name := range []string{"", "transfer(address", "transfer(address,,uint256)", "(address)", "transfer(address[x])", "transfer(address-1)"} {
		_, err := FindMethod(a, name)
		assertABIInvalid(t, err, "method", "")
	}

	// Tuple parameters: "tuple(...)" and "(...)" spellings.
	ta := abiTestParse(t, `[{"type":"function","name":"g","inputs":[{"name":"p","type":"tuple[]","components":`+abiTestNested+`},{"name":"n","type":"uint256"}],"outputs":[]}]`)
	for _, name := range []string{"g((uint256,(address,string[]))[],uint256)", "g(tuple(uint, tuple(address, string []) meta) [] calldata p, uint n)"} {
		m, err := FindMethod(ta, name)
		if err != nil || m.Sig != "g((uint256,(address,string[]))[],uint256)" {
			t.Errorf("FindMethod(%q) = %v, %v", name, m, err)
		}
	}
}

func TestUnpackResult(t *testing.T) {
	a := abiTestParse(t, abiTestERC20)
	word := func(hexs string) []byte {
		b, _ := hex.DecodeString(strings.Repeat("0", 64-len(hexs)) + hexs)
		return b
	}
	tests := []struct {
		method string
		out    []byte
		want   string
	}{
		{"balanceOf", word("3e8"), `"1000"`},
		{"decimals", word("12"), `"18"`},
		{"transfer(address,uint256)", word("1"), `true`},
		{"info", bytes.Join([][]byte{word("5"), word(abitest.AddrLower[2:]), word("0")}, nil), `["5","` + abitest.AddrCheck + `",false]`},
		{"pause", nil, `null`},
		{"pause", word("1"), `null`},
	}
	for _, tc := range tests {
		m, err := FindMethod(a, tc.method)
		if err != nil {
			t.Fatal(err)
		}
		res, err := UnpackResult(m, tc.out)
		if err != nil {
			t.Fatalf("%s: %v", tc.method, err)
		}
		if got, want := abitest.Marshal(t, res), abiTestCanon(t, tc.want); got != want {
			t.Errorf("%s = %s, want %s", tc.method, got, want)
		}
	}
	m, _ := FindMethod(a, "balanceOf")
	_, err := UnpackResult(m, nil)
	assertABIInvalid(t, err, "", "returned no data")
	_, err = UnpackResult(m, []byte{1, 2, 3})
	assertABIInvalid(t, err, "", "cannot decode")
	m, _ = FindMethod(a, "decimals")
	_, err = UnpackResult(m, word("100")) // 256 does not fit uint8
	assertABIInvalid(t, err, "", "cannot decode")
}

func abiTestRevert(selector string, words ...[]byte) []byte {
	out := crypto.Keccak256([]byte(selector))[:4]
	for _, w := range words {
		out = append(out, w...)
	}
	return out
}

func TestRevertReason(t *testing.T) {
	pad := func(b []byte) []byte { return common.RightPadBytes(b, (len(b)+31)/32*32) }
	num := func(n int64) []byte { return common.LeftPadBytes(big.NewInt(n).Bytes(), 32) }
	msg := "ERC20: transfer amount exceeds balance" // > 32 bytes: two words
	tests := []struct {
		name string
		data []byte
		want string
		ok   bool
	}{
		{"Error(string)", abiTestRevert("Error(string)", num(32), num(int64(len(msg))), pad([]byte(msg))), msg, true},
		{"Error(string) empty", abiTestRevert("Error(string)", num(32), num(0)), "", true},
		{"Panic overflow", abiTestRevert("Panic(uint256)", num(0x11)), "panic: arithmetic underflow or overflow", true},
		{"Panic unknown", abiTestRevert("Panic(uint256)", num(0x99)), "panic: unknown panic code: 0x99", true},
		{"empty", nil, "", false},
		{"short", []byte{0x08, 0xc3, 0x79}, "", false},
		{"truncated Error", abiTestRevert("Error(string)", num(32)), "", false},
		{"custom error", abiTestRevert("InsufficientBalance(uint256,uint256)", num(5), num(10)), "", false},
	}
	for _, tc := range tests {
		got, ok := RevertReason(tc.data)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: RevertReason = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}

	a := abiTestParse(t, abiTestERC20)
	got, ok := DecodeRevert(a, abiTestRevert("InsufficientBalance(uint256,uint256)", num(5), num(10)))
	if want := `InsufficientBalance(available: "5", required: "10")`; got != want || !ok {
		t.Errorf("DecodeRevert custom = %q, %v; want %q", got, ok, want)
	}
	if got, ok := DecodeRevert(a, tests[0].data); got != msg || !ok {
		t.Errorf("DecodeRevert Error(string) = %q, %v", got, ok)
	}
	if _, ok := DecodeRevert(nil, tests[len(tests)-1].data); ok {
		t.Errorf("DecodeRevert without ABI decoded a custom error")
	}
}

func TestDecodeLog(t *testing.T) {
	a := abiTestParse(t, abiTestERC20)
	value, _ := new(big.Int).SetString(abitest.MaxU256, 10)
	lg := abitest.TransferLog(abitest.AddrLower, strings.ToLower(abitest.Addr2), value)
	ev, ok := DecodeLog(a, lg)
	if !ok {
		t.Fatal("Transfer log not decoded")
	}
	if ev.Event != "Transfer" || ev.Signature != "Transfer(address,address,uint256)" {
		t.Errorf("event = %+v", ev)
	}
	if got, want := abitest.Marshal(t, ev.ReturnValues), abiTestCanon(t, `{"from":"`+abitest.AddrCheck+`","to":"`+abitest.Addr2+`","value":"`+abitest.MaxU256+`"}`); got != want {
		t.Errorf("returnValues = %s, want %s", got, want)
	}

	// Unnamed parameter keyed by position; indexed string given as its hash.
	memo := &types.Log{
		Topics: []common.Hash{crypto.Keccak256Hash([]byte("Memo(string,int256)")), crypto.Keccak256Hash([]byte("tag"))},
		Data:   common.FromHex("0x" + strings.Repeat("ff", 32)),
	}
	ev, ok = DecodeLog(a, memo)
	if !ok {
		t.Fatal("Memo log not decoded")
	}
	if got, want := abitest.Marshal(t, ev.ReturnValues), abiTestCanon(t, `{"tag":"`+memo.Topics[1].Hex()+`","1":"-1"}`); got != want {
		t.Errorf("Memo returnValues = %s, want %s", got, want)
	}

	erc721 := abitest.TransferLog(abitest.AddrLower, abitest.Addr2, big.NewInt(1))
	erc721.Topics = append(erc721.Topics, common.BigToHash(big.NewInt(1)))
	erc721.Data = nil
	short := abitest.TransferLog(abitest.AddrLower, abitest.Addr2, big.NewInt(1))
	short.Data = short.Data[:31]
	unknown := abitest.TransferLog(abitest.AddrLower, abitest.Addr2, big.NewInt(1))
	unknown.Topics[0] = crypto.Keccak256Hash([]byte("Other(address,address,uint256)"))
	noTopics := abitest.TransferLog(abitest.AddrLower, abitest.Addr2, big.NewInt(1))
	noTopics.Topics = nil
	for name, l := range map[string]*types.Log{"erc721 layout": erc721, "short data": short, "unknown event": unknown, "no topics": noTopics, "nil": nil} {
		if ev, ok := DecodeLog(a, l); ok {
			t.Errorf("%s: decoded %+v", name, ev)
		}
	}
	if _, ok := DecodeLog(nil, lg); ok {
		t.Error("decoded without ABI")
	}

	anon := abiTestParse(t, `[{"type":"event","name":"Transfer","anonymous":true,"inputs":[{"indexed":true,"name":"from","type":"address"},{"indexed":true,"name":"to","type":"address"},{"indexed":false,"name":"value","type":"uint256"}]}]`)
	if _, ok := DecodeLog(anon, lg); ok {
		t.Error("decoded an anonymous event by topic[0]")
	}
}

func TestJSONValue(t *testing.T) {
	typ := func(s string) abi.Type {
		ty, err := abi.NewType(s, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		return ty
	}
	tests := []struct {
		typ  string
		v    any
		want string
	}{
		{"uint8", uint8(200), `"200"`},
		{"int32", int32(-5), `"-5"`},
		{"uint256", big.NewInt(42), `"42"`},
		{"int256", big.NewInt(-42), `"-42"`},
		{"address", common.HexToAddress(abitest.AddrLower), `"` + abitest.AddrCheck + `"`},
		{"bytes", []byte{1, 2}, `"0x0102"`},
		{"bytes3", [3]byte{1, 2, 3}, `"0x010203"`},
		{"string[]", common.HexToHash("0x01"), `"` + common.HexToHash("0x01").Hex() + `"`},
		{"uint16[2]", [2]uint16{1, 2}, `["1","2"]`},
		{"bool", true, `true`},
	}
	for _, tc := range tests {
		if got, want := abitest.Marshal(t, JSONValue(typ(tc.typ), tc.v)), abiTestCanon(t, tc.want); got != want {
			t.Errorf("JSONValue(%s, %v) = %s, want %s", tc.typ, tc.v, got, want)
		}
	}
}

// fieldMessage is the Message of the *FieldError in err's chain, or "".
func fieldMessage(err error) string {
	var e *FieldError
	if errors.As(err, &e) {
		return e.Message
	}
	return ""
}
