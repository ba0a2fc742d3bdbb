package abicodec

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine/internal/abitest"
)

// abiFuzzABI holds the methods, events and errors the ABI fuzz targets work
// against: ERC-20 transfer/approve, a method taking every kind of type, a
// few single-type methods, events with indexed static and dynamic
// parameters, and custom errors.
const abiFuzzABI = `[
 {"type":"function","name":"transfer","inputs":[{"name":"to","type":"address"},{"name":"value","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]},
 {"type":"function","name":"approve","inputs":[{"name":"spender","type":"address"},{"name":"value","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]},
 {"type":"function","name":"every","inputs":[
   {"name":"a","type":"uint8"},{"name":"b","type":"int256"},{"name":"c","type":"address"},{"name":"d","type":"bool"},
   {"name":"e","type":"string"},{"name":"f","type":"bytes"},{"name":"g","type":"bytes32"},{"name":"h","type":"uint256[]"},
   {"name":"i","type":"tuple","components":[{"name":"id","type":"uint256"},{"name":"owner","type":"address"},{"name":"tags","type":"string[]"}]}],
  "outputs":[
   {"name":"a","type":"uint8"},{"name":"b","type":"int256"},{"name":"c","type":"address"},{"name":"d","type":"bool"},
   {"name":"e","type":"string"},{"name":"f","type":"bytes"},{"name":"g","type":"bytes32"},{"name":"h","type":"uint256[]"},
   {"name":"i","type":"tuple","components":[{"name":"id","type":"uint256"},{"name":"owner","type":"address"},{"name":"tags","type":"string[]"}]}]},
 {"type":"function","name":"small","inputs":[{"name":"x","type":"int8"},{"name":"y","type":"uint16"},{"name":"z","type":"int64"},{"name":"w","type":"uint24"}],"outputs":[{"name":"","type":"int8"}]},
 {"type":"function","name":"nested","inputs":[{"name":"rows","type":"tuple[]","components":[{"name":"k","type":"bytes4"},{"name":"v","type":"int16[2]"}]},{"name":"m","type":"address[2][]"}],"outputs":[{"name":"","type":"bytes"}]},
 {"type":"function","name":"nothing","inputs":[],"outputs":[]},
 {"type":"event","name":"Transfer","inputs":[{"indexed":true,"name":"from","type":"address"},{"indexed":true,"name":"to","type":"address"},{"indexed":false,"name":"value","type":"uint256"}]},
 {"type":"event","name":"Memo","inputs":[{"indexed":true,"name":"tag","type":"string"},{"indexed":false,"name":"","type":"int256"},{"indexed":false,"name":"note","type":"bytes"}]},
 {"type":"event","name":"Mixed","inputs":[{"indexed":true,"name":"flag","type":"bool"},{"indexed":true,"name":"id","type":"bytes32"},{"indexed":true,"name":"ids","type":"uint256[]"},{"indexed":false,"name":"t","type":"tuple","components":[{"name":"a","type":"int8"},{"name":"s","type":"string[]"}]}]},
 {"type":"event","name":"Anon","anonymous":true,"inputs":[{"indexed":true,"name":"x","type":"uint256"}]},
 {"type":"error","name":"InsufficientBalance","inputs":[{"name":"available","type":"uint256"},{"name":"required","type":"uint256"}]},
 {"type":"error","name":"Denied","inputs":[{"name":"who","type":"address"},{"name":"why","type":"string"},{"name":"codes","type":"int32[]"}]}
]`

// abiFuzzSetup parses abiFuzzABI and returns it with its methods in a
// fixed order (the fuzz input selects one by index).
func abiFuzzSetup(tb testing.TB) (*abi.ABI, []*abi.Method) {
	tb.Helper()
	a, err := ParseABI([]byte(abiFuzzABI))
	if err != nil {
		tb.Fatalf("ParseABI: %v", err)
	}
	var methods []*abi.Method
	for _, name := range []string{"transfer", "approve", "every", "small", "nested", "nothing"} {
		m, err := FindMethod(a, name)
		if err != nil {
			tb.Fatalf("FindMethod(%s): %v", name, err)
		}
		methods = append(methods, m)
	}
	return a, methods
}

// abiFuzzEvery is a valid argument list of every(...).
const abiFuzzEvery = `["255", "-57896044618658097711785492504343953926634992332820282019728792003956564819968", "` + abitest.AddrLower + `", true,
 "héllo", "0xdeadBEEF", "0x` + "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff" + `", ["1", 2, "` + abitest.MaxU256 + `"],
 {"id": "7", "owner": "` + abitest.AddrCheck + `", "tags": ["x", ""]}]`

