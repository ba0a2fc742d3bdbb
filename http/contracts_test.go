package http

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/engine"
)

func TestContractRegistration(t *testing.T) {
	e := newContractEnv(t)
	tok := e.aliceToken20.Address.Hex()
	rec := e.req("PUT", "/contracts", "/contracts", e.aliceToken, `{"name":"Mine","network":"dev","address":"`+strings.ToLower(tok)+`","type":"erc20"}`)
	wantStatus(t, rec, 201)
	var ct contractView
	decodeData(t, rec, &ct)
	if ct.Address != tok || ct.BWType != "erc20" || ct.BWVer != "1" || len(ct.ABI) < 100 || ct.Network != "dev" {
		t.Fatalf("contract: %+v", ct)
	}
	stored, err := e.store.ContractByID(context.Background(), ct.ID)
	if err != nil || stored.Block != 20 || stored.Owner != e.alice.ID {
		t.Fatalf("stored: %+v %v", stored, err)
	}
	rec = e.req("PUT", "/contracts", "/contracts", e.aliceToken, `{"name":"Raw","network":"dev","address":"`+tok+`","abi":`+testERC20ABI+`}`)
	wantStatus(t, rec, 201)
	var raw contractView
	decodeData(t, rec, &raw)
	if raw.BWType != "" || raw.BWVer != "" || strings.Contains(rec.Body.String(), `"bwtype"`) {
		t.Fatalf("raw abi contract: %s", rec.Body.String())
	}

	rec = e.req("GET", "/contracts", "/contracts?text=RAW", e.aliceToken, "")
	var list []contractView
	decodeData(t, rec, &list)
	if len(list) != 1 || list[0].ID != raw.ID {
		t.Fatalf("text search: %s", rec.Body.String())
	}
	rec = e.req("GET", "/contracts", "/contracts?text="+strings.ToLower(tok[2:10]), e.aliceToken, "")
	decodeData(t, rec, &list)
	if len(list) != 4 { // Demo Token, Mine, Raw, and not Badge (other address)... plus none of bob's
		if len(list) != 3 {
			t.Fatalf("address search: %d %s", len(list), rec.Body.String())
		}
	}
	rec = e.req("GET", "/contracts/{contractId}", "/contracts/"+ct.ID, e.aliceToken, "")
	wantStatus(t, rec, 200)
	rec = e.req("GET", "/contracts/{contractId}", "/contracts/"+ct.ID, e.bobToken, "")
	wantError(t, rec, 404, engine.CodeNotFound, "")

	writes := e.store.rows(t)
	for _, tt := range []struct{ body, field string }{
		{`{"network":"dev","address":"` + tok + `","type":"erc20"}`, "name"},
		{`{"name":"x","network":"main","address":"` + tok + `","type":"erc20"}`, "network"},
		{`{"name":"x","address":"` + tok + `","type":"erc20"}`, "network"},
		{`{"name":"x","network":"dev","address":"` + wrongChecksum(tok) + `","type":"erc20"}`, "address"},
		{`{"name":"x","network":"dev","address":"0x12","type":"erc20"}`, "address"},
		{`{"name":"x","network":"dev","address":"` + tok + `"}`, "abi"},
		{`{"name":"x","network":"dev","address":"` + tok + `","type":"erc20","abi":[]}`, "abi"},
		{`{"name":"x","network":"dev","address":"` + tok + `","type":"erc1155"}`, "type"},
		{`{"name":"x","network":"dev","address":"` + tok + `","abi":{"a":1}}`, "abi"},
		{`{"name":"x","network":"dev","address":"` + tok + `","abi":[{"type":"function","name":"f","inputs":[{"type":"uint7"}]}]}`, "abi"},
		{`{"name":"x","network":"dev","address":"` + tok + `","type":"erc20","extra":1}`, "extra"},
	} {
		rec := e.req("PUT", "/contracts", "/contracts", e.aliceToken, tt.body)
		wantError(t, rec, 400, engine.CodeInvalidArgument, tt.field)
	}
	if e.store.rows(t) != writes {
		t.Fatal("a refused registration was stored")
	}
}

