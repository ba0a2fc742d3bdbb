package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"

	"github.com/txengine/txengine/engine"
)

// wantTx compares every field of got and want.
func wantTx(t *testing.T, got, want *engine.Transaction) {
	t.Helper()
	type field struct {
		name      string
		got, want any
	}
	fields := []field{
		{"ID", got.ID, want.ID},
		{"Owner", got.Owner, want.Owner},
		{"AccountID", got.AccountID, want.AccountID},
		{"Network", got.Network, want.Network},
		{"From", got.From, want.From},
		{"ContractID", got.ContractID, want.ContractID},
		{"ContractAddress", got.ContractAddress, want.ContractAddress},
		{"ContractName", got.ContractName, want.ContractName},
		{"ContractBWType", got.ContractBWType, want.ContractBWType},
		{"Method", got.Method, want.Method},
		{"Parameters", got.Parameters, want.Parameters},
		{"Status", got.Status, want.Status},
		{"Nonce", got.Nonce, want.Nonce},
		{"GasLimit", got.GasLimit, want.GasLimit},
		{"Hash", got.Hash, want.Hash},
		{"BlockNumber", got.BlockNumber, want.BlockNumber},
		{"BlockHash", got.BlockHash, want.BlockHash},
		{"GasUsed", got.GasUsed, want.GasUsed},
		{"Events", got.Events, want.Events},
		{"Error", got.Error, want.Error},
		{"Callbacks", got.Callbacks, want.Callbacks},
		{"DependsOn", got.DependsOn, want.DependsOn},
		{"WaitForAsset", got.WaitForAsset, want.WaitForAsset},
	}
	for _, f := range fields {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("tx %s: %s = %s, want %s", want.ID, f.name, show(f.got), show(f.want))
		}
	}
	if !bytes.Equal(got.Data, want.Data) || (got.Data == nil) != (want.Data == nil) {
		t.Errorf("tx %s: Data = %x (nil %v), want %x (nil %v)", want.ID, got.Data, got.Data == nil, want.Data, want.Data == nil)
	}
	if !bytes.Equal(got.RawTx, want.RawTx) || (got.RawTx == nil) != (want.RawTx == nil) {
		t.Errorf("tx %s: RawTx = %x (nil %v), want %x (nil %v)", want.ID, got.RawTx, got.RawTx == nil, want.RawTx, want.RawTx == nil)
	}
	wantBig(t, want.ID+": Value", got.Value, want.Value)
	wantBig(t, want.ID+": WaitForValue", got.WaitForValue, want.WaitForValue)
	wantTime(t, want.ID+": Created", got.Created, want.Created)
	wantTimePtr(t, want.ID+": Submitted", got.Submitted, want.Submitted)
	wantTimePtr(t, want.ID+": Ended", got.Ended, want.Ended)
	wantTimePtr(t, want.ID+": WaitUntil", got.WaitUntil, want.WaitUntil)
	wantTimePtr(t, want.ID+": Replaced", got.Replaced, want.Replaced)
	if string(got.ABI) != string(want.ABI) {
		t.Errorf("tx %s: ABI = %s, want %s", want.ID, got.ABI, want.ABI)
	}
}

// show prints pointers by their target.
func show(v any) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return "nil"
		}
		return fmt.Sprintf("&%+v", rv.Elem().Interface())
	}
	return fmt.Sprintf("%#v", v)
}

