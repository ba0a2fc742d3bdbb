package gethtest

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
)

func TestStartStopRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs geth")
	}
	n := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := ethclient.DialContext(ctx, n.HTTPURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id, err := c.ChainID(ctx)
	if err != nil || id.Int64() != ChainID {
		t.Fatalf("chain id = %v, %v", id, err)
	}
	faucet := crypto.PubkeyToAddress(n.FaucetKey.PublicKey)
	bal, err := c.BalanceAt(ctx, faucet, nil)
	if err != nil || bal.Cmp(FaucetBalance) != 0 {
		t.Fatalf("faucet balance = %v, %v; want %s", bal, err, FaucetBalance)
	}
	head, err := c.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}

	n.Stop()
	if _, err := c.BlockNumber(ctx); err == nil {
		t.Fatal("a stopped node still answers")
	}
	n.Restart()
	after, err := c.BlockNumber(ctx)
	if err != nil || after < head {
		t.Fatalf("after restart head = %d, %v; was %d", after, err, head)
	}
	if bal, err := c.BalanceAt(ctx, faucet, nil); err != nil || bal.Cmp(FaucetBalance) != 0 {
		t.Fatalf("faucet balance after restart = %v, %v", bal, err)
	}
	// The ws endpoint answers too.
	ws, err := ethclient.DialContext(ctx, n.WSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, err := ws.BlockNumber(ctx); err != nil {
		t.Fatalf("ws: %v", err)
	}
}

// TxPool's flags exist in the geth we run, and a dev node's pool, never
// full, takes a sender's 17th pending transaction whatever its account
// slots (which is why rpcproxy.BusyMempool refuses it).
func TestTxPoolLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs geth")
	}
	n := Start(t, Period(3), TxPool(PoolLimits{AccountSlots: 16}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := ethclient.DialContext(ctx, n.HTTPURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	from := crypto.PubkeyToAddress(n.FaucetKey.PublicKey)
	nonce, err := c.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	signer := types.LatestSignerForChainID(big.NewInt(ChainID))
	for i := range uint64(20) {
		tx := types.MustSignNewTx(n.FaucetKey, signer, &types.DynamicFeeTx{ChainID: big.NewInt(ChainID), Nonce: nonce + i,
			GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(1e11), Gas: 21000, To: &from, Value: big.NewInt(1)})
		if err := c.SendTransaction(ctx, tx); err != nil {
			t.Fatalf("transaction %d of one sender: %v", i+1, err)
		}
	}
	if !strings.Contains(strings.Join(n.args, " "), "--txpool.accountslots 16 --txpool.globalslots 5120 --txpool.accountqueue 64 --txpool.globalqueue 1024") {
		t.Fatalf("geth's command line: %v", n.args)
	}
}