func TestSendContract(t *testing.T) {
	e := newContractEnv(t)
	ct := e.aliceToken20
	to := e.bobAcct.Address.Hex()
	rec := e.req("POST", "/contracts/{contractId}/send/{method}", "/contracts/"+ct.ID+"/send/transfer(address,uint256)", e.aliceToken,
		`{"arg":["`+strings.ToLower(to)+`", 5],"waitForAsset":"eth","waitForValue":"10","callbacks":["https://example.com/cb"]}`)
	wantStatus(t, rec, 202)
	var tx engine.TransactionView
	decodeData(t, rec, &tx)
	if tx.Method != "transfer" || tx.Parameters[0] != to || tx.Parameters[1] != "5" || tx.Status != "new" ||
		tx.ContractID != ct.ID || tx.WaitForAsset != "ETH" || tx.WaitForValue != "10" || tx.From != e.aliceAcct.Address.Hex() {
		t.Fatalf("send: %s", rec.Body.String())
	}
	sub := e.engine.submissions()
	if len(sub) != 1 || sub[0].ABI != nil || sub[0].Value.Sign() != 0 {
		t.Fatalf("submissions: %+v", sub)
	}
	// dependsOn on the first one, waitForAsset as a token id (normalized to its address).
	rec = e.req("POST", "/contracts/{contractId}/send/{method}", "/contracts/"+ct.ID+"/send/transfer", e.aliceToken,
		`{"arg":["`+to+`","1"],"dependsOn":["`+tx.ID+`","`+tx.ID+`"],"waitForAsset":"`+ct.ID+`","waitForValue":"1","from":"`+e.aliceAcct.ID+`"}`)
	wantStatus(t, rec, 202)
	var dep engine.TransactionView
	decodeData(t, rec, &dep)
	if len(dep.DependsOn) != 1 || dep.DependsOn[0] != tx.ID || dep.WaitForAsset != ct.Address.Hex() {
		t.Fatalf("dependent: %s", rec.Body.String())
	}

	// Direct send: no contract id, the ABI travels with the transaction.
	rec = e.req("POST", "/contracts/network/{network}/address/{address}/send/{method}",
		"/contracts/network/dev/address/"+ct.Address.Hex()+"/send/transfer", e.aliceToken, `{"arg":["`+to+`","2"],"type":"erc20"}`)
	wantStatus(t, rec, 202)
	sub = e.engine.submissions()
	if last := sub[len(sub)-1]; last.ContractID != "" || len(last.ABI) == 0 || last.ContractBWType != "erc20" || last.ContractAddress != ct.Address {
		t.Fatalf("direct send: %+v", last)
	}
	if strings.Contains(rec.Body.String(), `"contractId"`) {
		t.Fatalf("direct send has a contractId: %s", rec.Body.String())
	}

	bobTx := &engine.Transaction{ID: "00000000-0000-4000-8000-0000000000b0", Owner: e.bob.ID, AccountID: e.bobAcct.ID, Network: "dev", Status: engine.StatusNew, Created: testNow}
	e.store.putTransaction(t, bobTx)
	payable := `[{"type":"function","name":"deposit","stateMutability":"payable","inputs":[],"outputs":[]},{"type":"function","name":"f","stateMutability":"nonpayable","inputs":[],"outputs":[]}]`
	n := len(e.engine.submissions())
	path := "/contracts/" + ct.ID + "/send/transfer"
	tpl := "/contracts/{contractId}/send/{method}"
	for _, tt := range []struct {
		name, path, body string
		status           int
		code             engine.Code
		field            string
	}{
		{"unknown method", "/contracts/" + ct.ID + "/send/mint", `{"arg":[]}`, 404, engine.CodeNotFound, "method"},
		{"bad signature", "/contracts/" + ct.ID + "/send/transfer(address", `{"arg":[]}`, 400, engine.CodeInvalidArgument, "method"},
		{"arg count", path, `{"arg":["` + to + `"]}`, 400, engine.CodeInvalidArgument, "arg"},
		{"arg type", path, `{"arg":["` + to + `","0x10"]}`, 400, engine.CodeInvalidArgument, "arg[1]"},
		{"bad address arg", path, `{"arg":["` + wrongChecksum(to) + `","1"]}`, 400, engine.CodeInvalidArgument, "arg[0]"},
		{"value on nonpayable", path, `{"arg":["` + to + `","1"],"value":"1"}`, 400, engine.CodeInvalidArgument, "value"},
		{"bad value", path, `{"arg":["` + to + `","1"],"value":"-1"}`, 400, engine.CodeInvalidArgument, "value"},
		{"asset without value", path, `{"arg":["` + to + `","1"],"waitForAsset":"ETH"}`, 400, engine.CodeInvalidArgument, "waitForValue"},
		{"value without asset", path, `{"arg":["` + to + `","1"],"waitForValue":"1"}`, 400, engine.CodeInvalidArgument, "waitForAsset"},
		{"bad asset", path, `{"arg":["` + to + `","1"],"waitForAsset":"BTC","waitForValue":"1"}`, 400, engine.CodeInvalidArgument, "waitForAsset"},
		{"foreign asset", path, `{"arg":["` + to + `","1"],"waitForAsset":"` + e.bobToken20.ID + `","waitForValue":"1"}`, 404, engine.CodeNotFound, "waitForAsset"},
		{"nft asset", path, `{"arg":["` + to + `","1"],"waitForAsset":"` + e.aliceNFT.ID + `","waitForValue":"1"}`, 400, engine.CodeInvalidArgument, "waitForAsset"},
		{"bad wait value", path, `{"arg":["` + to + `","1"],"waitForAsset":"ETH","waitForValue":"1.5"}`, 400, engine.CodeInvalidArgument, "waitForValue"},
		{"unknown dependency", path, `{"arg":["` + to + `","1"],"dependsOn":["00000000-0000-4000-8000-000000000001"]}`, 404, engine.CodeNotFound, "dependsOn"},
		{"foreign dependency", path, `{"arg":["` + to + `","1"],"dependsOn":["` + bobTx.ID + `"]}`, 404, engine.CodeNotFound, "dependsOn"},
		{"bad dependency", path, `{"arg":["` + to + `","1"],"dependsOn":["x"]}`, 400, engine.CodeInvalidArgument, "dependsOn"},
		{"foreign from", path, `{"arg":["` + to + `","1"],"from":"` + e.bobAcct.ID + `"}`, 404, engine.CodeNotFound, "from"},
		{"abi on registered", path, `{"arg":["` + to + `","1"],"type":"erc20"}`, 400, engine.CodeInvalidArgument, "type"},
		{"foreign contract", "/contracts/" + e.bobToken20.ID + "/send/transfer", `{"arg":["` + to + `","1"]}`, 404, engine.CodeNotFound, ""},
		{"direct unknown network", "/contracts/network/main/address/" + to + "/send/f", `{"abi":` + payable + `}`, 404, engine.CodeNotFound, "network"},
		{"direct bad address", "/contracts/network/dev/address/0x1/send/f", `{"abi":` + payable + `}`, 400, engine.CodeInvalidArgument, "address"},
		{"direct no abi", "/contracts/network/dev/address/" + to + "/send/f", `{}`, 400, engine.CodeInvalidArgument, "abi"},
		{"direct value nonpayable", "/contracts/network/dev/address/" + to + "/send/f", `{"abi":` + payable + `,"value":"3"}`, 400, engine.CodeInvalidArgument, "value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			template := tpl
			if strings.HasPrefix(tt.path, "/contracts/network/") {
				template = "/contracts/network/{network}/address/{address}/send/{method}"
			}
			rec := e.req("POST", template, tt.path, e.aliceToken, tt.body)
			wantError(t, rec, tt.status, tt.code, tt.field)
			if len(e.engine.submissions()) != n {
				t.Fatal("submitted")
			}
		})
	}
	// A payable method takes a value.
	rec = e.req("POST", "/contracts/network/{network}/address/{address}/send/{method}", "/contracts/network/dev/address/"+to+"/send/deposit", e.aliceToken, `{"abi":`+payable+`,"value":"3"}`)
	wantStatus(t, rec, 202)
	decodeData(t, rec, &tx)
	if tx.Value != "3" {
		t.Fatalf("payable: %s", rec.Body.String())
	}
}