func wantBig(t *testing.T, what string, got, want *big.Int) {
	t.Helper()
	if (got == nil) != (want == nil) || (got != nil && got.Cmp(want) != 0) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// fixture is a user with one account to send transactions from.
type fixture struct {
	user    *engine.User
	account *engine.Account
}

func newFixture(t *testing.T, s engine.Store) fixture {
	t.Helper()
	u := newUser(t, s, 0)
	return fixture{user: u, account: newAccount(t, s, u.ID, 0, true)}
}

// tx returns a minimal new transaction of f on network created at at(sec).
func (f fixture) tx(network string, sec int) *engine.Transaction {
	return &engine.Transaction{
		ID:        newID(),
		Owner:     f.user.ID,
		AccountID: f.account.ID,
		Network:   network,
		From:      f.account.Address,
		Method:    "transfer",
		Status:    engine.StatusNew,
		Created:   at(sec),
	}
}

func insert(t *testing.T, s engine.Store, txs ...*engine.Transaction) {
	t.Helper()
	must(t, s.InsertTransactions(ctxOf(t), txs))
}

func get(t *testing.T, s engine.Store, id string) *engine.Transaction {
	t.Helper()
	got, err := s.TransactionByID(ctxOf(t), id)
	must(t, err)
	return got
}

func txIDs(txs []*engine.Transaction) []string {
	ids := make([]string, len(txs))
	for i, tx := range txs {
		ids[i] = tx.ID
	}
	return ids
}

// submit marks tx submitted with nonce and a fresh hash and returns the
// values it recorded.
func submit(t *testing.T, s engine.Store, tx *engine.Transaction, nonce uint64) *engine.Transaction {
	t.Helper()
	tx.Nonce = ptr(nonce)
	tx.GasLimit = 21000 + nonce
	tx.Hash = ptr(randomHash(t))
	tx.RawTx = []byte(fmt.Sprintf("signed-%d", nonce))
	tx.Submitted = ptr(at(100 + int(nonce)))
	must(t, s.MarkSubmittedMany(ctxOf(t), engine.Fence{}, []*engine.Transaction{tx}))
	tx.Status = engine.StatusSubmitted
	return tx
}

func testTransactionRoundTripFull(t *testing.T, s engine.Store) {
	// With dependencies, and without: a store may write a batch without
	// dependencies (or idempotency records) another way.
	t.Run("dependencies", func(t *testing.T) { roundTripFull(t, s, true) })
	t.Run("alone", func(t *testing.T) { roundTripFull(t, s, false) })
}

func roundTripFull(t *testing.T, s engine.Store, withDeps bool) {
	f := newFixture(t, s)
	contractAddr := common.HexToAddress("0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359")
	max256 := new(big.Int).Set(math.MaxBig256)
	tx := f.tx("dev", 1)
	tx.ContractID = newID()
	tx.ContractAddress = contractAddr
	tx.ContractName = "Token \"quoted\" \\ back\tslash\nnew line \x01 é ✓ 🚀"
	tx.ContractBWType = engine.TypeERC20
	tx.Parameters = []any{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "115792089237316195423570985008687907853269984665640564039457584007913129639935",
		true, float64(42), nil, []any{"a", float64(1.5)}, map[string]any{"k": "v \" \\ \u2028"}}
	tx.Data = []byte{0xa9, 0x05, 0x9c, 0xbb, 0x00, 0x01}
	tx.Value = max256
	tx.Submitted = ptr(at(2))
	tx.Ended = ptr(at(3))
	tx.Nonce = ptr(uint64(1) << 40)
	tx.GasLimit = 146_000
	tx.Hash = ptr(randomHash(t))
	tx.RawTx = []byte{0x02, 0xf8, 0x70, 0x00}
	tx.BlockNumber = ptr(uint64(123456789))
	tx.BlockHash = ptr(randomHash(t))
	tx.GasUsed = ptr(uint64(51_234))
	tx.Events = []engine.Event{{
		Event:           "Transfer",
		Signature:       "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
		Address:         contractAddr,
		BlockNumber:     123456789,
		BlockHash:       *tx.BlockHash,
		TransactionHash: *tx.Hash,
		LogIndex:        7,
		ReturnValues: map[string]any{
			"from":  "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
			"value": "115792089237316195423570985008687907853269984665640564039457584007913129639935",
			"flag":  false,
			"n":     float64(3),
			"list":  []any{"x", float64(2)},
			"tuple": map[string]any{"a": "b"},
		},
	}, {Event: "Approval", Address: contractAddr, LogIndex: 8, ReturnValues: map[string]any{}}}
	tx.Error = &engine.TxError{Code: engine.TxReverted, Message: "execution reverted: insufficient balance"}
	tx.Callbacks = []string{"https://example.com/cb?a=1", "http://127.0.0.1:9/x"}
	if withDeps {
		tx.DependsOn = []string{newID(), newID()}
	}
	tx.WaitForAsset = "ETH"
	tx.WaitForValue = new(big.Int).Set(max256)
	tx.ABI = json.RawMessage(`[{"type":"function","name":"transfer","inputs":[]}]`)
	tx.WaitUntil = ptr(at(4))
	tx.Replaced = ptr(at(5))
	insert(t, s, tx)

	wantTx(t, get(t, s, tx.ID), tx)
	if tx.Value.Cmp(math.MaxBig256) != 0 {
		t.Fatalf("the store modified the caller's Value")
	}
}

func testTransactionRoundTripMinimal(t *testing.T, s engine.Store) {
	f := newFixture(t, s)
	tx := f.tx("dev", 1)
	tx.Method = ""
	insert(t, s, tx)
	got := get(t, s, tx.ID)
	wantTx(t, got, tx)
	if got.Value != nil || got.Nonce != nil || got.Hash != nil || got.Error != nil || got.Events != nil ||
		got.Parameters != nil || got.Submitted != nil || got.Ended != nil || got.WaitForValue != nil {
		t.Fatalf("unset optional fields came back set: %+v", got)
	}

	// Zero is a value, not "unset".
	z := f.tx("dev", 2)
	z.Value = new(big.Int)
	z.Nonce = ptr(uint64(0))
	z.GasUsed = ptr(uint64(0))
	z.BlockNumber = ptr(uint64(0))
	z.WaitForValue = big.NewInt(0)
	insert(t, s, z)
	wantTx(t, get(t, s, z.ID), z)
}

func testTransactionNotFound(t *testing.T, s engine.Store) {
	_, err := s.TransactionByID(ctxOf(t), newID())
	wantCode(t, err, engine.CodeNotFound, "TransactionByID unknown")
}

func testInsertTransactionsAllOrNone(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	first := f.tx("dev", 1)
	insert(t, s, first)

	a, b := f.tx("dev", 2), f.tx("dev", 3)
	dup := f.tx("dev", 4)
	dup.ID = first.ID
	err := s.InsertTransactions(ctx, []*engine.Transaction{a, b, dup})
	wantCode(t, err, engine.CodeConflict, "InsertTransactions with a taken id")
	for _, tx := range []*engine.Transaction{a, b} {
		_, err := s.TransactionByID(ctx, tx.ID)
		wantCode(t, err, engine.CodeNotFound, "row of a failed batch")
	}
	// Duplicates inside one batch fail it too.
	c := f.tx("dev", 5)
	err = s.InsertTransactions(ctx, []*engine.Transaction{c, c})
	wantCode(t, err, engine.CodeConflict, "InsertTransactions with a duplicate in the batch")
	_, err = s.TransactionByID(ctx, c.ID)
	wantCode(t, err, engine.CodeNotFound, "row of a failed batch")

	must(t, s.InsertTransactions(ctx, nil))
	ready, err := s.ReadyTransactions(ctx, f.account.ID, "dev", 100)
	must(t, err)
	if got := txIDs(ready); !slices.Equal(got, []string{first.ID}) {
		t.Fatalf("ready = %v, want only %s", got, first.ID)
	}
}

func testReadyTransactionsFIFO(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	g := fixture{user: f.user, account: newAccount(t, s, f.user.ID, 1, false)}

	// Acceptance order is insertion order, whatever the created times say.
	var dev []*engine.Transaction
	for i := range 4 {
		dev = append(dev, f.tx("dev", 50-i))
	}
	insert(t, s, dev[0], dev[1])
	insert(t, s, g.tx("dev", 0), f.tx("sepolia", 0)) // other account, other network
	insert(t, s, dev[2])
	waiting := f.tx("dev", 0)
	waiting.Status = engine.StatusWaiting
	insert(t, s, dev[3], waiting)
	more := []*engine.Transaction{f.tx("dev", 0), f.tx("dev", 0)}
	insert(t, s, more...)

	ready, err := s.ReadyTransactions(ctx, f.account.ID, "dev", 100)
	must(t, err)
	want := append(append([]*engine.Transaction{}, dev...), more...)
	if got, w := txIDs(ready), txIDs(want); !slices.Equal(got, w) {
		t.Fatalf("ready = %v, want %v", got, w)
	}
	for i := range want {
		wantTx(t, ready[i], want[i])
	}

	// Submitted and failed ones leave the queue; the rest keep their order.
	submit(t, s, dev[0], 0)
	must(t, s.MarkFailed(ctx, dev[2].ID, &engine.TxError{Code: engine.TxCancelled, Message: "cancelled"}, at(60)))
	ready, err = s.ReadyTransactions(ctx, f.account.ID, "dev", 100)
	must(t, err)
	if got, w := txIDs(ready), []string{dev[1].ID, dev[3].ID, more[0].ID, more[1].ID}; !slices.Equal(got, w) {
		t.Fatalf("ready after submit and fail = %v, want %v", got, w)
	}

	// Larger batches keep their order too (a store may write batches of
	// different sizes differently).
	for i, size := range []int{60, 300} {
		h := fixture{user: f.user, account: newAccount(t, s, f.user.ID, 2+i, false)}
		var large []*engine.Transaction
		for range size {
			large = append(large, h.tx("dev", 0))
		}
		insert(t, s, large...)
		got, err := s.ReadyTransactions(ctx, h.account.ID, "dev", 1000)
		must(t, err)
		if !slices.Equal(txIDs(got), txIDs(large)) {
			t.Fatalf("a batch of %d came back out of order", len(large))
		}
	}

	ready, err = s.ReadyTransactions(ctx, f.account.ID, "dev", 2)
	must(t, err)
	if got, w := txIDs(ready), []string{dev[1].ID, dev[3].ID}; !slices.Equal(got, w) {
		t.Fatalf("ready limit 2 = %v, want %v", got, w)
	}
	ready, err = s.ReadyTransactions(ctx, f.account.ID, "mainnet", 10)
	must(t, err)
	if len(ready) != 0 {
		t.Fatalf("ready on an unused network = %v", txIDs(ready))
	}
}

func testMarkSubmitted(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	tx := f.tx("dev", 1)
	tx.Value = big.NewInt(5)
	insert(t, s, tx)

	submit(t, s, tx, 7)
	got := get(t, s, tx.ID)
	wantTx(t, got, tx)
	if got.Status != engine.StatusSubmitted {
		t.Fatalf("status = %s, want submitted", got.Status)
	}

	again := *tx
	again.Nonce = ptr(uint64(8))
	again.Hash = ptr(randomHash(t))
	wantCode(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{&again}), engine.CodeConflict, "MarkSubmittedMany of a submitted transaction")
	wantTx(t, get(t, s, tx.ID), tx) // unchanged

	failed := f.tx("dev", 2)
	insert(t, s, failed)
	must(t, s.MarkFailed(ctx, failed.ID, &engine.TxError{Code: engine.TxCancelled, Message: "x"}, at(3)))
	failed.Nonce, failed.Hash, failed.Submitted = ptr(uint64(9)), ptr(randomHash(t)), ptr(at(4))
	wantCode(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{failed}), engine.CodeConflict, "MarkSubmittedMany of a failed transaction")

	waiting := f.tx("dev", 3)
	waiting.Status = engine.StatusWaiting
	insert(t, s, waiting)
	waiting.Nonce, waiting.Hash, waiting.Submitted = ptr(uint64(10)), ptr(randomHash(t)), ptr(at(4))
	wantCode(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{waiting}), engine.CodeConflict, "MarkSubmittedMany of a waiting transaction")

	unknown := f.tx("dev", 4)
	unknown.Nonce, unknown.Hash, unknown.Submitted = ptr(uint64(11)), ptr(randomHash(t)), ptr(at(4))
	wantCode(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{unknown}), engine.CodeNotFound, "MarkSubmittedMany of an unknown transaction")
}

