package rpcproxy

import (
	"crypto/ecdsa"
	"errors"
	"math/big"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"
)

// chainService is a node's eth namespace as the busy mempool reads it: a
// head and confirmed nonces the test sets, and the sends that reached it.
type chainService struct {
	mu        sync.Mutex
	head      uint64
	nonces    map[common.Address]uint64
	sent      []uint64 // nonces of the sends that reached the node
	heads     atomic.Int64
	nonceRead atomic.Int64
}

func (s *chainService) BlockNumber() hexutil.Uint64 {
	s.heads.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return hexutil.Uint64(s.head)
}

func (s *chainService) GetTransactionCount(addr common.Address, block string) (hexutil.Uint64, error) {
	s.nonceRead.Add(1)
	if block != "latest" {
		return 0, errors.New("want latest")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return hexutil.Uint64(s.nonces[addr]), nil
}

func (s *chainService) SendRawTransaction(raw hexutil.Bytes) (common.Hash, error) {
	var tx types.Transaction
	if err := tx.UnmarshalBinary(raw); err != nil {
		return common.Hash{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, tx.Nonce())
	return tx.Hash(), nil
}

// mine moves the head on and confirms from's transactions below nonce.
func (s *chainService) mine(from common.Address, nonce uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.head++
	s.nonces[from] = nonce
}

func (s *chainService) reached() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint64(nil), s.sent...)
}

func chainUpstream(t *testing.T) (*chainService, string) {
	t.Helper()
	svc := &chainService{head: 7, nonces: map[common.Address]uint64{}}
	srv := rpc.NewServer()
	if err := srv.RegisterName("eth", svc); err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(srv)
	t.Cleanup(func() {
		h.Close()
		srv.Stop()
	})
	return svc, h.URL
}

// signed returns key's transaction of nonce, raw (EIP-1559, or legacy
// EIP-155 when legacy is set).
func signed(t *testing.T, key *ecdsa.PrivateKey, nonce uint64, legacy bool) hexutil.Bytes {
	t.Helper()
	chainID := big.NewInt(1337)
	to := common.HexToAddress(refusedTo)
	var data types.TxData = &types.DynamicFeeTx{ChainID: chainID, Nonce: nonce, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(2), Gas: 21000, To: &to, Value: big.NewInt(1)}
	if legacy {
		data = &types.LegacyTx{Nonce: nonce, GasPrice: big.NewInt(2), Gas: 21000, To: &to, Value: big.NewInt(1)}
	}
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(chainID), data)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// poolFull reports whether err is geth's "txpool is full" (-32000).
func poolFull(err error) bool {
	var rerr rpc.Error
	return errors.As(err, &rerr) && rerr.ErrorCode() == -32000 && err.Error() == "txpool is full"
}

func TestBusyMempoolRefusesPastTheSlots(t *testing.T) {
	node, up := chainUpstream(t)
	p := Start(t, up)
	c := dial(t, p.URL())
	key, _ := crypto.GenerateKey()
	other, _ := crypto.GenerateKey()
	from := crypto.PubkeyToAddress(key.PublicKey)
	node.mine(from, 5) // nonces 0..4 confirmed

	send := func(k *ecdsa.PrivateKey, nonce uint64, legacy bool) error {
		var h common.Hash
		return c.CallContext(ctx(t), &h, "eth_sendRawTransaction", signed(t, k, nonce, legacy))
	}
	// Off by default: the 17th and more pass, and the proxy reads nothing.
	for n := uint64(5); n < 25; n++ {
		if err := send(key, n, false); err != nil {
			t.Fatalf("nonce %d with the busy mempool off: %v", n, err)
		}
	}
	if st := p.Stats(); st.BusyReads != 0 || st.PoolFull != 0 {
		t.Fatalf("busy mempool off: %+v", st)
	}

	p.BusyMempool(DefaultSlots)
	reached := len(node.reached())
	for n := uint64(5); n < 21; n++ { // 16 pending: nonces 5..20
		if err := send(key, n, n%2 == 0); err != nil {
			t.Fatalf("nonce %d (pending %d of 16): %v", n, n-5+1, err)
		}
	}
	for _, n := range []uint64{21, 22, 40} {
		if err := send(key, n, false); !poolFull(err) {
			t.Fatalf("nonce %d (the sender holds 16 pending): %v, want txpool is full", n, err)
		}
	}
	// Another sender has its own 16; a replacement of a pending nonce passes.
	if err := send(other, 0, false); err != nil {
		t.Fatalf("another sender: %v", err)
	}
	if err := send(key, 5, true); err != nil {
		t.Fatalf("a replacement of the lowest pending nonce: %v", err)
	}
	if got := len(node.reached()) - reached; got != 16+1+1 {
		t.Fatalf("%d sends reached the node, want 18 (the refused ones must not)", got)
	}
	// One head read per 50 ms at most and one nonce read per sender and head.
	if r := node.nonceRead.Load(); r != 2 {
		t.Fatalf("%d nonce reads for 2 senders in one block, want 2", r)
	}

	// A block confirms 5 of them: 5 more fit, then the 22nd pending is refused.
	node.mine(from, 10)
	waitHead(t, p, func() bool { return send(key, 21, false) == nil })
	for n := uint64(22); n < 26; n++ {
		if err := send(key, n, false); err != nil {
			t.Fatalf("nonce %d after a block confirmed 5: %v", n, err)
		}
	}
	if err := send(key, 26, false); !poolFull(err) {
		t.Fatalf("nonce 26 (16 pending again): %v", err)
	}
	if st := p.Stats(); st.PoolFull < 4 || st.Refused != 0 {
		t.Fatalf("stats %+v: want PoolFull counting the busy refusals and Refused none", st)
	}

	// Configurable, and off again with ClearFaults.
	p.BusyMempool(2)
	if err := send(key, 12, false); !poolFull(err) {
		t.Fatalf("nonce 12 with 2 slots and 10 confirmed: %v", err)
	}
	p.ClearFaults()
	if err := send(key, 30, false); err != nil {
		t.Fatalf("after ClearFaults: %v", err)
	}
}