func TestTransferOptions(t *testing.T) {
	e := newContractEnv(t)
	to := e.bobAcct.Address.Hex()
	rec := e.req("POST", "/tokens/{contractId}/transfers", "/tokens/"+e.aliceToken20.ID+"/transfers", e.aliceToken,
		`{"to":"`+to+`","value":"7","waitForAsset":"`+strings.ToLower(e.aliceToken20.Address.Hex())+`","waitForValue":"7"}`)
	wantStatus(t, rec, 202)
	var tx engine.TransactionView
	decodeData(t, rec, &tx)
	if tx.WaitForAsset != e.aliceToken20.Address.Hex() || tx.WaitForValue != "7" || tx.Method != "transfer" {
		t.Fatalf("transfer: %s", rec.Body.String())
	}
	rec = e.req("POST", "/tokens/{contractId}/transfers", "/tokens/"+e.aliceToken20.ID+"/transfers", e.aliceToken,
		`{"to":"`+to+`","value":"7","dependsOn":["00000000-0000-4000-8000-000000000001"]}`)
	wantError(t, rec, 404, engine.CodeNotFound, "dependsOn")
}

func TestCallContract(t *testing.T) {
	e := newContractEnv(t)
	ct := e.aliceToken20
	holder := e.aliceAcct.Address.Hex()
	rec := e.req("POST", "/contracts/{contractId}/call/{method}", "/contracts/"+ct.ID+"/call/balanceOf", e.aliceToken, `{"arg":"`+holder+`"}`)
	wantStatus(t, rec, 200)
	if strings.TrimSpace(rec.Body.String()) != `{"data":"12345"}` {
		t.Fatalf("balanceOf: %s", rec.Body.String())
	}
	rec = e.req("POST", "/contracts/{contractId}/call/{method}", "/contracts/"+ct.ID+"/call/symbol", e.aliceToken, "")
	if strings.TrimSpace(rec.Body.String()) != `{"data":"DEMO"}` {
		t.Fatalf("symbol: %s", rec.Body.String())
	}
	rec = e.req("POST", "/contracts/network/{network}/address/{address}/call/{method}", "/contracts/network/dev/address/"+ct.Address.Hex()+"/call/decimals", e.aliceToken, `{"type":"erc20"}`)
	if strings.TrimSpace(rec.Body.String()) != `{"data":"18"}` {
		t.Fatalf("decimals: %s", rec.Body.String())
	}
	// The fake reverts transfer: a revert is the caller's input problem.
	rec = e.req("POST", "/contracts/{contractId}/call/{method}", "/contracts/"+ct.ID+"/call/transfer", e.aliceToken, `{"arg":["`+holder+`","1"]}`)
	wantError(t, rec, 400, engine.CodeInvalidArgument, "arg")
	rec = e.req("POST", "/contracts/{contractId}/call/{method}", "/contracts/"+ct.ID+"/call/balanceOf", e.aliceToken, `{"arg":"0x1"}`)
	wantError(t, rec, 400, engine.CodeInvalidArgument, "arg[0]")
	e.chain.callErr = context.DeadlineExceeded
	rec = e.req("POST", "/contracts/{contractId}/call/{method}", "/contracts/"+ct.ID+"/call/symbol", e.aliceToken, "")
	wantError(t, rec, 503, engine.CodeUnavailable, "")
	e.chain.callErr = nil

	// Batch: one round trip for the valid calls of the network; bad calls fail alone.
	calls := `{"calls":[
		{"contractId":"` + ct.ID + `","method":"balanceOf","arg":["` + holder + `"]},
		{"contractId":"` + e.bobToken20.ID + `","method":"symbol"},
		{"network":"dev","address":"` + ct.Address.Hex() + `","type":"erc20","method":"name"},
		{"network":"dev","address":"` + ct.Address.Hex() + `","abi":` + testERC20ABI + `,"method":"nope"},
		{"contractId":"` + ct.ID + `","method":"transfer","arg":["` + holder + `","1"]},
		{"contractId":"` + ct.ID + `","method":"symbol","bogus":1},
		{"network":"moon","address":"` + ct.Address.Hex() + `","type":"erc20","method":"name"}
	]}`
	rec = e.req("POST", "/contracts/call", "/contracts/call", e.aliceToken, calls)
	wantStatus(t, rec, 200)
	var items []map[string]json.RawMessage
	decodeData(t, rec, &items)
	if len(items) != 7 || string(items[0]["result"]) != `"12345"` || string(items[2]["result"]) != `"Demo"` {
		t.Fatalf("batch: %s", rec.Body.String())
	}
	wantItemErr := func(i int, code engine.Code, field string) {
		t.Helper()
		var e errorDetail
		if err := json.Unmarshal(items[i]["error"], &e); err != nil || e.Code != code || e.Field != field {
			t.Errorf("item %d: %s, want %s on %q", i, items[i]["error"], code, field)
		}
	}
	wantItemErr(1, engine.CodeNotFound, "contractId")
	wantItemErr(3, engine.CodeNotFound, "method")
	wantItemErr(4, engine.CodeInvalidArgument, "arg")
	wantItemErr(5, engine.CodeInvalidArgument, "bogus")
	wantItemErr(6, engine.CodeInvalidArgument, "network")
	if e.rich.batches != 1 {
		t.Fatalf("batches = %d, want 1", e.rich.batches)
	}
	rec = e.req("POST", "/contracts/call", "/contracts/call", e.aliceToken, `{"calls":[`+strings.TrimSuffix(strings.Repeat(`{"contractId":"`+ct.ID+`","method":"symbol"},`, 101), ",")+`]}`)
	wantError(t, rec, 400, engine.CodeInvalidArgument, "calls")
	rec = e.req("POST", "/contracts/call", "/contracts/call", e.aliceToken, `{}`)
	wantError(t, rec, 400, engine.CodeInvalidArgument, "calls")
}

