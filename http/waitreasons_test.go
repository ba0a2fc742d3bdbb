package http

import (
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
)

// putWaiting stores a transaction of alice from account (id, address) in
// status st, changed by mod, and returns it.
func (env *testEnv) putWaiting(account string, from common.Address, st engine.TxStatus, mod func(*engine.Transaction)) *engine.Transaction {
	env.t.Helper()
	tx := &engine.Transaction{ID: uuid.NewString(), Owner: env.alice.ID, AccountID: account, Network: "dev", From: from,
		ContractID: env.aliceToken20.ID, Method: "transfer", Status: st, Created: testNow}
	mod(tx)
	env.store.putTransaction(env.t, tx)
	return tx
}

// reasonsOf lists alice's transactions and returns their waitReasons by id
// (absent: none), and how many pool, status and top-up reads the listing
// made; the response must match openapi.json.
func (env *testEnv) reasonsOf(t *testing.T) (map[string]string, [3]int64) {
	t.Helper()
	before := [3]int64{env.store.poolReads.Load(), env.store.statusReads.Load(), env.store.topUpReads.Load()}
	var listed []engine.TransactionView
	rec := env.do("GET", "/transactions?limit=1000", env.aliceToken, "")
	newOpenAPIValidator(t).check(t, "GET", "/transactions", httptest.NewRequest("GET", "/transactions?limit=1000", nil), rec)
	decodeData(t, rec, &listed)
	out := map[string]string{}
	for _, v := range listed {
		if v.WaitReason != "" {
			out[v.ID] = v.WaitReason
			if v.Status != engine.StatusWaiting {
				t.Errorf("transaction %s is %s with waitReason %q", v.ID, v.Status, v.WaitReason)
			}
		} else if v.Status == engine.StatusWaiting {
			t.Errorf("waiting transaction %s has no waitReason", v.ID)
		}
	}
	return out, [3]int64{env.store.poolReads.Load() - before[0], env.store.statusReads.Load() - before[1], env.store.topUpReads.Load() - before[2]}
}

