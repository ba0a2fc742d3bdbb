package engine

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/txengine/txengine/engine/abicodec"
)

const subscriptionTestABI = `[
 {"type":"event","name":"Transfer","inputs":[
  {"name":"from","type":"address","indexed":true},{"name":"to","type":"address","indexed":true},
  {"name":"value","type":"uint256","indexed":false}]},
 {"type":"event","name":"Named","inputs":[
  {"name":"label","type":"string","indexed":true},{"name":"id","type":"uint64","indexed":true},
  {"name":"ok","type":"bool","indexed":true}]},
 {"type":"event","name":"Listed","inputs":[{"name":"ids","type":"uint256[]","indexed":true}]}
]`

func subscriptionTestEvent(t *testing.T, name string) *abi.Event {
	t.Helper()
	a, err := abicodec.ParseABI([]byte(subscriptionTestABI))
	if err != nil {
		t.Fatal(err)
	}
	ev, ok := a.Events[name]
	if !ok {
		t.Fatalf("no event %s", name)
	}
	return &ev
}

func addrTopic(a common.Address) common.Hash { return common.BytesToHash(a.Bytes()) }

// TestEventFilterTopics: filters on indexed arguments become the topics the
// log holds (addresses padded, strings hashed, lists OR'ed, positions left
// open where no filter is given); anything else is a 400 on its field.
func TestEventFilterTopics(t *testing.T) {
	transfer := subscriptionTestEvent(t, "Transfer")
	a1 := common.HexToAddress("0x52908400098527886E0F7030069857D2E4169EE7")
	a2 := common.HexToAddress("0x8617E340B3D01FA5F11F306F4090FD50E238070D")
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }

	got, err := EventFilterTopics(transfer, nil)
	if err != nil || len(got) != 1 || got[0][0] != TransferTopic {
		t.Fatalf("no filters: %v, %v", got, err)
	}
	got, err = EventFilterTopics(transfer, map[string]json.RawMessage{"to": raw(`"` + a1.Hex() + `"`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(got[1]) != 0 || len(got[2]) != 1 || got[2][0] != addrTopic(a1) {
		t.Fatalf("to filter: %v", got)
	}
	got, err = EventFilterTopics(transfer, map[string]json.RawMessage{"from": raw(`["` + a1.Hex() + `","` + a2.Hex() + `"]`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !slices.Equal(got[1], []common.Hash{addrTopic(a1), addrTopic(a2)}) {
		t.Fatalf("from list: %v", got)
	}

	named := subscriptionTestEvent(t, "Named")
	got, err = EventFilterTopics(named, map[string]json.RawMessage{"label": raw(`"gold"`), "ok": raw(`true`)})
	if err != nil {
		t.Fatal(err)
	}
	if got[1][0] != crypto.Keccak256Hash([]byte("gold")) || len(got[2]) != 0 || got[3][0] != common.BigToHash(common.Big1) {
		t.Fatalf("string and bool: %v", got)
	}

	for _, c := range []struct {
		ev      *abi.Event
		filters map[string]json.RawMessage
		field   string
	}{
		{transfer, map[string]json.RawMessage{"nobody": raw(`1`)}, "filters.nobody"},
		{transfer, map[string]json.RawMessage{"value": raw(`"1"`)}, "filters.value"},
		{transfer, map[string]json.RawMessage{"to": raw(`"0x12"`)}, "filters.to"},
		{transfer, map[string]json.RawMessage{"to": raw(`[]`)}, "filters.to"},
		{transfer, map[string]json.RawMessage{"to": raw(`[1,`)}, "filters.to"},
		{named, map[string]json.RawMessage{"id": raw(`-1`)}, "filters.id"},
		{subscriptionTestEvent(t, "Listed"), map[string]json.RawMessage{"ids": raw(`[1]`)}, "filters.ids"},
	} {
		_, err := EventFilterTopics(c.ev, c.filters)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidArgument || e.Field != c.field {
			t.Errorf("%s %v: %v, want invalid_argument on %s", c.ev.Name, c.filters, err, c.field)
		}
	}
}
