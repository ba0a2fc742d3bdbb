package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine/abicodec"

	"github.com/txengine/txengine/engine/internal/abitest"
)

// abiTestERC20 is the ERC-20 Transfer event.
const abiTestERC20 = `[{"type":"event","name":"Transfer","anonymous":false,"inputs":[{"indexed":true,"name":"from","type":"address"},{"indexed":true,"name":"to","type":"address"},{"indexed":false,"name":"value","type":"uint256"}]}]`

func abiTestParse(t *testing.T, raw string) *abi.ABI {
	t.Helper()
	a, err := abicodec.ParseABI([]byte(raw))
	if err != nil {
		t.Fatalf("ParseABI: %v", err)
	}
	return a
}

// TestCodecError: every fault of the ABI codec becomes the engine's error
// with the same field and message (the API's answer unchanged), not_found
// for a method the ABI lacks and invalid_argument otherwise; nil and
// other errors pass through.
func TestCodecError(t *testing.T) {
	a := abiTestParse(t, `[{"type":"function","name":"f","inputs":[{"name":"x","type":"address"}],"outputs":[]}]`)
	m, err := abicodec.FindMethod(a, "f")
	if err != nil {
		t.Fatal(err)
	}
	_, missing := abicodec.FindMethod(a, "g")
	_, badABI := abicodec.ParseABI([]byte(`{}`))
	_, _, badArg := abicodec.PackCall(m, []json.RawMessage{json.RawMessage(`"0x12"`)})
	_, badAddr := abicodec.ParseAddress("to", abitest.AddrBad)
	for _, c := range []struct {
		err          error
		code         Code
		field, inMsg string
	}{
		{missing, CodeNotFound, "method", `method "g" not found in the ABI`},
		{badABI, CodeInvalidArgument, "abi", "abi must be a JSON array"},
		{badArg, CodeInvalidArgument, "arg[0]", "arg[0] must be a 0x-prefixed 20-byte hex address"},
		{badAddr, CodeInvalidArgument, "to", "to fails the EIP-55 checksum (mixed case must match " + abitest.AddrCheck + ")"},
	} {
		got := CodecError(c.err)
		var e *Error
		if !errors.As(got, &e) || e.Code != c.code || e.Field != c.field || e.Message != c.err.(*abicodec.FieldError).Message || !strings.Contains(e.Message, c.inMsg) {
			t.Errorf("CodecError(%v) = %#v, want {%s %s %q}", c.err, got, c.code, c.field, c.inMsg)
		}
	}
	if CodecError(nil) != nil {
		t.Error("CodecError(nil) is not nil")
	}
	if other := ErrFenced; CodecError(other) != other {
		t.Error("CodecError changed an error that is not the codec's")
	}
}

// TestDecodeLogEvent: DecodeLog puts the codec's decoded event at the log's
// place in the chain.
func TestDecodeLogEvent(t *testing.T) {
	a := abiTestParse(t, abiTestERC20)
	value, _ := new(big.Int).SetString(abitest.MaxU256, 10)
	lg := abitest.TransferLog(abitest.AddrLower, strings.ToLower(abitest.Addr2), value)
	ev, ok := DecodeLog(a, lg)
	if !ok {
		t.Fatal("Transfer log not decoded")
	}
	if ev.Event != "Transfer" || ev.Signature != "Transfer(address,address,uint256)" ||
		ev.Address != common.HexToAddress(abitest.Addr2) || ev.BlockNumber != 1234 || ev.BlockHash != lg.BlockHash ||
		ev.TransactionHash != lg.TxHash || ev.LogIndex != 7 || ev.ReturnValues["value"] != abitest.MaxU256 {
		t.Errorf("event = %+v", ev)
	}
	// Event.Address is a common.Address, which encodes in lower case; the
	// checksummed form is the HTTP layer's business (API.md, "Conventions").
	if got := abitest.Marshal(t, ev); !strings.Contains(got, `"logIndex":7`) || !strings.Contains(got, `"blockNumber":1234`) {
		t.Errorf("event JSON = %s", got)
	}
	if _, ok := DecodeLog(nil, lg); ok {
		t.Error("decoded without ABI")
	}
}

func TestDecodeLogs(t *testing.T) {
	a := abiTestParse(t, abiTestERC20)
	known := abitest.TransferLog(abitest.AddrLower, abitest.Addr2, big.NewInt(1))
	other := abitest.TransferLog(abitest.AddrLower, abitest.Addr2, big.NewInt(2))
	other.Address = common.HexToAddress(abitest.AddrLower)
	removed := abitest.TransferLog(abitest.AddrLower, abitest.Addr2, big.NewInt(3))
	removed.Removed = true
	second := abitest.TransferLog(abitest.Addr2, abitest.AddrLower, big.NewInt(4))
	second.Index = 9
	abis := func(addr common.Address) *abi.ABI {
		if addr == common.HexToAddress(abitest.Addr2) {
			return a
		}
		return nil
	}
	events := DecodeLogs(abis, []*types.Log{known, other, removed, nil, second})
	if len(events) != 2 || events[0].LogIndex != 7 || events[1].LogIndex != 9 || events[1].ReturnValues["value"] != "4" {
		t.Fatalf("DecodeLogs = %+v", events)
	}
	if got := abitest.Marshal(t, DecodeLogs(abis, nil)); got != "[]" {
		t.Errorf("DecodeLogs(nil) = %s, want []", got)
	}
}

// TestAsErrorMapsCodecErrors: the error mapping finds a codec field error
// anywhere in a chain, as CodecError would map it, so that callers need
// not convert it themselves; an engine *Error in the chain comes first.
func TestAsErrorMapsCodecErrors(t *testing.T) {
	fe := &abicodec.FieldError{Kind: abicodec.NotFound, Field: "method", Message: "no method f"}
	wrapped := fmt.Errorf("built-in type erc20: %w", fe)
	if e, ok := AsError(wrapped); !ok || e.Code != CodeNotFound || e.Field != "method" || e.Message != "no method f" {
		t.Errorf("AsError(wrapped codec error) = %+v, %v", e, ok)
	}
	if ErrorCode(wrapped) != CodeNotFound || ErrorMessage(wrapped) != "no method f" || !IsNotFound(wrapped) {
		t.Errorf("ErrorCode/ErrorMessage of a codec error = %s, %q", ErrorCode(wrapped), ErrorMessage(wrapped))
	}
	outer := fmt.Errorf("%w: %w", Invalid("to", "bad"), fe)
	if e, _ := AsError(outer); e.Field != "to" {
		t.Errorf("AsError preferred the codec error over the engine's: %+v", e)
	}
	if _, ok := AsError(errors.New("other")); ok {
		t.Error("AsError found an engine error in a plain error")
	}
}
