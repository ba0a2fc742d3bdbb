package engine

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"testing"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// observe moves the fake chain's head to n, as the network's watcher
// would see it.
func observe(chain *fakeChain, net *Network, n uint64) {
	chain.head = n
	net.ObserveHead(n)
}

// pumpAt moves the head to n and pumps.
func pumpAt(t *testing.T, s *Sender, chain *fakeChain, n uint64) {
	t.Helper()
	observe(chain, s.net, n)
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatalf("Pump at head %d: %v", n, err)
	}
}

// TestSenderResendsOnBlocksNotTime: a transaction the chain does not mine
// is sent again as it is after RebroadcastBlocks blocks and replaced with
// higher fees after ReplaceBlocks blocks: counted in blocks, whatever the
// wall clock says. At the fee cap no new version is signed.
func TestSenderResendsOnBlocksNotTime(t *testing.T) {
	chain := &fakeChain{}
	store := newMemStore()
	s := newTestSender(t, chain, store, 4)
	observe(chain, s.net, 10)
	queue(t, s, "a")
	pumpAt(t, s, chain, 10)
	first := chain.sent[0]

	// Blocks pass one by one, fewer than RebroadcastBlocks: nothing is sent.
	for h := uint64(11); h < 10+DefaultRebroadcastBlocks; h++ {
		pumpAt(t, s, chain, h)
	}
	if len(chain.sent) != 1 {
		t.Fatalf("%d broadcasts before RebroadcastBlocks blocks, want 1", len(chain.sent))
	}
	pumpAt(t, s, chain, 10+DefaultRebroadcastBlocks)
	if len(chain.sent) != 2 || chain.sent[1].Hash() != first.Hash() {
		t.Fatalf("after %d blocks: %d broadcasts (versions %d), want the same bytes again", DefaultRebroadcastBlocks, len(chain.sent), versions(chain.sent))
	}
	pumpAt(t, s, chain, 10+DefaultReplaceBlocks)
	if n := versions(chain.sent); n != 2 {
		t.Fatalf("%d versions after %d blocks, want the replacement", n, DefaultReplaceBlocks)
	}
	second := chain.sent[len(chain.sent)-1]
	minTip := new(big.Int).Div(new(big.Int).Mul(first.GasTipCap(), big.NewInt(115)), big.NewInt(100))
	minCap := new(big.Int).Div(new(big.Int).Mul(first.GasFeeCap(), big.NewInt(115)), big.NewInt(100))
	if second.Nonce() != first.Nonce() || second.Gas() != first.Gas() || second.GasTipCap().Cmp(minTip) < 0 || second.GasFeeCap().Cmp(minCap) < 0 {
		t.Fatalf("replacement nonce %d gas %d tip %s cap %s; first nonce %d gas %d tip %s cap %s",
			second.Nonce(), second.Gas(), second.GasTipCap(), second.GasFeeCap(), first.Nonce(), first.Gas(), first.GasTipCap(), first.GasFeeCap())
	}
	if a := store.txs["a"]; *a.Hash != second.Hash() || a.Replaced == nil {
		t.Fatalf("stored: hash %s replaced %v", a.Hash, a.Replaced)
	}
	// The next replacement waits ReplaceBlocks from this one.
	pumpAt(t, s, chain, 10+DefaultReplaceBlocks+DefaultRebroadcastBlocks)
	if n := versions(chain.sent); n != 2 {
		t.Fatalf("replaced again within %d blocks: %d versions", DefaultRebroadcastBlocks, n)
	}
	// At the cap no new version is signed: the stored one goes again as it is.
	s.net.MaxFeePerGasCap = second.GasFeeCap()
	before := len(chain.sent)
	pumpAt(t, s, chain, 10+2*DefaultReplaceBlocks+DefaultRebroadcastBlocks)
	if len(chain.sent) == before {
		t.Fatal("nothing sent at the cap")
	}
	for _, tx := range chain.sent[before:] {
		if tx.Hash() != second.Hash() {
			t.Fatalf("signed a version above the cap: cap %s, sent %s", second.GasFeeCap(), tx.GasFeeCap())
		}
	}
}