// waitHead retries ok until the proxy saw the new head (it reads it at
// most every 50 ms).
func waitHead(t *testing.T, p *Proxy, ok func() bool) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if ok() {
			return
		}
		time.Sleep(headMaxAge / 5)
	}
	t.Fatal("the busy mempool never saw the new head")
}

func TestBusyMempoolInBatches(t *testing.T) {
	node, up := chainUpstream(t)
	p := Start(t, up)
	c := dial(t, p.URL())
	key, _ := crypto.GenerateKey()
	node.mine(crypto.PubkeyToAddress(key.PublicKey), 3)
	p.BusyMempool(4) // nonces 3..6 may be pending

	var hashes [8]common.Hash
	var count hexutil.Uint64
	batch := []rpc.BatchElem{{Method: "eth_getTransactionCount", Args: []any{crypto.PubkeyToAddress(key.PublicKey), "latest"}, Result: &count}}
	for i := range hashes {
		batch = append(batch, rpc.BatchElem{Method: "eth_sendRawTransaction", Args: []any{signed(t, key, uint64(3+i), false)}, Result: &hashes[i]})
	}
	if err := c.BatchCallContext(ctx(t), batch); err != nil {
		t.Fatal(err)
	}
	if batch[0].Error != nil || count != 3 {
		t.Fatalf("the batch's read: %d, %v", count, batch[0].Error)
	}
	for i, b := range batch[1:] {
		nonce := 3 + i
		if nonce < 7 && b.Error != nil {
			t.Fatalf("nonce %d in the batch: %v", nonce, b.Error)
		}
		if nonce >= 7 && !poolFull(b.Error) {
			t.Fatalf("nonce %d in the batch: %v, want txpool is full", nonce, b.Error)
		}
	}
	if got := node.reached(); len(got) != 4 || got[0] != 3 || got[3] != 6 {
		t.Fatalf("the node got nonces %v, want 3..6", got)
	}
	if st := p.Stats(); st.PoolFull != 4 || st.Calls["eth_sendRawTransaction"] != 8 {
		t.Fatalf("stats %+v", st)
	}
}

// A node whose nonce cannot be read: the proxy lets the send through (the
// node decides), and refuses nothing it cannot count.
func TestBusyMempoolPassesWhatItCannotCount(t *testing.T) {
	_, eth, up := ethUpstream(t) // no eth_blockNumber, no eth_getTransactionCount
	p := Start(t, up.URL)
	c := dial(t, p.URL())
	p.BusyMempool(1)
	key, _ := crypto.GenerateKey()
	var h common.Hash
	for n := uint64(0); n < 3; n++ {
		if err := c.CallContext(ctx(t), &h, "eth_sendRawTransaction", signed(t, key, n, false)); err != nil {
			t.Fatalf("nonce %d: %v", n, err)
		}
	}
	if err := c.CallContext(ctx(t), &h, "eth_sendRawTransaction", hexutil.Bytes{0x01, 0x02}); err != nil {
		t.Fatalf("undecodable send: %v", err)
	}
	if eth.sends.Load() != 4 || p.Stats().PoolFull != 0 {
		t.Fatalf("%d sends reached the node, %d refused; want 4 and 0", eth.sends.Load(), p.Stats().PoolFull)
	}
}
