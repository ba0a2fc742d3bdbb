package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// testTransactionABIRoundTrip: the ABI of a direct send survives the store;
// transactions without one read back with a nil ABI.
func testTransactionABIRoundTrip(t *testing.T, s engine.Store) {
	f := newFixture(t, s)
	direct, registered := f.tx("dev", 1), f.tx("dev", 2)
	direct.ABI = json.RawMessage(`[{"type":"event","name":"Ping","inputs":[]}]`)
	direct.ContractAddress = randomAddress(t)
	insert(t, s, direct, registered)
	if got := get(t, s, direct.ID); string(got.ABI) != string(direct.ABI) {
		t.Fatalf("ABI = %s, want %s", got.ABI, direct.ABI)
	}
	if got := get(t, s, registered.ID); got.ABI != nil {
		t.Fatalf("ABI = %s, want nil", got.ABI)
	}
}

// listAll pages through f (f.Limit per page) and returns the ids in order.
func listAll(t *testing.T, s engine.Store, f engine.TxFilter) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("pagination does not end")
		}
		txs, next, err := s.ListTransactions(ctxOf(t), f)
		must(t, err)
		if len(txs) > f.Limit {
			t.Fatalf("page of %d rows over limit %d", len(txs), f.Limit)
		}
		ids = append(ids, txIDs(txs)...)
		if next == nil {
			return ids
		}
		if len(txs) != f.Limit {
			t.Fatalf("short page of %d rows (limit %d) with a next cursor", len(txs), f.Limit)
		}
		f.After = next
	}
}

func testListTransactions(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	other := newFixture(t, s)
	second := newAccount(t, s, f.user.ID, 0, false)
	contract := newID()

	// Six of f's transactions; two share a creation time (tie on created).
	var mine []*engine.Transaction
	for i, sec := range []int{1, 2, 2, 3, 4, 5} {
		tx := f.tx("dev", sec)
		if i%2 == 1 {
			tx.ContractID, tx.Method = contract, "approve"
		}
		if i == 4 {
			tx.Network = "other"
		}
		if i == 5 {
			tx.AccountID, tx.From = second.ID, second.Address
		}
		mine = append(mine, tx)
	}
	insert(t, s, mine...)
	insert(t, s, other.tx("dev", 3))
	submit(t, s, mine[0], 0)

	asc := txIDs(mine)
	desc := slices.Clone(asc)
	slices.Reverse(desc)
	for _, limit := range []int{1, 2, 4, 6, 100} {
		if got := listAll(t, s, engine.TxFilter{Owner: f.user.ID, Limit: limit}); !slices.Equal(got, desc) {
			t.Errorf("newest first, limit %d: got %v, want %v", limit, got, desc)
		}
		if got := listAll(t, s, engine.TxFilter{Owner: f.user.ID, Limit: limit, Ascending: true}); !slices.Equal(got, asc) {
			t.Errorf("oldest first, limit %d: got %v, want %v", limit, got, asc)
		}
	}

	since, until := at(2), at(4)
	from := second.Address
	nobody := common.Address{1}
	for _, tt := range []struct {
		name string
		f    engine.TxFilter
		want []*engine.Transaction
	}{
		{"status", engine.TxFilter{Statuses: []engine.TxStatus{engine.StatusSubmitted}}, []*engine.Transaction{mine[0]}},
		{"statuses", engine.TxFilter{Statuses: []engine.TxStatus{engine.StatusSubmitted, engine.StatusNew}}, mine},
		{"contract", engine.TxFilter{ContractID: contract}, []*engine.Transaction{mine[1], mine[3], mine[5]}},
		{"method", engine.TxFilter{Method: "approve"}, []*engine.Transaction{mine[1], mine[3], mine[5]}},
		{"from", engine.TxFilter{From: &from}, []*engine.Transaction{mine[5]}},
		{"from nobody", engine.TxFilter{From: &nobody}, nil},
		{"network", engine.TxFilter{Network: "other"}, []*engine.Transaction{mine[4]}},
		{"since until", engine.TxFilter{Since: &since, Until: &until}, mine[1:4]},
	} {
		tt.f.Owner, tt.f.Limit, tt.f.Ascending = f.user.ID, 2, true
		if got, want := listAll(t, s, tt.f), txIDs(tt.want); !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Errorf("%s: got %v, want %v", tt.name, got, want)
		}
	}

	// Stable under inserts: a page boundary does not move when newer rows
	// arrive, and the next page continues where the first ended.
	page, next, err := s.ListTransactions(ctx, engine.TxFilter{Owner: f.user.ID, Limit: 3})
	must(t, err)
	insert(t, s, f.tx("dev", 9), f.tx("dev", 9))
	rest, _, err := s.ListTransactions(ctx, engine.TxFilter{Owner: f.user.ID, Limit: 10, After: next})
	must(t, err)
	if got := append(txIDs(page), txIDs(rest)...); !slices.Equal(got, desc) {
		t.Errorf("pages across inserts: got %v, want %v", got, desc)
	}
	if _, _, err := s.ListTransactions(ctx, engine.TxFilter{Owner: f.user.ID}); err == nil {
		t.Error("limit 0 accepted")
	}
}

func testCancelTransaction(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	fresh, waiting, sent := f.tx("dev", 1), f.tx("dev", 2), f.tx("dev", 3)
	waiting.Status = engine.StatusWaiting
	insert(t, s, fresh, waiting, sent)
	submit(t, s, sent, 0)
	cancelled := &engine.TxError{Code: engine.TxCancelled, Message: "cancelled by the user"}
	for _, tx := range []*engine.Transaction{fresh, waiting} {
		ended := at(50)
		got, err := s.CancelTransaction(ctx, tx.ID, cancelled, ended)
		must(t, err)
		tx.Status, tx.Error, tx.Ended = engine.StatusFailed, cancelled, &ended
		wantTx(t, got, tx)
		wantTx(t, get(t, s, tx.ID), tx)
	}
	_, err := s.CancelTransaction(ctx, fresh.ID, cancelled, at(60))
	wantCode(t, err, engine.CodeConflict, "cancel a failed transaction")
	_, err = s.CancelTransaction(ctx, sent.ID, cancelled, at(60))
	wantCode(t, err, engine.CodeConflict, "cancel a submitted transaction")
	if got := get(t, s, sent.ID); got.Status != engine.StatusSubmitted {
		t.Fatalf("submitted transaction changed to %s", got.Status)
	}
	// A cancelled transaction is no longer ready and can not be submitted.
	ready, err := s.ReadyTransactions(ctx, f.account.ID, "dev", 10)
	must(t, err)
	if len(ready) != 0 {
		t.Fatalf("ready after cancel: %v", txIDs(ready))
	}
	fresh.Nonce, fresh.Hash, fresh.Submitted = ptr(uint64(1)), ptr(randomHash(t)), ptr(time.Now())
	wantCode(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{fresh}), engine.CodeConflict, "MarkSubmittedMany after cancel")
	_, err = s.CancelTransaction(ctx, newID(), cancelled, at(60))
	wantCode(t, err, engine.CodeNotFound, "cancel an unknown transaction")
}
