package gethtest

import (
	"context"
	"testing"
	"time"

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