// TestWaitReasonInViews: GET /transactions and GET /transactions/{id} say
// why each waiting transaction waits, and only those: a pool without a
// treasury (nothing refills its members), a pool whose keeper found the
// treasury short, a pending top-up, an ordinary waitForAsset, a
// dependency not completed. Listing 100 waiting transactions through one
// pool (and one through another) reads each pool at most once, the
// dependencies' statuses once and the pending top-ups once per pool with
// a treasury. A cancelled one has no reason any more.
func TestWaitReasonInViews(t *testing.T) {
	env := newTestEnv(t)
	token := env.aliceToken20.Address.Hex()
	bare := env.createPool(env.aliceToken, `{"name":"bare","network":"dev","size":2}`)
	funded := env.createPool(env.aliceToken, `{"name":"funded","network":"dev","size":1,"treasury":"`+env.aliceAcct.ID+`"}`)
	through := func(p poolView) func(*engine.Transaction) {
		return func(tx *engine.Transaction) {
			tx.PoolID, tx.PoolAsset, tx.PoolValue = p.ID, token, big.NewInt(5)
			tx.WaitForAsset, tx.WaitForValue = token, big.NewInt(5)
		}
	}
	var bareTxs []*engine.Transaction
	for i := range 100 {
		m := bare.Members[i%2]
		bareTxs = append(bareTxs, env.putWaiting(m.Account, common.HexToAddress(m.Address), engine.StatusWaiting, through(bare)))
	}
	fm := funded.Members[0]
	fundedTx := env.putWaiting(fm.Account, common.HexToAddress(fm.Address), engine.StatusWaiting, through(funded))
	own := env.putWaiting(env.aliceAcct.ID, env.aliceAcct.Address, engine.StatusWaiting, func(tx *engine.Transaction) {
		tx.WaitForAsset, tx.WaitForValue = engine.AssetETH, big.NewInt(1000)
	})
	dep := env.putWaiting(env.aliceAcct.ID, env.aliceAcct.Address, engine.StatusNew, func(*engine.Transaction) {})
	dependent := env.putWaiting(env.aliceAcct.ID, env.aliceAcct.Address, engine.StatusWaiting, func(tx *engine.Transaction) {
		tx.DependsOn = []string{dep.ID}
	})

	reasons, reads := env.reasonsOf(t)
	if len(reasons) != 103 {
		t.Fatalf("%d reasons, want 103 (the waiting ones)", len(reasons))
	}
	for _, tx := range bareTxs {
		if r := reasons[tx.ID]; !strings.Contains(r, "pool member "+tx.From.Hex()+" holds 5 of token "+token) || !strings.Contains(r, "no treasury") {
			t.Fatalf("reason %q, want the member's token and the missing treasury", r)
		}
	}
	if r := reasons[fundedTx.ID]; !strings.Contains(r, "refills members when its keeper next looks") {
		t.Errorf("reason %q of a funded pool with no top-up pending", r)
	}
	if r := reasons[own.ID]; !strings.Contains(r, "sender "+env.aliceAcct.Address.Hex()+" holds 1000 wei of ETH (waitForAsset)") {
		t.Errorf("reason %q of an ordinary waitForAsset", r)
	}
	if r := reasons[dependent.ID]; r != "waits for dependency "+dep.ID+" (new) to complete" {
		t.Errorf("reason %q of a dependent", r)
	}
	if reads[0] > 2 || reads[1] != 1 || reads[2] != 1 {
		t.Errorf("listing read pools %d times, statuses %d, top-ups %d; want at most 2 (one per pool), 1, 1 (the pool with a treasury)",
			reads[0], reads[1], reads[2])
	}

	// The funded pool's treasury is short (its keeper says), then a
	// top-up of the member is pending.
	env.engine.mu.Lock()
	env.engine.poolShort = map[string]string{funded.ID: "treasury 0xEE holds 0 wei, too little for the members' top-ups"}
	env.engine.mu.Unlock()
	reasons, _ = env.reasonsOf(t)
	if r := reasons[fundedTx.ID]; !strings.Contains(r, "the pool cannot refill it: treasury 0xEE holds 0 wei") {
		t.Errorf("reason %q, want the keeper's shortfall", r)
	}
	env.engine.mu.Lock()
	env.engine.poolShort = nil
	env.engine.mu.Unlock()
	env.putWaiting(env.aliceAcct.ID, env.aliceAcct.Address, engine.StatusSubmitted, func(tx *engine.Transaction) {
		n := uint64(7)
		tx.PoolID, tx.OrderingKey, tx.Nonce = funded.ID, engine.TopUpKeyPrefix+fm.Account+":"+token, &n
	})
	var v engine.TransactionView
	path := "/transactions/" + fundedTx.ID
	rec := env.do("GET", path, env.aliceToken, "")
	api := newOpenAPIValidator(t)
	api.check(t, "GET", "/transactions/{id}", httptest.NewRequest("GET", path, nil), rec)
	if api.doc.Components.Schemas["Transaction"].Value.Properties["waitReason"] == nil {
		t.Error("openapi.json does not document the Transaction's waitReason")
	}
	decodeData(t, rec, &v)
	if !strings.Contains(v.WaitReason, "a top-up from the pool's treasury is pending") {
		t.Errorf("GET: reason %q, want the pending top-up", v.WaitReason)
	}

	// Cancelled: no longer waiting, no reason.
	wantStatus(t, env.do("DELETE", "/transactions/"+fundedTx.ID, env.aliceToken, ""), http.StatusOK)
	var cancelled engine.TransactionView
	decodeData(t, env.do("GET", "/transactions/"+fundedTx.ID, env.aliceToken, ""), &cancelled)
	if cancelled.Status != engine.StatusFailed || cancelled.WaitReason != "" {
		t.Errorf("cancelled: status %s, reason %q", cancelled.Status, cancelled.WaitReason)
	}
}
