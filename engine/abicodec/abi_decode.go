package abicodec

// ABI codec, decoding side: call results, revert data and event logs, all
// in the JSON form documented in abi.go.

import (
	"bytes"
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// JSONValue turns a value decoded by go-ethereum for the ABI type t into its
// JSON-friendly form: integers as decimal strings, addresses EIP-55
// checksummed, bytes/bytesN/function as 0x-hex, bools and strings as
// themselves, arrays as []any and tuples as map[string]any keyed by
// component name. A common.Hash given for a dynamic type (the topic of an
// indexed string, bytes, array or tuple event parameter) becomes its 0x-hex.
// Values of unexpected Go types are returned unchanged.
func JSONValue(t abi.Type, v any) any {
	if h, ok := v.(common.Hash); ok && t.T != abi.FixedBytesTy {
		return h.Hex()
	}
	return abiValue(t, reflect.ValueOf(v))
}

func abiValue(t abi.Type, v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	for v.Kind() == reflect.Interface || (v.Kind() == reflect.Pointer && v.Type() != reflect.TypeFor[*big.Int]()) {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch t.T {
	case abi.IntTy, abi.UintTy:
		switch v.Kind() {
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
			return strconv.FormatUint(v.Uint(), 10)
		case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
			return strconv.FormatInt(v.Int(), 10)
		case reflect.Pointer:
			if v.IsNil() {
				return nil
			}
			return v.Interface().(*big.Int).String()
		case reflect.Struct:
			if n, ok := v.Interface().(big.Int); ok {
				return n.String()
			}
		}
	case abi.AddressTy:
		if a, ok := v.Interface().(common.Address); ok {
			return a.Hex()
		}
	case abi.BytesTy, abi.FixedBytesTy, abi.FunctionTy, abi.HashTy:
		if (v.Kind() == reflect.Slice || v.Kind() == reflect.Array) && v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, v.Len())
			reflect.Copy(reflect.ValueOf(b), v)
			return abiHex(b)
		}
	case abi.BoolTy:
		if v.Kind() == reflect.Bool {
			return v.Bool()
		}
	case abi.StringTy:
		if v.Kind() == reflect.String {
			return v.String()
		}
	case abi.SliceTy, abi.ArrayTy:
		if v.Kind() == reflect.Slice || v.Kind() == reflect.Array {
			out := make([]any, v.Len())
			for i := range out {
				out[i] = abiValue(*t.Elem, v.Index(i))
			}
			return out
		}
	case abi.TupleTy:
		if v.Kind() == reflect.Struct && v.NumField() == len(t.TupleElems) {
			out := make(map[string]any, len(t.TupleElems))
			for i, name := range t.TupleRawNames {
				out[name] = abiValue(*t.TupleElems[i], v.Field(i))
			}
			return out
		}
	}
	return v.Interface()
}

// UnpackResult decodes the return data of a call of m into its JSON form
// (JSONValue): nil when m has no outputs, the value itself for one output,
// a []any for several. Return data that does not decode (typically empty
// data from an address without code, or an ABI that does not match the
// contract) is invalid_argument without field.
func UnpackResult(m *abi.Method, out []byte) (result any, err error) {
	if len(m.Outputs) == 0 {
		return nil, nil
	}
	values, err := abiSafeUnpack(m.Outputs, out)
	if err != nil {
		if len(out) == 0 {
			return nil, invalid("", "%s returned no data (no contract at this address, or it does not implement the method)", m.Sig)
		}
		return nil, invalid("", "cannot decode the result of %s: %v", m.Sig, err)
	}
	if len(values) != len(m.Outputs) {
		return nil, invalid("", "cannot decode the result of %s: got %d values for %d outputs", m.Sig, len(values), len(m.Outputs))
	}
	if len(values) == 1 {
		return JSONValue(m.Outputs[0].Type, values[0]), nil
	}
	res := make([]any, len(values))
	for i, v := range values {
		res[i] = JSONValue(m.Outputs[i].Type, v)
	}
	return res, nil
}

// abiSafeUnpack is args.Unpack that turns a panic on hostile data into an error.
func abiSafeUnpack(args abi.Arguments, data []byte) (values []any, err error) {
	defer func() {
		if r := recover(); r != nil {
			values, err = nil, fmt.Errorf("malformed data: %v", r)
		}
	}()
	return args.Unpack(data)
}

var (
	abiErrorSelector = []byte{0x08, 0xc3, 0x79, 0xa0} // Error(string)
	abiPanicSelector = []byte{0x4e, 0x48, 0x7b, 0x71} // Panic(uint256)
)