func testInFlightByNonce(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	var txs []*engine.Transaction
	for i := range 4 {
		txs = append(txs, f.tx("dev", i))
	}
	other := f.tx("sepolia", 0)
	insert(t, s, append(txs, other)...)
	// Nonces against acceptance order.
	submit(t, s, txs[0], 12)
	submit(t, s, txs[1], 10)
	submit(t, s, txs[2], 11)
	submit(t, s, other, 10)

	inflight, err := s.InFlight(ctx, f.account.ID, "dev")
	must(t, err)
	if got, w := txIDs(inflight), []string{txs[1].ID, txs[2].ID, txs[0].ID}; !slices.Equal(got, w) {
		t.Fatalf("in flight = %v, want %v", got, w)
	}
	wantTx(t, inflight[0], txs[1])

	must(t, s.MarkMined(ctx, []engine.Mined{{ID: txs[1].ID, Status: engine.StatusCompleted, BlockNumber: 1, Ended: at(200)}}))
	inflight, err = s.InFlight(ctx, f.account.ID, "dev")
	must(t, err)
	if got, w := txIDs(inflight), []string{txs[2].ID, txs[0].ID}; !slices.Equal(got, w) {
		t.Fatalf("in flight after mining = %v, want %v", got, w)
	}
}

func testMaxNonce(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	g := fixture{user: f.user, account: newAccount(t, s, f.user.ID, 1, false)}

	wantMax := func(acct, network string, want uint64, wantOK bool) {
		t.Helper()
		got, ok, err := s.MaxNonce(ctx, acct, network)
		must(t, err)
		if got != want || ok != wantOK {
			t.Fatalf("MaxNonce(%s) = %d, %v; want %d, %v", network, got, ok, want, wantOK)
		}
	}
	wantMax(f.account.ID, "dev", 0, false)
	a, b, c := f.tx("dev", 1), f.tx("dev", 2), f.tx("dev", 3)
	insert(t, s, a, b, c)
	wantMax(f.account.ID, "dev", 0, false) // new ones have no nonce

	submit(t, s, a, 0)
	wantMax(f.account.ID, "dev", 0, true)
	submit(t, s, b, 5)
	// Terminal transactions keep their nonce.
	must(t, s.MarkMined(ctx, []engine.Mined{{ID: b.ID, Status: engine.StatusFailed, BlockNumber: 3,
		Error: &engine.TxError{Code: engine.TxReverted, Message: "reverted"}, Ended: at(9)}}))
	wantMax(f.account.ID, "dev", 5, true)

	// Other networks and accounts do not count.
	o, p := f.tx("sepolia", 1), g.tx("dev", 1)
	insert(t, s, o, p)
	submit(t, s, o, 99)
	submit(t, s, p, 77)
	wantMax(f.account.ID, "dev", 5, true)
	wantMax(f.account.ID, "sepolia", 99, true)
	wantMax(g.account.ID, "dev", 77, true)

	// Large nonces survive.
	submit(t, s, c, 1<<40)
	wantMax(f.account.ID, "dev", 1<<40, true)
}