func TestEventsBlocksGas(t *testing.T) {
	e := newContractEnv(t)
	ct := e.aliceToken20
	ct.Block = 5
	e.store.exec(t, `UPDATE contracts SET block = 5 WHERE id = ?`, e.aliceToken20.ID)
	transfer := crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))
	topic := func(a common.Address) common.Hash { return common.BytesToHash(a.Bytes()) }
	for _, b := range []uint64{3, 6, 9} {
		e.rich.logs = append(e.rich.logs, types.Log{
			Address: ct.Address, BlockNumber: b, Index: 1,
			Topics: []common.Hash{transfer, topic(e.aliceAcct.Address), topic(e.bobAcct.Address)},
			Data:   common.LeftPadBytes(big.NewInt(int64(b)).Bytes(), 32),
		})
	}
	tpl := "/contracts/{contractId}/events"
	rec := e.req("GET", tpl, "/contracts/"+ct.ID+"/events", e.aliceToken, "")
	var evs []engine.EventView
	decodeData(t, rec, &evs)
	// Without a range: all of them, before the registration block too,
	// oldest first.
	if len(evs) != 3 || evs[1].BlockNumber != 6 || evs[1].Event != "Transfer" || evs[1].ReturnValues["value"] != "6" ||
		evs[1].ReturnValues["from"] != e.aliceAcct.Address.Hex() || evs[0].BlockNumber != 3 || evs[2].BlockNumber != 9 {
		t.Fatalf("all events: %s", rec.Body.String())
	}
	rec = e.req("GET", tpl, "/contracts/"+ct.ID+"/events?fromBlock=0&toBlock=6&event=Transfer", e.aliceToken, "")
	decodeData(t, rec, &evs)
	if len(evs) != 2 || evs[1].BlockNumber != 6 {
		t.Fatalf("events 0..6: %s", rec.Body.String())
	}
	rec = e.req("GET", tpl, "/contracts/"+ct.ID+"/events?fromBlock=0&toBlock=latest&event=Transfer(address,address,uint256)", e.aliceToken, "")
	decodeData(t, rec, &evs)
	if len(evs) != 3 {
		t.Fatalf("events by signature: %s", rec.Body.String())
	}
	e.rich.head = 20_000
	for _, tt := range []struct{ query, field string }{
		{"fromBlock=x", "fromBlock"}, {"toBlock=-1", "toBlock"}, {"toBlock=0x10", "toBlock"},
		{"event=Approval", "event"}, {"fromBlock=9&toBlock=8", "fromBlock"},
	} {
		rec := e.req("GET", tpl, "/contracts/"+ct.ID+"/events?"+tt.query, e.aliceToken, "")
		wantError(t, rec, 400, engine.CodeInvalidArgument, tt.field)
	}
	e.rich.head = 20
	wantError(t, e.req("GET", tpl, "/contracts/"+e.bobToken20.ID+"/events", e.aliceToken, ""), 404, engine.CodeNotFound, "")

	rec = e.req("GET", "/contracts/network/{network}/block/latest", "/contracts/network/dev/block/latest", e.aliceToken, "")
	var blk blockView
	decodeData(t, rec, &blk)
	if blk.Number != 20 || blk.TransactionCount != 3 || blk.BaseFeePerGas != "1000" || blk.Timestamp != engine.FormatTime(time.Unix(1_800_000_020, 0)) ||
		blk.Miner != common.HexToAddress("0xcc").Hex() {
		t.Fatalf("latest block: %s", rec.Body.String())
	}
	rec = e.req("GET", "/contracts/network/{network}/block/{number}", "/contracts/network/dev/block/7", e.aliceToken, "")
	decodeData(t, rec, &blk)
	if blk.Number != 7 {
		t.Fatalf("block 7: %s", rec.Body.String())
	}
	wantError(t, e.req("GET", "/contracts/network/{network}/block/{number}", "/contracts/network/dev/block/21", e.aliceToken, ""), 404, engine.CodeNotFound, "number")
	wantError(t, e.req("GET", "/contracts/network/{network}/block/{number}", "/contracts/network/dev/block/abc", e.aliceToken, ""), 400, engine.CodeInvalidArgument, "number")
	wantError(t, e.req("GET", "/contracts/network/{network}/block/latest", "/contracts/network/moon/block/latest", e.aliceToken, ""), 404, engine.CodeNotFound, "network")

	rec = e.req("GET", "/contracts/network/{network}/gas-price", "/contracts/network/dev/gas-price", e.aliceToken, "")
	var gp gasPriceView
	decodeData(t, rec, &gp)
	if gp.GasPrice != "2000" || gp.BaseFeePerGas != "1000" || gp.MaxPriorityFeePerGas != "7" || gp.MaxFeePerGas != "2007" {
		t.Fatalf("gas price: %s", rec.Body.String())
	}
}