// RevertReason decodes revert data of the standard forms: Error(string)
// gives its message; Panic(uint256) gives "panic: " and go-ethereum's
// description of the code (e.g. "panic: arithmetic underflow or overflow").
// ok is false for any other data, including empty data and custom errors
// (see DecodeRevert).
func RevertReason(data []byte) (reason string, ok bool) {
	if len(data) < 4 || (!bytes.Equal(data[:4], abiErrorSelector) && !bytes.Equal(data[:4], abiPanicSelector)) {
		return "", false
	}
	reason, err := abi.UnpackRevert(data)
	if err != nil {
		return "", false
	}
	if bytes.Equal(data[:4], abiPanicSelector) {
		reason = "panic: " + reason
	}
	return reason, true
}

// DecodeRevert is RevertReason that also decodes the custom errors declared
// in a (which may be nil), formatted as Name(param: value, ...) with values
// in their JSON form, e.g. `InsufficientBalance(available: "5", required:
// "10")`.
func DecodeRevert(a *abi.ABI, data []byte) (string, bool) {
	if reason, ok := RevertReason(data); ok {
		return reason, true
	}
	if a == nil || len(data) < 4 {
		return "", false
	}
	for _, e := range a.Errors {
		if !bytes.Equal(e.ID[:4], data[:4]) {
			continue
		}
		values, err := abiSafeUnpack(e.Inputs, data[4:])
		if err != nil || len(values) != len(e.Inputs) {
			return "", false
		}
		parts := make([]string, len(values))
		for i, v := range values {
			parts[i] = e.Inputs[i].Name + ": " + abiCompactJSON(JSONValue(e.Inputs[i].Type, v))
		}
		return e.Name + "(" + strings.Join(parts, ", ") + ")", true
	}
	return "", false
}

// abiCompactJSON renders a JSON-friendly value for a human-readable message.
func abiCompactJSON(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = abiCompactJSON(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + abiCompactJSON(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		return fmt.Sprint(x)
	}
}

// Decoded is an event log decoded with its ABI: the event's name and
// signature and its parameters in their JSON form. The engine's Event adds
// where the log is (engine.DecodeLog).
type Decoded struct {
	// Event is the event's name, Signature its canonical signature.
	Event, Signature string
	// ReturnValues maps each parameter name to its JSON form.
	ReturnValues map[string]any
}

// DecodeLog decodes log with the events of a. The event is found by
// topic[0]; its indexed parameters are read from the remaining topics and
// the others from the data. ReturnValues maps each parameter name to its
// JSON form (JSONValue); an unnamed parameter is keyed by its position
// ("0", "1", ...). go-ethereum renames unnamed event parameters to argN, so
// a parameter literally named argN at position N is keyed "N" too. Indexed
// parameters of dynamic type (string, bytes, arrays, tuples) are only
// present as their keccak256 topic, given as 0x-hex.
//
// ok is false for a log without topics, an event not in a, an anonymous
// event, or a log that does not match the event's layout (e.g. an ERC-721
// Transfer, whose tokenId is indexed, against the ERC-20 Transfer event).
func DecodeLog(a *abi.ABI, log *types.Log) (ev Decoded, ok bool) {
	if a == nil || log == nil || len(log.Topics) == 0 {
		return Decoded{}, false
	}
	var event *abi.Event
	for _, e := range a.Events {
		if e.ID == log.Topics[0] && !e.Anonymous {
			event = &e
			break
		}
	}
	if event == nil {
		return Decoded{}, false
	}
	var indexed int
	for _, in := range event.Inputs {
		if in.Indexed {
			indexed++
		}
	}
	if indexed != len(log.Topics)-1 {
		return Decoded{}, false
	}
	values, err := abiSafeUnpack(event.Inputs, log.Data)
	if err != nil {
		return Decoded{}, false
	}
	ret := make(map[string]any, len(event.Inputs))
	topic, data := 1, 0
	for i, in := range event.Inputs {
		key := in.Name
		if key == "" || key == fmt.Sprintf("arg%d", i) {
			key = strconv.Itoa(i)
		}
		if !in.Indexed {
			if data >= len(values) {
				return Decoded{}, false
			}
			ret[key] = JSONValue(in.Type, values[data])
			data++
			continue
		}
		h := log.Topics[topic]
		topic++
		switch in.Type.T {
		case abi.StringTy, abi.BytesTy, abi.SliceTy, abi.ArrayTy, abi.TupleTy:
			ret[key] = h.Hex()
		default:
			v, err := abiSafeUnpack(abi.Arguments{{Name: "v", Type: in.Type}}, h.Bytes())
			if err != nil || len(v) != 1 {
				return Decoded{}, false
			}
			ret[key] = JSONValue(in.Type, v[0])
		}
	}
	return Decoded{Event: event.RawName, Signature: event.Sig, ReturnValues: ret}, true
}