// TestSenderLeavesProgressAlone: while the account's nonce moves on chain
// (transactions mined, waiting for their confirmation depth), nothing is
// sent again, replaced, or even looked at: no node call per block.
func TestSenderLeavesProgressAlone(t *testing.T) {
	chain := &fakeChain{}
	nonceCalls := 0
	chain.nonceAt = func(*big.Int) uint64 { nonceCalls++; return chain.nonce }
	s, store, bc := newBatchSender(t, chain, 64)
	s.net.Confirmations = 12
	observe(chain, s.net, 100)
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	queue(t, s, ids...)
	pumpAt(t, s, chain, 100)
	nonceCalls = 0
	// One transaction completes per block (the watcher), the rest wait.
	for i, id := range ids {
		store.txs[id].Status = StatusCompleted
		pumpAt(t, s, chain, 101+uint64(i))
	}
	if bc.sendBatches != 1 || nonceCalls != 0 {
		t.Fatalf("while making progress: %d send batches, %d nonce reads; want 1 and 0", bc.sendBatches, nonceCalls)
	}
}

// TestSenderSettlesConsumedNonce: the chain's nonce passes a transaction
// in flight and none of its versions is mined (the key was used
// elsewhere). Once that nonce is final and the watcher did not complete it,
// it fails nonce_consumed and the window frees; one that was mined but
// missed by the watcher completes from its receipt.
func TestSenderSettlesConsumedNonce(t *testing.T) {
	chain := &fakeChain{receipts: map[common.Hash]*types.Receipt{}}
	s, store, _ := newBatchSender(t, chain, 4)
	observe(chain, s.net, 50)
	queue(t, s, "a", "b", "c")
	pumpAt(t, s, chain, 50)
	// b was mined (the watcher missed it); a's and c's nonces were used by
	// transactions signed elsewhere.
	bHash := *store.txs["b"].Hash
	chain.receipts[bHash] = &types.Receipt{Status: types.ReceiptStatusSuccessful, TxHash: bHash, BlockNumber: big.NewInt(51), GasUsed: 40_000}
	chain.nonce = 3
	h := uint64(50)
	for i := 0; i < 4 && store.txs["a"].Status == StatusSubmitted; i++ {
		h += DefaultRebroadcastBlocks
		pumpAt(t, s, chain, h)
	}
	for id, want := range map[string]TxStatus{"a": StatusFailed, "b": StatusCompleted, "c": StatusFailed} {
		tx := store.txs[id]
		if tx.Status != want {
			t.Fatalf("%s: %s %+v, want %s", id, tx.Status, tx.Error, want)
		}
		if want == StatusFailed && tx.Error.Code != TxNonceConsumed {
			t.Fatalf("%s: error %+v, want nonce_consumed", id, tx.Error)
		}
	}
	if got := s.TakeFailed(); len(got) != 2 {
		t.Fatalf("failed ids %v, want a and c (their dependants are resolved)", got)
	}
	// The window is free: the next transaction takes the chain's next nonce.
	queue(t, s, "d")
	pumpAt(t, s, chain, h+1)
	if d := store.txs["d"]; d.Status != StatusSubmitted || *d.Nonce != 3 {
		t.Fatalf("d: %s nonce %v", d.Status, d.Nonce)
	}
}