// FuzzPackCall: NormalizeArgs and PackCall never panic on any `arg`, every
// error is invalid_argument on arg or a path below it, and accepted
// arguments round-trip: the packed call data starts with the method ID and
// decodes (go-ethereum Unpack, then JSONValue) to exactly the normalized
// params PackCall returned.
func FuzzPackCall(f *testing.F) {
	for _, seed := range []struct {
		method uint8
		arg    string
	}{
		{0, `["` + abitest.AddrLower + `", "1000"]`},
		{0, `["` + abitest.AddrCheck + `", 0]`},
		{0, `["` + abitest.AddrBad + `", "1"]`},
		{0, `["` + abitest.AddrLower + `", "` + abitest.TwoTo256 + `"]`},
		{0, `["` + abitest.AddrLower + `", "-1"]`},
		{0, `["` + abitest.AddrLower + `", 1e3]`},
		{0, `["` + abitest.AddrLower + `", "0x10"]`},
		{1, `["` + abitest.Addr2 + `", "` + abitest.MaxU256 + `"]`},
		{1, `{"spender":"` + abitest.Addr2 + `"}`},
		{2, abiFuzzEvery},
		{2, strings.Replace(abiFuzzEvery, `{"id": "7", "owner": "`+abitest.AddrCheck+`", "tags": ["x", ""]}`, `["7", "`+abitest.AddrLower+`", []]`, 1)},
		{2, `[0, "0", "` + abitest.AddrLower + `", false, "", "0x", "0x` + strings.Repeat("00", 32) + `", [], {"id": 0, "owner": "` + abitest.AddrLower + `", "tags": []}]`},
		{3, `[-128, "65535", "-9223372036854775808", "16777215"]`},
		{3, `["128", 65536, "9223372036854775808", 16777216]`},
		{4, `[[{"k":"0x01020304","v":[-32768, "32767"]}], [["` + abitest.AddrLower + `","` + abitest.Addr2 + `"]]]`},
		{4, `[[["0xffffffff",[1,2]]], []]`},
		{5, ``}, {5, `null`}, {5, `[]`}, {5, `[1]`},
		{0, `[`}, {0, `"x"`}, {0, `[null, null]`}, {0, `[{}, []]`},
	} {
		f.Add(seed.method, []byte(seed.arg))
	}
	_, methods := abiFuzzSetup(f)
	f.Fuzz(func(t *testing.T, which uint8, arg []byte) {
		m := methods[int(which)%len(methods)]
		args, err := NormalizeArgs(json.RawMessage(arg))
		if err != nil {
			if e, ok := fuzzAsError(err); !ok || e.Kind != Invalid || e.Field != "arg" {
				t.Fatalf("NormalizeArgs(%q): %v is not invalid_argument on arg", arg, err)
			}
			return
		}
		data, params, err := PackCall(m, args)
		if err != nil {
			if e, ok := fuzzAsError(err); !ok || e.Kind != Invalid || !strings.HasPrefix(e.Field, "arg") {
				t.Fatalf("PackCall(%s, %q): %v is not invalid_argument on arg...", m.Sig, arg, err)
			}
			return
		}
		if len(data) < 4 || string(data[:4]) != string(m.ID) {
			t.Fatalf("PackCall(%s, %q): data %x does not start with the method ID %x", m.Sig, arg, data, m.ID)
		}
		values, err := m.Inputs.Unpack(data[4:])
		if err != nil {
			t.Fatalf("PackCall(%s, %q): packed data %x does not unpack: %v", m.Sig, arg, data, err)
		}
		decoded := make([]any, len(values))
		for i, v := range values {
			decoded[i] = JSONValue(m.Inputs[i].Type, v)
		}
		got, err1 := json.Marshal(decoded)
		want, err2 := json.Marshal(params)
		if err1 != nil || err2 != nil {
			t.Fatalf("marshal: %v, %v", err1, err2)
		}
		if string(got) != string(want) {
			t.Fatalf("PackCall(%s, %q): params %s decode back as %s", m.Sig, arg, want, got)
		}
	})
}

// FuzzUnpackResult: UnpackResult never panics on arbitrary return data of
// any method, and an error is invalid_argument.
func FuzzUnpackResult(f *testing.F) {
	_, methods := abiFuzzSetup(f)
	f.Add(uint8(0), []byte{})
	f.Add(uint8(0), common.LeftPadBytes([]byte{1}, 32))
	f.Add(uint8(3), common.LeftPadBytes([]byte{0xff}, 32))
	f.Add(uint8(4), append(common.LeftPadBytes([]byte{0x20}, 32), common.LeftPadBytes([]byte{0xff, 0xff, 0xff, 0xff}, 32)...))
	if args, err := NormalizeArgs(json.RawMessage(abiFuzzEvery)); err == nil {
		if data, _, err := PackCall(methods[2], args); err == nil {
			f.Add(uint8(2), data[4:])
			f.Add(uint8(2), data[4:len(data)-5])
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, out []byte) {
		m := methods[int(which)%len(methods)]
		res, err := UnpackResult(m, out)
		if err != nil {
			if e, ok := fuzzAsError(err); !ok || e.Kind != Invalid {
				t.Fatalf("UnpackResult(%s, %x): %v is not invalid_argument", m.Sig, out, err)
			}
			return
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("UnpackResult(%s, %x) = %#v does not encode as JSON: %v", m.Sig, out, res, err)
		}
	})
}

