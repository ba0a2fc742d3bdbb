package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

func TestEventJSONChecksumsAddress(t *testing.T) {
	addr := common.HexToAddress("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed")
	ev := Event{Event: "Transfer", Address: addr, BlockNumber: 7, ReturnValues: map[string]any{"value": "1"}}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"address":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"`) || strings.Count(string(b), `"address"`) != 1 {
		t.Fatalf("address not checksummed exactly once: %s", b)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || back.Address != addr || back.BlockNumber != 7 {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}