// TestSenderWaitsForFinality: a nonce passed on chain but not below the
// confirmation depth is left to the watcher (a reorg may still bring it back).
func TestSenderWaitsForFinality(t *testing.T) {
	chain := &fakeChain{}
	s, store, _ := newBatchSender(t, chain, 4)
	s.net.Confirmations = 12
	observe(chain, s.net, 50)
	queue(t, s, "a")
	pumpAt(t, s, chain, 50)
	chain.nonceAt = func(block *big.Int) uint64 {
		if block == nil || block.Uint64() >= 52 {
			return 1 // mined in block 52
		}
		return 0
	}
	for h := uint64(55); h < 52+12; h += DefaultRebroadcastBlocks {
		pumpAt(t, s, chain, h)
		if a := store.txs["a"]; a.Status != StatusSubmitted {
			t.Fatalf("at head %d (mined at 52, depth 12): a is %s", h, a.Status)
		}
	}
}

// TestSenderFillsRefusedNonceMidBatch: the node refuses for good a
// transaction between accepted ones (one transfer the account cannot pay).
// It fails with the node's reason once a 0-value transfer to itself fills
// its nonce; the later ones keep theirs; nothing waits forever.
func TestSenderFillsRefusedNonceMidBatch(t *testing.T) {
	chain := &fakeChain{}
	chain.send = func(tx *types.Transaction) error {
		if tx.Nonce() == 1 && len(tx.Data()) > 0 {
			return errors.New("insufficient funds for gas * price + value: balance 1, tx cost 2")
		}
		return nil
	}
	s, store, _ := newBatchSender(t, chain, 8)
	observe(chain, s.net, 10)
	queue(t, s, "a", "b", "c")
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := store.txs["b"]
	if b.Status != StatusSubmitted || *b.Nonce != 1 || b.Error == nil || b.Error.Code != TxInsufficientFunds {
		t.Fatalf("b: %s nonce %v error %+v", b.Status, b.Nonce, b.Error)
	}
	var filler types.Transaction
	if err := filler.UnmarshalBinary(b.RawTx); err != nil {
		t.Fatal(err)
	}
	if !IsFiller(&filler, s.account.Address) || filler.Nonce() != 1 || filler.Gas() != FillerGas {
		t.Fatalf("stored version of b is not a filler of nonce 1: to %v value %s data %x", filler.To(), filler.Value(), filler.Data())
	}
	if last := chain.sent[len(chain.sent)-1]; last.Hash() != filler.Hash() {
		t.Fatal("the filler was not broadcast")
	}
	if s.next != 3 || *store.txs["c"].Nonce != 2 {
		t.Fatalf("next %d, c nonce %d: the later nonces must stay", s.next, *store.txs["c"].Nonce)
	}
	// The filler is mined: b fails with the node's reason.
	r := &types.Receipt{Status: types.ReceiptStatusSuccessful, TxHash: filler.Hash(), BlockNumber: big.NewInt(11), GasUsed: FillerGas}
	m := minedOutcome(context.Background(), store, b, r, nil, s.clock.Now())
	if m.Status != StatusFailed || m.Error.Code != TxInsufficientFunds {
		t.Fatalf("filler mined: %s %+v", m.Status, m.Error)
	}
	// Had the original been mined first, it would have completed.
	orig := &types.Receipt{Status: types.ReceiptStatusSuccessful, TxHash: common.Hash{1}, BlockNumber: big.NewInt(11), GasUsed: 51_000}
	if m := minedOutcome(context.Background(), store, b, orig, map[string]*abi.ABI{}, s.clock.Now()); m.Status != StatusCompleted {
		t.Fatalf("original mined: %s", m.Status)
	}
}

