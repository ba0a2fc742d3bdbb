package engine

import (
	"encoding/json"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/txengine/txengine/engine/abicodec"
)

func TestFormatTime(t *testing.T) {
	loc := time.FixedZone("X", 2*3600)
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 21, 23, 25, 31, 0, time.UTC), "2026-11-21T23:25:31.000Z"},
		{time.Date(2026, 11, 21, 23, 25, 31, 120_000_000, time.UTC), "2026-11-21T23:25:31.120Z"},
		{time.Date(2026, 11, 21, 23, 25, 31, 123_999_999, time.UTC), "2026-11-21T23:25:31.123Z"},
		{time.Date(2026, 11, 22, 1, 25, 31, 5_000_000, loc), "2026-11-21T23:25:31.005Z"},
	}
	for _, tt := range tests {
		if got := FormatTime(tt.in); got != tt.want {
			t.Errorf("FormatTime(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestViewTransactionNew(t *testing.T) {
	tx := &Transaction{
		ID: "4b7e3c56-0b5e-4f3e-9a55-9d1c2a3b4c5d", Owner: "u", Network: "dev",
		From:       common.HexToAddress("0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"),
		ContractID: "c", ContractAddress: common.HexToAddress("0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359"),
		ContractName: "Demo", ContractBWType: TypeERC20,
		Method: "transfer", Parameters: []any{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "10"},
		Status: StatusNew, Created: time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC),
	}
	b, err := json.Marshal(ViewTransaction(tx))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"4b7e3c56-0b5e-4f3e-9a55-9d1c2a3b4c5d","type":"contract-method","contractId":"c",` +
		`"contractAddress":"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359","contractNetwork":"dev","contractName":"Demo",` +
		`"contractBwtype":"erc20","from":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed","method":"transfer",` +
		`"parameters":["0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed","10"],"value":"0","status":"new","network":"dev",` +
		`"created":"2026-01-02T03:04:05.006Z"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}

	// No parameters is an empty array, never null.
	tx.Parameters = nil
	b, _ = json.Marshal(ViewTransaction(tx))
	if !strings.Contains(string(b), `"parameters":[]`) {
		t.Errorf("nil parameters: %s", b)
	}
}

func TestViewTransactionCompleted(t *testing.T) {
	sub := time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC)
	end := sub.Add(1500 * time.Millisecond)
	nonce, block, gas := uint64(7), uint64(42), uint64(51234)
	hash := common.HexToHash("0xabc")
	tx := &Transaction{
		ID: "t", Network: "dev", Method: "transfer", Status: StatusCompleted, Value: big.NewInt(5),
		Created: sub, Submitted: &sub, Ended: &end, Nonce: &nonce, Hash: &hash, BlockNumber: &block, GasUsed: &gas,
		Callbacks: []string{"https://example.com/cb"}, DependsOn: []string{"d"},
		WaitForAsset: "ETH", WaitForValue: big.NewInt(1000),
	}
	var got map[string]any
	b, _ := json.Marshal(ViewTransaction(tx))
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	checks := map[string]any{
		"submitted": "2026-01-02T03:04:06.000Z", "ended": "2026-01-02T03:04:07.500Z",
		"transactionHash": hash.Hex(), "blockNumber": 42.0, "nonce": 7.0, "gasUsed": 51234.0,
		"value": "5", "waitForAsset": "ETH", "waitForValue": "1000",
	}
	for k, v := range checks {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if ev, ok := got["events"].([]any); !ok || len(ev) != 0 {
		t.Errorf("events = %v, want [] on a completed transaction", got["events"])
	}
	if _, ok := got["error"]; ok {
		t.Error("error on a completed transaction")
	}
	if _, ok := got["contractAddress"]; ok {
		t.Error("zero contract address shown")
	}

	tx.Events = []Event{{Event: "Transfer", Address: common.HexToAddress("0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359"), BlockNumber: 42}}
	b, _ = json.Marshal(ViewTransaction(tx))
	if !strings.Contains(string(b), `"address":"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"`) || !strings.Contains(string(b), `"returnValues":{}`) {
		t.Errorf("event view: %s", b)
	}

	tx.Status, tx.Events, tx.Error = StatusFailed, nil, &TxError{Code: TxReverted, Message: "execution reverted: no"}
	b, _ = json.Marshal(ViewTransaction(tx))
	if !strings.Contains(string(b), `"error":{"code":"reverted","message":"execution reverted: no"}`) || strings.Contains(string(b), `"events"`) {
		t.Errorf("failed view: %s", b)
	}
}

// TestParameterStrings checks the specification's form of `parameters`, an
// array of strings, for every kind of argument PackCall normalizes, both as
// PackCall returns them and as they come back from a store's JSON.
func TestParameterStrings(t *testing.T) {
	a := abiTestParse(t, `[{"type":"function","name":"g","stateMutability":"nonpayable","inputs":[`+
		`{"name":"ok","type":"bool"},{"name":"xs","type":"uint256[]"},`+
		`{"name":"p","type":"tuple","components":[{"name":"who","type":"address"},{"name":"n","type":"uint8"},{"name":"on","type":"bool"}]},`+
		`{"name":"s","type":"string"},{"name":"b","type":"bytes2[2]"},{"name":"off","type":"bool"},{"name":"flags","type":"bool[]"}],"outputs":[]}]`)
	m := a.Methods["g"]
	args := []json.RawMessage{
		json.RawMessage(`true`), json.RawMessage(`["1","20"]`),
		json.RawMessage(`{"n":"7","who":"0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed","on":false}`),
		json.RawMessage(`"a<b & \"c\""`), json.RawMessage(`["0x0102","0xA0B0"]`), json.RawMessage(`false`), json.RawMessage(`[true,false]`),
	}
	_, params, err := abicodec.PackCall(&m, args)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"true", `["1","20"]`,
		`{"n":"7","on":false,"who":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}`,
		`a<b & "c"`, `["0x0102","0xa0b0"]`, "false", "[true,false]",
	}
	if got := ParameterStrings(params); !slices.Equal(got, want) {
		t.Errorf("from PackCall:\n got %q\nwant %q", got, want)
	}
	// A store keeps them as JSON and reads them back as JSON values.
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	var stored []any
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	if got := ParameterStrings(stored); !slices.Equal(got, want) {
		t.Errorf("from the store:\n got %q\nwant %q", got, want)
	}
	if got := ParameterStrings(nil); got == nil || len(got) != 0 {
		t.Errorf("nil parameters: %#v, want an empty non-nil slice", got)
	}
}
