package engine

import (
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// TestFaucetNonceAheadOfLaggingPool: a node whose pending nonce has not
// caught up with the faucet's last send (geth updates it asynchronously)
// must not make the faucet reuse that nonce for the next account.
func TestFaucetNonceAheadOfLaggingPool(t *testing.T) {
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	chain := &fakeChain{nonce: 7} // the pool keeps answering 7
	net := &Network{Name: "dev", ChainID: big.NewInt(1337), Chain: chain}
	f := NewFaucet(net, key, big.NewInt(1e18))
	for _, to := range []common.Address{{1}, {2}, {3}} {
		if _, err := f.Fund(context.Background(), []common.Address{to}); err != nil {
			t.Fatalf("fund %s: %v", to.Hex(), err)
		}
	}
	if _, err := f.Fund(context.Background(), []common.Address{{4}, {5}}); err != nil {
		t.Fatal(err)
	}
	if len(chain.sent) != 5 {
		t.Fatalf("%d sends, want 5", len(chain.sent))
	}
	for i, tx := range chain.sent {
		if tx.Nonce() != 7+uint64(i) {
			t.Fatalf("send %d has nonce %d, want %d", i, tx.Nonce(), 7+i)
		}
	}
	// A node ahead of the faucet (transactions sent by others with its
	// key) wins.
	chain.nonce = 20
	if _, err := f.Fund(context.Background(), []common.Address{{6}}); err != nil {
		t.Fatal(err)
	}
	if got := chain.sent[5].Nonce(); got != 20 {
		t.Fatalf("nonce %d after the node moved ahead, want 20", got)
	}
}
