package main

import (
	"context"
	"crypto/rand"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/txengine/txengine/cmd/txload/internal/check"
	"github.com/txengine/txengine/internal/gethtest"
)

// TestChainReaderGeth sends three transfers on geth --dev and reads them
// back over http and ws with a few hundred unknown hashes: the known ones
// come with their sender, nonce, status and block, the unknown ones as not
// found, in batches of at most chainBatch requests.
func TestChainReaderGeth(t *testing.T) {
	node := gethtest.Start(t, gethtest.Period(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ec, err := ethclient.DialContext(ctx, node.HTTPURL)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	from := crypto.PubkeyToAddress(node.FaucetKey.PublicKey)
	signer := types.LatestSignerForChainID(big.NewInt(gethtest.ChainID))
	tip, err := ec.SuggestGasTipCap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var hashes []string
	var receipts []*types.Receipt
	for nonce := range uint64(3) {
		to := common.Address{byte(nonce + 1)}
		tx := types.MustSignNewTx(node.FaucetKey, signer, &types.DynamicFeeTx{ChainID: big.NewInt(gethtest.ChainID),
			Nonce: nonce, GasTipCap: tip, GasFeeCap: big.NewInt(100e9), Gas: 21000, To: &to, Value: big.NewInt(1)})
		if err := ec.SendTransaction(ctx, tx); err != nil {
			t.Fatalf("send nonce %d: %v", nonce, err)
		}
		for {
			rc, err := ec.TransactionReceipt(ctx, tx.Hash())
			if err == nil {
				receipts = append(receipts, rc)
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("receipt of nonce %d: %v", nonce, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		hashes = append(hashes, tx.Hash().Hex())
	}
	unknown := make([]string, 300)
	for i := range unknown {
		var h common.Hash
		_, _ = rand.Read(h[:])
		unknown[i] = h.Hex()
	}
	for _, url := range []string{node.HTTPURL, node.WSURL} {
		t.Run(url[:2], func(t *testing.T) {
			c, err := dialChain(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.chainID.Uint64() != gethtest.ChainID {
				t.Errorf("chain id %v", c.chainID)
			}
			read := 0
			got, err := c.read(ctx, append(append([]string{}, hashes...), unknown...), func(n int) { read += n })
			if err != nil {
				t.Fatal(err)
			}
			if want := (2*(len(hashes)+len(unknown)) + chainBatch - 1) / chainBatch; c.roundTrips != want || read != len(hashes)+len(unknown) {
				t.Errorf("%d round trips, %d read; want %d, %d", c.roundTrips, read, want, len(hashes)+len(unknown))
			}
			for i, h := range hashes {
				want := check.OnChain{Tx: true, Sender: from.Hex(), Nonce: uint64(i), Receipt: true, Status: 1,
					BlockNumber: receipts[i].BlockNumber.Uint64(), BlockHash: receipts[i].BlockHash.Hex()}
				if got[h] != want {
					t.Errorf("%s: %+v, want %+v", h, got[h], want)
				}
			}
			for _, h := range unknown {
				if o, ok := got[h]; !ok || o != (check.OnChain{}) {
					t.Fatalf("unknown %s: %+v (%v)", h, o, ok)
				}
			}
		})
	}
}