func testSubmittedByHash(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	a, b, c, d := f.tx("dev", 1), f.tx("dev", 2), f.tx("sepolia", 3), f.tx("dev", 4)
	insert(t, s, a, b, c, d)
	submit(t, s, a, 0)
	submit(t, s, b, 1)
	submit(t, s, c, 0)
	submit(t, s, d, 2)
	must(t, s.MarkMined(ctx, []engine.Mined{{ID: d.ID, Status: engine.StatusCompleted, BlockNumber: 1, Ended: at(9)}}))

	got, err := s.SubmittedByHash(ctx, "dev", []common.Hash{*b.Hash, *c.Hash, *d.Hash, randomHash(t), *a.Hash})
	must(t, err)
	ids := txIDs(got)
	slices.Sort(ids)
	want := []string{a.ID, b.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("SubmittedByHash(dev) = %v, want %v (c is on sepolia, d is completed)", ids, want)
	}
	for _, tx := range got {
		if tx.ID == a.ID {
			wantTx(t, tx, a)
		}
	}

	got, err = s.SubmittedByHash(ctx, "sepolia", []common.Hash{*a.Hash, *c.Hash})
	must(t, err)
	if ids := txIDs(got); !slices.Equal(ids, []string{c.ID}) {
		t.Fatalf("SubmittedByHash(sepolia) = %v, want %v", ids, []string{c.ID})
	}
	got, err = s.SubmittedByHash(ctx, "dev", nil)
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("SubmittedByHash(no hashes) = %v", txIDs(got))
	}

	// Many hashes at once (more than one statement's worth of parameters in
	// some databases).
	many := make([]common.Hash, 0, 2001)
	for range 2000 {
		many = append(many, randomHash(t))
	}
	many = append(many, *b.Hash)
	got, err = s.SubmittedByHash(ctx, "dev", many)
	must(t, err)
	if ids := txIDs(got); !slices.Equal(ids, []string{b.ID}) {
		t.Fatalf("SubmittedByHash(2001 hashes) = %v, want %v", ids, []string{b.ID})
	}
}

