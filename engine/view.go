package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// TimeLayout is the API's timestamp format: ISO 8601 in UTC with exactly three
// fractional digits (milliseconds).
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime formats t in UTC as TimeLayout, for example
// "2026-11-21T23:25:31.120Z". Sub-millisecond digits are truncated.
func FormatTime(t time.Time) string {
	return t.UTC().Format(TimeLayout)
}

// TxType is the `type` of every transaction record the API returns.
const TxType = "contract-method"

// TransactionView is the JSON form of a transaction, as returned by
// GET /transactions/{id} and carried in callback payloads. Optional fields
// that do not apply are omitted, never null.
type TransactionView struct {
	ID              string   `json:"id"`
	Type            string   `json:"type"`
	ContractID      string   `json:"contractId,omitempty"`
	ContractAddress string   `json:"contractAddress,omitempty"`
	ContractNetwork string   `json:"contractNetwork,omitempty"`
	ContractName    string   `json:"contractName,omitempty"`
	ContractBWType  string   `json:"contractBwtype,omitempty"`
	From            string   `json:"from"`
	Method          string   `json:"method"`
	Parameters      []string `json:"parameters"`
	Value           string   `json:"value"`
	Status          TxStatus `json:"status"`
	Network         string   `json:"network"`
	Created         string   `json:"created"`
	Submitted       string   `json:"submitted,omitempty"`
	Ended           string   `json:"ended,omitempty"`
	TransactionHash string   `json:"transactionHash,omitempty"`
	BlockNumber     *uint64  `json:"blockNumber,omitempty"`
	Nonce           *uint64  `json:"nonce,omitempty"`
	GasUsed         *uint64  `json:"gasUsed,omitempty"`
	// Events is present (possibly empty) once the transaction completed, and
	// whenever the transaction carries decoded events.
	Events       []EventView `json:"events,omitzero"`
	Error        *TxError    `json:"error,omitempty"`
	Callbacks    []string    `json:"callbacks,omitempty"`
	DependsOn    []string    `json:"dependsOn,omitempty"`
	WaitForAsset string      `json:"waitForAsset,omitempty"`
	WaitForValue string      `json:"waitForValue,omitempty"`
	WaitUntil    string      `json:"waitUntil,omitempty"`
	// WaitReason says why the transaction waits (WaitReason); set by
	// the API's reads only while the status is waiting, omitted otherwise.
	WaitReason string `json:"waitReason,omitempty"`
	// Pool and OrderingKey are present on sends through a pool.
	Pool        string `json:"pool,omitempty"`
	OrderingKey string `json:"orderingKey,omitempty"`
}

// EventView is the JSON form of one decoded event (docs/api-decisions.md#transactions):
// the same fields as Event, with the emitting address EIP-55 checksummed.
type EventView struct {
	Event           string         `json:"event"`
	Signature       string         `json:"signature"`
	Address         string         `json:"address"`
	BlockNumber     uint64         `json:"blockNumber"`
	BlockHash       string         `json:"blockHash"`
	TransactionHash string         `json:"transactionHash"`
	LogIndex        uint           `json:"logIndex"`
	ReturnValues    map[string]any `json:"returnValues"`
}

// ViewEvent returns the JSON form of e.
func ViewEvent(e Event) EventView {
	rv := e.ReturnValues
	if rv == nil {
		rv = map[string]any{}
	}
	return EventView{
		Event:           e.Event,
		Signature:       e.Signature,
		Address:         e.Address.Hex(),
		BlockNumber:     e.BlockNumber,
		BlockHash:       e.BlockHash.Hex(),
		TransactionHash: e.TransactionHash.Hex(),
		LogIndex:        e.LogIndex,
		ReturnValues:    rv,
	}
}

// ViewTransaction returns the JSON form of t. Addresses are EIP-55
// checksummed, amounts are decimal strings, timestamps use TimeLayout.
func ViewTransaction(t *Transaction) TransactionView {
	v := TransactionView{
		ID:              t.ID,
		Type:            TxType,
		ContractID:      t.ContractID,
		ContractNetwork: t.Network,
		ContractName:    t.ContractName,
		ContractBWType:  t.ContractBWType,
		From:            t.From.Hex(),
		Method:          t.Method,
		Parameters:      ParameterStrings(t.Parameters),
		Value:           "0",
		Status:          t.Status,
		Network:         t.Network,
		Created:         FormatTime(t.Created),
		BlockNumber:     t.BlockNumber,
		Nonce:           t.Nonce,
		GasUsed:         t.GasUsed,
		Error:           t.Error,
		Callbacks:       t.Callbacks,
		DependsOn:       t.DependsOn,
		WaitForAsset:    t.WaitForAsset,
		Pool:            t.PoolID,
		OrderingKey:     t.OrderingKey,
	}
	if t.ContractAddress != (common.Address{}) {
		v.ContractAddress = t.ContractAddress.Hex()
	}
	if t.Value != nil {
		v.Value = t.Value.String()
	}
	if t.Submitted != nil {
		v.Submitted = FormatTime(*t.Submitted)
	}
	if t.Ended != nil {
		v.Ended = FormatTime(*t.Ended)
	}
	if t.Hash != nil {
		v.TransactionHash = t.Hash.Hex()
	}
	if t.Events != nil || t.Status == StatusCompleted {
		v.Events = make([]EventView, 0, len(t.Events))
		for _, e := range t.Events {
			v.Events = append(v.Events, ViewEvent(e))
		}
	}
	if t.WaitUntil != nil {
		v.WaitUntil = FormatTime(*t.WaitUntil)
	}
	if t.WaitForValue != nil {
		v.WaitForValue = t.WaitForValue.String()
	}
	return v
}

// ParameterStrings returns a transaction's arguments as the API shows them,
// an array of strings (the specification's type of `parameters`): strings
// (addresses, integers in decimal, bytes in hex) as they are, booleans as
// "true" or "false", arrays and tuples as their JSON text, in the normalized
// form PackCall stored (tuples as an object keyed by component name). It is
// never nil.
func ParameterStrings(params []any) []string {
	out := make([]string, len(params))
	for i, p := range params {
		switch p := p.(type) {
		case string:
			out[i] = p
		case bool:
			out[i] = strconv.FormatBool(p)
		default:
			out[i] = jsonText(p)
		}
	}
	return out
}

// jsonText is v's compact JSON text, with <, > and & as they are.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Parameters come from PackCall or from the store's JSON, which
		// always encode; show the value rather than lose it.
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
