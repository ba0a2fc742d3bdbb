package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"testing"

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
		{"PoolID", got.PoolID, want.PoolID},
		{"OrderingKey", got.OrderingKey, want.OrderingKey},
		{"PoolAsset", got.PoolAsset, want.PoolAsset},
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
	wantBig(t, want.ID+": PoolValue", got.PoolValue, want.PoolValue)
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
	tx.PoolID = newID()
	tx.OrderingKey = "customer \"42\" é ✓"
	tx.PoolAsset = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
	tx.PoolValue = new(big.Int).Set(max256)
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
		got.Parameters != nil || got.Submitted != nil || got.Ended != nil || got.WaitForValue != nil ||
		got.PoolID != "" || got.OrderingKey != "" || got.PoolAsset != "" || got.PoolValue != nil {
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