func testMarkMined(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	ok, bad := f.tx("dev", 1), f.tx("dev", 2)
	insert(t, s, ok, bad)
	submit(t, s, ok, 0)
	submit(t, s, bad, 1)

	blockHash := randomHash(t)
	events := []engine.Event{{
		Event: "Transfer", Signature: "Transfer(address,address,uint256)", Address: randomAddress(t),
		BlockNumber: 42, BlockHash: blockHash, TransactionHash: *ok.Hash, LogIndex: 3,
		ReturnValues: map[string]any{"to": "0x00000000000000000000000000000000000000aa", "value": "1000", "ok": true, "n": float64(1)},
	}}
	txErr := &engine.TxError{Code: engine.TxReverted, Message: "execution reverted: nope"}
	must(t, s.MarkMined(ctx, []engine.Mined{
		{ID: ok.ID, Status: engine.StatusCompleted, BlockNumber: 42, BlockHash: blockHash, GasUsed: 51000, Events: events, Ended: at(300)},
		{ID: bad.ID, Status: engine.StatusFailed, BlockNumber: 42, BlockHash: blockHash, GasUsed: 30000, Error: txErr, Ended: at(301)},
	}))

	ok.Status, ok.BlockNumber, ok.BlockHash, ok.GasUsed, ok.Events, ok.Ended =
		engine.StatusCompleted, ptr(uint64(42)), ptr(blockHash), ptr(uint64(51000)), events, ptr(at(300))
	wantTx(t, get(t, s, ok.ID), ok)
	bad.Status, bad.BlockNumber, bad.BlockHash, bad.GasUsed, bad.Error, bad.Ended =
		engine.StatusFailed, ptr(uint64(42)), ptr(blockHash), ptr(uint64(30000)), txErr, ptr(at(301))
	wantTx(t, get(t, s, bad.ID), bad)

	must(t, s.MarkMined(ctx, nil))
}