// TestSenderTransientRefusalRequeues: refusals that pass by themselves
// (underpriced, pool full, rate limited, nonce too high) put the
// transaction back in the queue with its nonce released and make the pump
// back off (ErrNodeBusy); they never fail it.
func TestSenderTransientRefusalRequeues(t *testing.T) {
	for _, msg := range []string{"transaction underpriced", "txpool is full", "429 Too Many Requests", "nonce too high"} {
		t.Run(msg, func(t *testing.T) {
			refuse := true
			chain := &fakeChain{send: func(*types.Transaction) error {
				if refuse {
					return errors.New(msg)
				}
				return nil
			}}
			s, store, _ := newBatchSender(t, chain, 8)
			queue(t, s, "a", "b")
			if _, err := s.Pump(context.Background()); !errors.Is(err, ErrNodeBusy) {
				t.Fatalf("Pump = %v, want ErrNodeBusy", err)
			}
			for _, id := range []string{"a", "b"} {
				if tx := store.txs[id]; tx.Status != StatusNew || tx.Nonce != nil {
					t.Fatalf("%s: %s nonce %v, want new without nonce", id, tx.Status, tx.Nonce)
				}
			}
			refuse = false
			if _, err := s.Pump(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := nonces(store, "a", "b"); got[0] != uint64(0) || got[1] != uint64(1) {
				t.Fatalf("nonces after the node took them: %v", got)
			}
		})
	}
}

// TestSenderRefusedResendFailsAndFills: a transaction in flight that the
// node refuses for good when it is sent again (the account's balance fell)
// fails with the node's reason and a filler takes its nonce; a later one
// keeps its nonce.
func TestSenderRefusedResendFailsAndFills(t *testing.T) {
	chain := &fakeChain{}
	s, store, _ := newBatchSender(t, chain, 8)
	observe(chain, s.net, 10)
	queue(t, s, "a", "b")
	pumpAt(t, s, chain, 10)
	chain.send = func(tx *types.Transaction) error {
		if tx.Nonce() == 0 && len(tx.Data()) > 0 {
			return errors.New("insufficient funds for gas * price + value")
		}
		return nil
	}
	pumpAt(t, s, chain, 10+DefaultRebroadcastBlocks)
	a := store.txs["a"]
	var stored types.Transaction
	if err := stored.UnmarshalBinary(a.RawTx); err != nil {
		t.Fatal(err)
	}
	if a.Status != StatusSubmitted || a.Error == nil || a.Error.Code != TxInsufficientFunds || !IsFiller(&stored, s.account.Address) {
		t.Fatalf("a: %s %+v, stored filler %v", a.Status, a.Error, IsFiller(&stored, s.account.Address))
	}
	if b := store.txs["b"]; b.Error != nil || *b.Nonce != 1 {
		t.Fatalf("b: %+v nonce %d", b.Error, *b.Nonce)
	}
}

// TestSenderNotesNodeRefusal: a node that refuses to estimate a
// transaction for a reason that is not a revert or a lack of funds (it
// answers a JSON-RPC error) leaves the transaction new and parked (the
// pump goes on), with node_refused and the node's words on its record; a
// transport failure notes nothing.
func TestSenderNotesNodeRefusal(t *testing.T) {
	chain := &fakeChain{estimate: func(ethereum.CallMsg) (uint64, error) {
		return 0, rpcError{code: -32602, msg: "duplicate field data"}
	}}
	store := newMemStore()
	s := newTestSender(t, chain, store, 4)
	queue(t, s, "a")
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatalf("Pump failed on one transaction's refusal: %v", err)
	}
	a := store.txs["a"]
	if a.Status != StatusNew || a.Error == nil || a.Error.Code != TxNodeRefused || a.Error.Message != "duplicate field data" {
		t.Fatalf("a: %s %+v", a.Status, a.Error)
	}
	chain.estimate = nil
	pumpAt(t, s, chain, 11) // a parked transaction is estimated again at the next block
	if a := store.txs["a"]; a.Status != StatusSubmitted || a.Error != nil {
		t.Fatalf("a once the node takes it: %s %+v", a.Status, a.Error)
	}
}

// rpcError is a JSON-RPC error object as go-ethereum's client returns it.
type rpcError struct {
	code int
	msg  string
}

func (e rpcError) Error() string  { return e.msg }
func (e rpcError) ErrorCode() int { return e.code }

