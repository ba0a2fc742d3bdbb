package engine

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
)

// queueDistinct queues transactions whose calls differ (their data ends
// with their id), so that each is estimated on its own.
func queueDistinct(t *testing.T, s *Sender, ids ...string) {
	t.Helper()
	var txs []*Transaction
	for _, id := range ids {
		data := append([]byte{0xa9, 0x05, 0x9c, 0xbb}, id...)
		txs = append(txs, &Transaction{ID: id, AccountID: "acct", Network: "dev", Status: StatusNew, ContractAddress: common.Address{1}, Data: data})
	}
	if err := s.store.InsertTransactions(context.Background(), txs); err != nil {
		t.Fatal(err)
	}
}

// refuseEstimates makes chain answer err to the estimates of the calls of
// ids (queueDistinct) and counts them.
func refuseEstimates(chain *fakeChain, err error, ids ...string) map[string]int {
	asked := map[string]int{}
	chain.estimate = func(msg ethereum.CallMsg) (uint64, error) {
		for _, id := range ids {
			if bytes.HasSuffix(msg.Data, []byte(id)) {
				asked[id]++
				return 0, err
			}
		}
		return 50_000, nil
	}
	return asked
}

// TestSenderParksRefusedEstimateAndGoesOn: a transaction whose estimate the
// node refuses for a reason of its own (a JSON-RPC error that is no revert)
// is parked: it stays new with the node's words, the account's later
// transactions take the nonces, it is estimated again once per block, and
// after 5 refusals spanning 3 blocks or more it fails node_refused with the
// node's message. Before, the refusal stopped the pump: every later
// transaction of the account waited behind it, forever.
func TestSenderParksRefusedEstimateAndGoesOn(t *testing.T) {
	chain := &fakeChain{}
	store := newMemStore()
	s := newTestSender(t, chain, store, 8)
	refusal := rpcError{code: -32000, msg: "eth_estimateGas: stack limit reached 1024 (1023)"}
	asked := refuseEstimates(chain, refusal, "a")
	queueDistinct(t, s, "a", "b", "c")
	pumpAt(t, s, chain, 10)
	if a := store.txs["a"]; a.Status != StatusNew || a.Error == nil || a.Error.Code != TxNodeRefused || a.Nonce != nil {
		t.Fatalf("a after a refused estimate: %s %+v", a.Status, a.Error)
	}
	if got := nonces(store, "b", "c"); got[0] != uint64(0) || got[1] != uint64(1) {
		t.Fatalf("later transactions' nonces = %v, want [0 1]", got)
	}
	queueDistinct(t, s, "d")
	pumpAt(t, s, chain, 10) // same block: a is not estimated again
	if asked["a"] != 1 || store.txs["d"].Nonce == nil || *store.txs["d"].Nonce != 2 {
		t.Fatalf("same block: a estimated %d times, d nonce %v", asked["a"], store.txs["d"].Nonce)
	}
	for head := uint64(11); head <= 13; head++ {
		pumpAt(t, s, chain, head)
		if a := store.txs["a"]; a.Status != StatusNew {
			t.Fatalf("a at head %d: %s %+v", head, a.Status, a.Error)
		}
	}
	pumpAt(t, s, chain, 14)
	a := store.txs["a"]
	if a.Status != StatusFailed || a.Error.Code != TxNodeRefused || !strings.Contains(a.Error.Message, refusal.msg) || a.Nonce != nil {
		t.Fatalf("a after 5 refusals over 4 blocks: %s %+v", a.Status, a.Error)
	}
	if asked["a"] != parkAttempts || s.Parked() != 0 {
		t.Fatalf("a estimated %d times, %d parked", asked["a"], s.Parked())
	}
	if f := s.TakeFailed(); len(f) != 1 || f[0] != "a" {
		t.Fatalf("failed = %v, want [a] (its dependents are resolved)", f)
	}
}

// TestSenderParkedTakeNoRoom: parked transactions are read on top of the
// window's room, so ready ones behind them still fill it.
func TestSenderParkedTakeNoRoom(t *testing.T) {
	chain := &fakeChain{}
	store := newMemStore()
	s := newTestSender(t, chain, store, 2)
	refuseEstimates(chain, rpcError{code: -32602, msg: "invalid argument 0: json: cannot unmarshal"}, "p1", "p2")
	queueDistinct(t, s, "p1", "p2", "x", "y", "z")
	pumpAt(t, s, chain, 10)
	if got := nonces(store, "p1", "p2", "x", "y", "z"); got[0] != nil || got[1] != nil || got[2] != uint64(0) || got[3] != uint64(1) || got[4] != nil {
		t.Fatalf("nonces = %v, want [<nil> <nil> 0 1 <nil>]", got)
	}
	if s.Idle() {
		t.Fatal("Idle with transactions parked: they would never be tried again")
	}
}

// TestSenderEstimateNodeTroubleFailsNothing: a transport failure, a rate
// limit or a node that cannot serve the call is nobody's fault: the pump
// stops and is retried, however often, and no transaction is parked or
// failed.
func TestSenderEstimateNodeTroubleFailsNothing(t *testing.T) {
	for _, err := range []error{
		errors.New("dial tcp 127.0.0.1:8545: connect: connection refused"),
		rpcError{code: -32005, msg: "limit exceeded"},
		rpcError{code: 429, msg: "Your app has exceeded its compute units per second capacity."},
		rpcError{code: -32000, msg: "header not found"},
		rpcError{code: -32603, msg: "internal error"},
		NodeErrorSample{Status: 429}.Err(),
	} {
		chain := &fakeChain{}
		store := newMemStore()
		s := newTestSender(t, chain, store, 4)
		refuseEstimates(chain, err, "a", "b")
		queueDistinct(t, s, "a", "b")
		for head := uint64(10); head < 30; head++ {
			observe(chain, s.net, head)
			if _, perr := s.Pump(context.Background()); perr == nil {
				t.Fatalf("%v: Pump succeeded", err)
			}
		}
		if a, b := store.txs["a"], store.txs["b"]; a.Status != StatusNew || b.Status != StatusNew || s.Parked() != 0 {
			t.Fatalf("%v: a %s, b %s, %d parked", err, a.Status, b.Status, s.Parked())
		}
	}
}

// TestSenderEstimateNeedsTooMuchGasFails: an estimate that needs more gas
// than a block allows is the transaction's own fault: it fails invalid
// with the node's words before a nonce is taken, and the next one goes.
func TestSenderEstimateNeedsTooMuchGasFails(t *testing.T) {
	chain := &fakeChain{}
	store := newMemStore()
	s := newTestSender(t, chain, store, 4)
	refuseEstimates(chain, rpcError{code: -32000, msg: "gas required exceeds allowance (30000000)"}, "a")
	queueDistinct(t, s, "a", "b")
	pumpAt(t, s, chain, 10)
	a := store.txs["a"]
	if a.Status != StatusFailed || a.Error.Code != TxInvalid || !strings.Contains(a.Error.Message, "gas required exceeds allowance (30000000)") || a.Nonce != nil {
		t.Fatalf("a: %s %+v nonce %v", a.Status, a.Error, a.Nonce)
	}
	if b := store.txs["b"]; b.Nonce == nil || *b.Nonce != 0 {
		t.Fatalf("b nonce %v, want 0", b.Nonce)
	}
}