func testMarkMinedIsAtomic(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	a := f.tx("dev", 1)
	insert(t, s, a)
	submit(t, s, a, 0)
	err := s.MarkMined(ctx, []engine.Mined{
		{ID: a.ID, Status: engine.StatusCompleted, BlockNumber: 5, GasUsed: 1, Ended: at(10)},
		{ID: newID(), Status: engine.StatusCompleted, BlockNumber: 5, GasUsed: 1, Ended: at(10)},
	})
	if err == nil {
		t.Fatalf("MarkMined with an unknown transaction succeeded")
	}
	wantCode(t, err, engine.CodeNotFound, "MarkMined with an unknown transaction")
	wantTx(t, get(t, s, a.ID), a) // still submitted, no block
}

func testMarkFailed(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	fresh, waiting, sent, done := f.tx("dev", 1), f.tx("dev", 2), f.tx("dev", 3), f.tx("dev", 4)
	waiting.Status = engine.StatusWaiting
	insert(t, s, fresh, waiting, sent, done)
	submit(t, s, sent, 0)
	submit(t, s, done, 1)
	must(t, s.MarkMined(ctx, []engine.Mined{{ID: done.ID, Status: engine.StatusCompleted, BlockNumber: 9, Ended: at(9)}}))

	for i, tx := range []*engine.Transaction{fresh, waiting, sent} {
		txErr := &engine.TxError{Code: engine.TxDependencyFailed, Message: fmt.Sprintf("dependency %d failed", i)}
		ended := at(500 + i)
		must(t, s.MarkFailed(ctx, tx.ID, txErr, ended))
		tx.Status, tx.Error, tx.Ended = engine.StatusFailed, txErr, &ended
		wantTx(t, get(t, s, tx.ID), tx)
	}

	wantCode(t, s.MarkFailed(ctx, fresh.ID, &engine.TxError{Code: engine.TxExpired}, at(600)), engine.CodeConflict, "MarkFailed of a failed transaction")
	wantTx(t, get(t, s, fresh.ID), fresh) // first failure kept
	wantCode(t, s.MarkFailed(ctx, done.ID, &engine.TxError{Code: engine.TxExpired}, at(600)), engine.CodeConflict, "MarkFailed of a completed transaction")
	if got := get(t, s, done.ID); got.Status != engine.StatusCompleted || got.Error != nil {
		t.Fatalf("completed transaction changed: status %s, error %v", got.Status, got.Error)
	}
	wantCode(t, s.MarkFailed(ctx, newID(), &engine.TxError{Code: engine.TxExpired}, at(600)), engine.CodeNotFound, "MarkFailed of an unknown transaction")
}

