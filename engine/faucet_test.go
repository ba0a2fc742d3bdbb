package engine

import (
	"context"
	"errors"
	"math/big"
	"testing"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
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

// TestFaucetBatchesAndBoundsInFlight: one call funds many addresses with
// one estimate, asks again for those beyond its room for unconfirmed
// transfers, and picks a refusal for capacity up at the refused nonce
// without paying anyone twice.
func TestFaucetBatchesAndBoundsInFlight(t *testing.T) {
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	estimates := 0
	chain := &fakeChain{nonce: 3, estimate: func(ethereum.CallMsg) (uint64, error) { estimates++; return 21_000, nil }}
	net := &Network{Name: "dev", ChainID: big.NewInt(1337), Chain: chain}
	f := NewFaucet(net, key, big.NewInt(1e18))
	addrs := make([]common.Address, FaucetMaxInFlight+10)
	for i := range addrs {
		addrs[i] = common.BigToAddress(big.NewInt(int64(1000 + i)))
	}
	hashes, later, err := f.FundSome(context.Background(), addrs)
	if err != nil {
		t.Fatal(err)
	}
	if len(hashes) != FaucetMaxInFlight || len(later) != 10 || later[0] != addrs[FaucetMaxInFlight] {
		t.Fatalf("sent %d, later %d: want %d and 10 (the room for unconfirmed transfers)", len(hashes), len(later), FaucetMaxInFlight)
	}
	if estimates != 1 {
		t.Fatalf("%d estimates for one batch of value transfers, want 1", estimates)
	}
	// Nothing mined yet: no room, nobody paid twice.
	if h, l, err := f.FundSome(context.Background(), append(addrs[:5:5], later...)); err != nil || len(h) != 0 || len(l) != 10 {
		t.Fatalf("no room: sent %d, later %d, err %v; want 0, 10 (the 5 paid already are not asked again)", len(h), len(l), err)
	}
	// The block includes them; the pool refuses the third of the rest.
	chain.nonce = 3 + FaucetMaxInFlight
	refuse := chain.nonce + 2
	refused := map[*types.Transaction]bool{}
	chain.send = func(tx *types.Transaction) error {
		if tx.Nonce() == refuse {
			refused[tx] = true
			return errors.New("txpool is full")
		}
		return nil
	}
	h, l, err := f.FundSome(context.Background(), later)
	if err != nil {
		t.Fatalf("a refusal for capacity is not an error: %v", err)
	}
	if len(h) != 2 || len(l) != 8 || l[0] != later[2] {
		t.Fatalf("sent %d, later %d: want 2 sent and the refused one with those after it asked again", len(h), len(l))
	}
	chain.send = nil
	chain.nonce += 2
	h, l, err = f.FundSome(context.Background(), l)
	if err != nil || len(h) != 8 || len(l) != 0 {
		t.Fatalf("retry: sent %d, later %d, err %v", len(h), len(l), err)
	}
	if got := chain.sent[len(chain.sent)-8].Nonce(); got != refuse {
		t.Fatalf("the retry signs from nonce %d, want the refused %d", got, refuse)
	}
	// A nonce is mined once: an address sent to again with the nonce it
	// had (the node took the ones after the refused nonce into its queue)
	// is not paid twice; a nonce given to two addresses would be a loss.
	seen := map[common.Address]uint64{}
	byNonce := map[uint64]common.Address{}
	for _, tx := range chain.sent {
		if refused[tx] {
			continue
		}
		if n, ok := seen[*tx.To()]; ok && n != tx.Nonce() {
			t.Fatalf("%s paid twice (nonces %d and %d)", tx.To().Hex(), n, tx.Nonce())
		}
		if a, ok := byNonce[tx.Nonce()]; ok && a != *tx.To() {
			t.Fatalf("nonce %d signed for %s and %s", tx.Nonce(), a.Hex(), tx.To().Hex())
		}
		seen[*tx.To()], byNonce[tx.Nonce()] = tx.Nonce(), *tx.To()
	}
	if len(seen) != len(addrs) {
		t.Fatalf("%d addresses paid, want %d", len(seen), len(addrs))
	}
}