func TestNodeMessageHidesURLs(t *testing.T) {
	err := errors.New(`Post "https://node.example/v3/secretkey": dial tcp: connection refused`)
	if got := nodeMessage(err); got != `Post "<node>": dial tcp: connection refused` {
		t.Fatalf("nodeMessage = %q", got)
	}
}

// TestSenderCareStaysBounded: an account that always has something in
// flight, whose transactions are mined as fast as they are sent, does not
// remember every transaction it ever sent: what the sender tracks per
// transaction (ledger.sent, ledger.signed) stays bounded by what is in
// flight. Before, the entries of mined transactions were never removed.
func TestSenderCareStaysBounded(t *testing.T) {
	chain := &fakeChain{}
	store := newMemStore()
	s := newTestSender(t, chain, store, 4)
	most := 0
	for i := 0; i < 300; i++ {
		queue(t, s, fmt.Sprintf("t%d", i), fmt.Sprintf("u%d", i))
		pumpAt(t, s, chain, uint64(10+i))
		// The chain mines all but the newest: something stays in flight.
		for _, tx := range store.txs {
			if tx.Status == StatusSubmitted && tx.ID != fmt.Sprintf("u%d", i) {
				tx.Status = StatusCompleted
			}
		}
		most = max(most, len(s.ledger.sent), len(s.ledger.signed))
	}
	if bound := 2*4 + ledgerSlack + 2; most > bound {
		t.Fatalf("the ledger held up to %d entries with at most 4 in flight, want at most %d", most, bound)
	}
}

// TestSenderResendsRateLimitedBroadcastAtNextCheck: a broadcast the
// provider answered 429 while a later nonce of the batch was taken keeps
// its nonce and is sent again at the next pump's check, within a block,
// not after RebroadcastBlocks blocks without progress (promise 13: a rate
// limit delays by seconds, not minutes).
func TestSenderResendsRateLimitedBroadcastAtNextCheck(t *testing.T) {
	limited := true
	chain := &fakeChain{}
	chain.send = func(tx *types.Transaction) error {
		if limited && tx.Nonce() == 0 {
			limited = false
			return NodeErrorSample{Status: 429}.Err()
		}
		return nil
	}
	store := newMemStore()
	s := newTestSender(t, chain, store, 4)
	queue(t, s, "a", "b")
	pumpAt(t, s, chain, 10)
	if a := store.txs["a"]; a.Status != StatusSubmitted || *a.Nonce != 0 || len(chain.sent) != 2 {
		t.Fatalf("a %s nonce %v, %d sent", a.Status, a.Nonce, len(chain.sent))
	}
	pumpAt(t, s, chain, 11)
	again := 0
	for _, tx := range chain.sent {
		if tx.Nonce() == 0 {
			again++
		}
	}
	if again != 2 {
		t.Fatalf("nonce 0 broadcast %d times by the next block, want 2 (sent again after the 429)", again)
	}
}

// TestSenderReplacesThroughResyncs: an account whose pumps each ask for a
// re-sync (a node that refuses any nonce gap answers each new batch
// "nonce too high") still has its stuck lowest nonce replaced after
// ReplaceBlocks blocks: what the ledger counts survives a re-sync. Before, sync
// started the ledger over and no check ever came (found by the simulation with
// a node that refuses nonce gaps, seed 26).
func TestSenderReplacesThroughResyncs(t *testing.T) {
	chain := &fakeChain{}
	store := newMemStore()
	s := newTestSender(t, chain, store, 4)
	observe(chain, s.net, 10)
	queue(t, s, "a")
	pumpAt(t, s, chain, 10)
	for h := uint64(11); h <= 10+2*DefaultReplaceBlocks; h++ {
		s.Resync()
		pumpAt(t, s, chain, h)
	}
	if n := versions(chain.sent); n < 2 {
		t.Fatalf("%d versions after %d blocks with a re-sync at each, want a replacement", n, 2*DefaultReplaceBlocks)
	}
}