func testCursors(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	wantCursor := func(network string, want uint64, wantOK bool) {
		t.Helper()
		got, ok, err := s.Cursor(ctx, network)
		must(t, err)
		if got != want || ok != wantOK {
			t.Fatalf("Cursor(%s) = %d, %v; want %d, %v", network, got, ok, want, wantOK)
		}
	}
	wantCursor("dev", 0, false)
	must(t, s.SetCursor(ctx, "dev", 0, common.Hash{0xa0}))
	wantCursor("dev", 0, true)
	must(t, s.SetCursor(ctx, "dev", 100, common.Hash{0xa1}))
	wantCursor("dev", 100, true)
	wantCursor("sepolia", 0, false)
	must(t, s.SetCursor(ctx, "sepolia", 1<<40, common.Hash{0xb0}))
	must(t, s.SetCursor(ctx, "dev", 97, common.Hash{0xa2})) // back, after a reorg
	wantCursor("dev", 97, true)
	wantCursor("sepolia", 1<<40, true)
}

func testProcessedHashes(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	wantHash := func(n uint64, want common.Hash, wantOK bool) {
		t.Helper()
		got, ok, err := s.ProcessedHash(ctx, "dev", n)
		must(t, err)
		if got != want || ok != wantOK {
			t.Fatalf("ProcessedHash(%d) = %s, %v; want %s, %v", n, got, ok, want, wantOK)
		}
	}
	for n := uint64(1); n <= 10; n++ {
		must(t, s.SetCursor(ctx, "dev", n, common.Hash{byte(n)}))
	}
	wantHash(10, common.Hash{10}, true)
	wantHash(3, common.Hash{3}, true)
	wantHash(11, common.Hash{}, false)
	// Another network keeps its own hashes.
	must(t, s.SetCursor(ctx, "main", 3, common.Hash{0xee}))
	wantHash(3, common.Hash{3}, true)
	// Going back forgets the hashes above the new cursor.
	must(t, s.SetCursor(ctx, "dev", 6, common.Hash{6}))
	wantHash(7, common.Hash{}, false)
	wantHash(6, common.Hash{6}, true)
	// Replacing a block's hash (same height, other block) keeps the new one.
	must(t, s.SetCursor(ctx, "dev", 6, common.Hash{0x66}))
	wantHash(6, common.Hash{0x66}, true)
	// Only the last ProcessedRetention hashes are kept.
	far := uint64(6 + engine.ProcessedRetention + 1)
	must(t, s.SetCursor(ctx, "dev", far, common.Hash{0xff}))
	wantHash(5, common.Hash{}, false)
	wantHash(far, common.Hash{0xff}, true)
}

// testConcurrentWriters runs writers that group-commit batches at once,
// with readers polling meanwhile: every row lands, each writer's rows keep
// their order, nothing fails with a lock error.
func testConcurrentWriters(t *testing.T, s engine.Store) {
	const (
		writers = 8
		batches = 10
		perTx   = 20
	)
	ctx := ctxOf(t)
	f := newFixture(t, s)

	byWriter := make([][]string, writers)
	errs := make(chan error, writers+4)
	done := make(chan struct{})
	start := make(chan struct{})
	var readers, all sync.WaitGroup
	for w := range writers {
		all.Go(func() {
			<-start
			for b := range batches {
				batch := make([]*engine.Transaction, perTx)
				for i := range batch {
					batch[i] = f.tx("dev", w*1000+b*perTx+i)
					byWriter[w] = append(byWriter[w], batch[i].ID)
				}
				if err := s.InsertTransactions(ctx, batch); err != nil {
					errs <- fmt.Errorf("writer %d batch %d: %w", w, b, err)
					return
				}
			}
		})
	}
	for r := range 4 {
		readers.Go(func() {
			<-start
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := s.ReadyTransactions(ctx, f.account.ID, "dev", 50); err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				if _, _, err := s.MaxNonce(ctx, f.account.ID, "dev"); err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	close(start)
	all.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	ready, err := s.ReadyTransactions(ctx, f.account.ID, "dev", writers*batches*perTx+10)
	must(t, err)
	if len(ready) != writers*batches*perTx {
		t.Fatalf("ready = %d rows, want %d", len(ready), writers*batches*perTx)
	}
	pos := make(map[string]int, len(ready))
	for i, tx := range ready {
		if _, dup := pos[tx.ID]; dup {
			t.Fatalf("transaction %s listed twice", tx.ID)
		}
		pos[tx.ID] = i
	}
	for w, ids := range byWriter {
		for i := 1; i < len(ids); i++ {
			if pos[ids[i-1]] >= pos[ids[i]] {
				t.Fatalf("writer %d: transaction %d is before %d in acceptance order", w, i, i-1)
			}
		}
	}
}