func TestListAndCancelTransactions(t *testing.T) {
	e := newContractEnv(t)
	mk := func(owner *engine.User, acct *engine.Account, sec int, status engine.TxStatus, method string) *engine.Transaction {
		tx := &engine.Transaction{
			ID:    fmt.Sprintf("00000000-0000-4000-8000-%012d", e.store.count(t, `SELECT COUNT(*) FROM transactions`)+1),
			Owner: owner.ID, AccountID: acct.ID, Network: "dev", From: acct.Address, ContractID: e.aliceToken20.ID,
			Method: method, Status: status, Created: testNow.Add(time.Duration(sec) * time.Second),
		}
		e.store.putTransaction(t, tx)
		return tx
	}
	var mine []*engine.Transaction
	for i := range 7 {
		st := engine.StatusNew
		if i%3 == 0 {
			st = engine.StatusSubmitted
		}
		method := "transfer"
		if i%2 == 1 {
			method = "approve"
		}
		mine = append(mine, mk(e.alice, e.aliceAcct, i/2, st, method)) // pairs share a timestamp
	}
	mk(e.bob, e.bobAcct, 1, engine.StatusNew, "transfer")

	list := func(query string) ([]engine.TransactionView, string) {
		t.Helper()
		rec := e.req("GET", "/transactions", "/transactions"+query, e.aliceToken, "")
		wantStatus(t, rec, 200)
		var body struct {
			Data []engine.TransactionView `json:"data"`
			Next string                   `json:"next"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		return body.Data, body.Next
	}
	all, next := list("")
	if len(all) != 7 || next != "" || all[0].ID != mine[6].ID || all[6].ID != mine[0].ID {
		t.Fatalf("default listing: %d %q", len(all), next)
	}
	var paged []string
	cursor := ""
	for {
		page, nx := list("?sort=created&limit=2" + cursor)
		for _, tx := range page {
			paged = append(paged, tx.ID)
		}
		if nx == "" {
			break
		}
		cursor = "&cursor=" + nx
	}
	if len(paged) != 7 || paged[0] != mine[0].ID || paged[1] != mine[1].ID || paged[6] != mine[6].ID {
		t.Fatalf("ascending pages: %v", paged)
	}
	if got, _ := list("?status=submitted"); len(got) != 3 {
		t.Fatalf("status filter: %d", len(got))
	}
	if got, _ := list("?method=approve&status=new,submitted"); len(got) != 3 {
		t.Fatalf("method filter: %d", len(got))
	}
	if got, _ := list("?since=" + engine.FormatTime(testNow.Add(2*time.Second)) + "&until=" + engine.FormatTime(testNow.Add(3*time.Second))); len(got) != 2 {
		t.Fatalf("since/until: %d", len(got))
	}
	if got, _ := list("?from=" + e.bobAcct.Address.Hex()); len(got) != 0 {
		t.Fatalf("from filter leaks: %d", len(got))
	}
	_, nx := list("?limit=1")
	for _, tt := range []struct{ query, field string }{
		{"?status=done", "status"}, {"?contractId=x", "contractId"}, {"?from=0x1", "from"}, {"?since=yesterday", "since"},
		{"?until=2026-13-01", "until"}, {"?sort=name", "sort"}, {"?limit=0", "limit"}, {"?limit=1001", "limit"},
		{"?limit=x", "limit"}, {"?cursor=abc", "cursor"}, {"?sort=created&cursor=" + nx, "cursor"},
	} {
		wantError(t, e.req("GET", "/transactions", "/transactions"+tt.query, e.aliceToken, ""), 400, engine.CodeInvalidArgument, tt.field)
	}

	tpl := "/transactions/{id}"
	rec := e.req("DELETE", tpl, "/transactions/"+mine[1].ID, e.aliceToken, "")
	wantStatus(t, rec, 200)
	var tx engine.TransactionView
	decodeData(t, rec, &tx)
	if tx.Status != engine.StatusFailed || tx.Error == nil || tx.Error.Code != engine.TxCancelled || tx.Ended == "" {
		t.Fatalf("cancel: %s", rec.Body.String())
	}
	if got := e.engine.settled; len(got) != 1 || got[0] != mine[1].ID {
		t.Fatalf("engine told of settled %v, want [%s] (its dependents must be resolved)", got, mine[1].ID)
	}
	wantError(t, e.req("DELETE", tpl, "/transactions/"+mine[1].ID, e.aliceToken, ""), 409, engine.CodeConflict, "")
	wantError(t, e.req("DELETE", tpl, "/transactions/"+mine[0].ID, e.aliceToken, ""), 409, engine.CodeConflict, "")
	wantError(t, e.req("DELETE", tpl, "/transactions/"+mine[2].ID, e.bobToken, ""), 404, engine.CodeNotFound, "")
	wantError(t, e.req("DELETE", tpl, "/transactions/nope", e.aliceToken, ""), 404, engine.CodeNotFound, "")

	// Abandon: operators only (alice is one, bob is not), any user's
	// transaction; new ends at once, submitted waits for its filler.
	atpl := "/transactions/{id}/abandon"
	bobs := mk(e.bob, e.bobAcct, 9, engine.StatusNew, "transfer")
	wantError(t, e.req("POST", atpl, "/transactions/"+bobs.ID+"/abandon", e.bobToken, ""), 403, engine.CodeForbidden, "")
	if got, err := e.store.TransactionByID(context.Background(), bobs.ID); err != nil || got.Status != engine.StatusNew || got.Error != nil {
		t.Fatalf("a refused abandon changed the transaction: %s %+v", got.Status, got.Error)
	}
	rec = e.req("POST", atpl, "/transactions/"+bobs.ID+"/abandon", e.aliceToken, "")
	wantStatus(t, rec, 200)
	decodeData(t, rec, &tx)
	if tx.Status != engine.StatusFailed || tx.Error == nil || tx.Error.Code != engine.TxAbandoned {
		t.Fatalf("abandon new: %s", rec.Body.String())
	}
	rec = e.req("POST", atpl, "/transactions/"+mine[3].ID+"/abandon", e.aliceToken, "")
	wantStatus(t, rec, 202)
	decodeData(t, rec, &tx)
	if tx.Status != engine.StatusSubmitted || tx.Error == nil || tx.Error.Code != engine.TxAbandoned {
		t.Fatalf("abandon submitted: %s", rec.Body.String())
	}
	if got := e.engine.checked; len(got) != 1 || got[0] != e.aliceAcct.ID+"@dev" {
		t.Fatalf("account actors asked to check: %v", got)
	}
	wantStatus(t, e.req("POST", atpl, "/transactions/"+mine[3].ID+"/abandon", e.aliceToken, ""), 202) // asked again: same answer
	wantError(t, e.req("POST", atpl, "/transactions/"+mine[1].ID+"/abandon", e.aliceToken, ""), 409, engine.CodeConflict, "")
	wantError(t, e.req("POST", atpl, "/transactions/00000000-0000-4000-8000-999999999999/abandon", e.aliceToken, ""), 404, engine.CodeNotFound, "")
}

// TestSendParametersAreStrings checks the specification's `parameters`, an
// array of strings, on the creation response and on a later read: booleans
// as "true"/"false", arrays and tuples as their JSON text.
func TestSendParametersAreStrings(t *testing.T) {
	e := newContractEnv(t)
	to := e.bobAcct.Address.Hex()
	abi := `[{"type":"function","name":"g","stateMutability":"nonpayable","inputs":[` +
		`{"name":"ok","type":"bool"},{"name":"xs","type":"uint16[]"},` +
		`{"name":"p","type":"tuple","components":[{"name":"who","type":"address"},{"name":"n","type":"uint8"}]},` +
		`{"name":"s","type":"string"}],"outputs":[]}]`
	body := `{"abi":` + abi + `,"arg":[false,["3","4"],["` + strings.ToLower(to) + `","9"],"<&>"]}`
	rec := e.req("POST", "/contracts/network/{network}/address/{address}/send/{method}",
		"/contracts/network/dev/address/"+to+"/send/g", e.aliceToken, body)
	wantStatus(t, rec, 202)
	want := []string{"false", `["3","4"]`, `{"n":"9","who":"` + to + `"}`, "<&>"}
	var created engine.TransactionView
	decodeData(t, rec, &created)
	if !slices.Equal(created.Parameters, want) {
		t.Fatalf("created parameters %q, want %q (%s)", created.Parameters, want, rec.Body.String())
	}
	rec = e.req("GET", "/transactions/{id}", "/transactions/"+created.ID, e.aliceToken, "")
	wantStatus(t, rec, 200)
	var read engine.TransactionView
	decodeData(t, rec, &read)
	if !slices.Equal(read.Parameters, want) {
		t.Fatalf("read parameters %q, want %q (%s)", read.Parameters, want, rec.Body.String())
	}
}