// FuzzDecodeRevert: RevertReason and DecodeRevert never panic on arbitrary
// revert data, and DecodeRevert agrees with RevertReason on the standard
// forms.
func FuzzDecodeRevert(f *testing.F) {
	a, _ := abiFuzzSetup(f)
	word := func(b ...byte) []byte { return common.LeftPadBytes(b, 32) }
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	f.Add([]byte{})
	f.Add(abiErrorSelector)
	f.Add(cat(abiErrorSelector, word(0x20), word(5), common.RightPadBytes([]byte("nope!"), 32)))
	f.Add(cat(abiErrorSelector, word(0x20), word(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)))
	f.Add(cat(abiPanicSelector, word(0x11)))
	f.Add(cat(abiPanicSelector, word(0xff, 0xff)))
	f.Add(cat(a.Errors["InsufficientBalance"].ID.Bytes()[:4], word(5), word(10)))
	f.Add(cat(a.Errors["Denied"].ID.Bytes()[:4], word(), word(0x60), word(0xa0), word(2), common.RightPadBytes([]byte("no"), 32), word(1), word(0xff)))
	f.Fuzz(func(t *testing.T, data []byte) {
		reason, ok := RevertReason(data)
		r2, ok2 := DecodeRevert(a, data)
		if ok && (!ok2 || r2 != reason) {
			t.Fatalf("DecodeRevert(%x) = %q, %v; RevertReason gave %q", data, r2, ok2, reason)
		}
		if r3, ok3 := DecodeRevert(nil, data); ok3 != ok || r3 != reason {
			t.Fatalf("DecodeRevert(nil, %x) = %q, %v; RevertReason gave %q, %v", data, r3, ok3, reason, ok)
		}
	})
}

// FuzzDecodeLog: DecodeLog never panics on a log with arbitrary topics and
// data, and a decoded log names one of the ABI's non-anonymous events and
// has one value per parameter.
func FuzzDecodeLog(f *testing.F) {
	a, _ := abiFuzzSetup(f)
	word := func(b ...byte) []byte { return common.LeftPadBytes(b, 32) }
	ids := []common.Hash{a.Events["Transfer"].ID, a.Events["Memo"].ID, a.Events["Mixed"].ID, a.Events["Anon"].ID}
	f.Add(uint8(0), uint8(2), append(word(1), word(2)...), word(100))
	f.Add(uint8(0), uint8(2), append(word(0xff, 1), word(2)...), word(100))
	f.Add(uint8(0), uint8(3), append(word(1), append(word(2), word(3)...)...), word(100))
	f.Add(uint8(1), uint8(1), word(9), append(word(0xff), append(word(0x40), word(0)...)...))
	f.Add(uint8(1), uint8(1), word(9), append(word(1), append(word(0x40), word(0xff, 0xff)...)...))
	f.Add(uint8(2), uint8(3), append(word(1), append(word(2), word(3)...)...), append(word(0x20), append(word(1), append(word(0x40), word(0)...)...)...))
	f.Add(uint8(2), uint8(3), append(word(2), append(word(2), word(3)...)...), []byte{})
	f.Add(uint8(3), uint8(1), word(1), []byte{})
	f.Add(uint8(4), uint8(0), []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, which, ntopics uint8, topics, data []byte) {
		log := &types.Log{Data: data}
		switch int(which) % (len(ids) + 1) {
		case len(ids): // no topic[0] at all
		default:
			log.Topics = append(log.Topics, ids[int(which)%(len(ids)+1)])
		}
		for i := 0; i < int(ntopics%5); i++ {
			var h common.Hash
			if len(topics) > 0 {
				n := copy(h[:], topics)
				topics = topics[n:]
			}
			log.Topics = append(log.Topics, h)
		}
		ev, ok := DecodeLog(a, log)
		if !ok {
			return
		}
		e, found := a.Events[ev.Event]
		if !found || e.Anonymous || e.ID != log.Topics[0] {
			t.Fatalf("DecodeLog decoded %q, which is not the event of topic %s", ev.Event, log.Topics[0])
		}
		if len(ev.ReturnValues) != len(e.Inputs) {
			t.Fatalf("DecodeLog(%s): %d values for %d parameters: %v", ev.Event, len(ev.ReturnValues), len(e.Inputs), ev.ReturnValues)
		}
		if _, err := json.Marshal(ev.ReturnValues); err != nil {
			t.Fatalf("DecodeLog(%s) values do not encode as JSON: %v", ev.Event, err)
		}
	})
}

// fuzzAsError returns the *FieldError in err's chain.
func fuzzAsError(err error) (*FieldError, bool) {
	var e *FieldError
	ok := errors.As(err, &e)
	return e, ok
}
