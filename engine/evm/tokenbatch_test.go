package evm

import (
	"context"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// TestReadTokenInfosBatch: engine.ReadTokenInfos over JSON-RPC to the
// simulated backend reads tokens in one batch: full info for an unknown
// token, the supply alone with the fixed fields given, and a per-token
// not-a-token error for an address without code, the others unharmed;
// through a chain that cannot batch (single calls) the answers are the
// same.
func TestReadTokenInfosBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := mustKey(t)
	client := newSimClient(t, key)
	supply := ether(1_000_000)
	tk := deployToken(ctx, t, client, key, supply)
	empty := common.HexToAddress("0x000000000000000000000000000000000000dead")
	static := &engine.TokenStatic{Name: "Kept", Symbol: "KPT", Decimals: 6}
	reads := []engine.TokenRead{{Address: tk.addr}, {Address: empty}, {Address: tk.addr, Static: static}}
	single := struct{ ethereum.ContractCaller }{client}
	for _, chain := range []ethereum.ContractCaller{client, single} {
		noBatch := chain == single
		res, err := engine.ReadTokenInfos(ctx, chain, reads)
		if err != nil {
			t.Fatalf("noBatch %v: %v", noBatch, err)
		}
		if i := res.Infos[0]; res.Errs[0] != nil || i.Name != "Test Token" || i.Symbol != "TT" || i.Decimals != 18 || i.TotalSupply.Cmp(supply) != 0 {
			t.Fatalf("noBatch %v: token: %+v %v", noBatch, i, res.Errs[0])
		}
		if !engine.IsNotToken(res.Errs[1]) {
			t.Fatalf("noBatch %v: no code at %s: %v, want not a token", noBatch, empty.Hex(), res.Errs[1])
		}
		if i := res.Infos[2]; res.Errs[2] != nil || i.Name != "Kept" || i.Decimals != 6 || i.TotalSupply.Cmp(supply) != 0 {
			t.Fatalf("noBatch %v: token with its fixed fields given: %+v %v", noBatch, i, res.Errs[2])
		}
	}
}
