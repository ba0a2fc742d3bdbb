package contracts_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/contracts"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm"
	"github.com/txengine/txengine/engine/evm/evmtest"
)

// TestDisperse runs the disperser on the simulated chain: ETH and a token
// reach every recipient in one transaction; a wrong msg.value, a
// mismatched length or a missing allowance reverts and moves nothing.
func TestDisperse(t *testing.T) {
	ctx := context.Background()
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	from := crypto.PubkeyToAddress(key.PublicKey)
	sim := evmtest.Start(t, 10*time.Millisecond, from)
	client, err := evm.Dial(ctx, sim.IPC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	art := contracts.Disperse()
	d, _, err := evm.Deploy(ctx, client, key, art.Bin)
	if err != nil {
		t.Fatal(err)
	}
	tokenArt := contracts.ERC20()
	data, _ := tokenArt.DeployData("T", "T", big.NewInt(1_000_000), from)
	token, _, err := evm.Deploy(ctx, client, key, data)
	if err != nil {
		t.Fatal(err)
	}
	dABI, _ := art.ParsedABI()
	tABI, _ := tokenArt.ParsedABI()
	rs := []common.Address{common.HexToAddress("0x01"), common.HexToAddress("0x02"), common.HexToAddress("0x03")}
	vs := []*big.Int{big.NewInt(10), big.NewInt(20), big.NewInt(30)}
	call := func(to common.Address, value *big.Int, a interface {
		Pack(string, ...any) ([]byte, error)
	}, method string, args ...any) error {
		data, err := a.Pack(method, args...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = evm.Transact(ctx, client, key, &to, value, data)
		return err
	}
	if err := call(d, big.NewInt(59), &dABI, "disperseEther", rs, vs); err == nil {
		t.Fatal("disperseEther with 59 wei for 60 went through")
	}
	if err := call(d, big.NewInt(30), &dABI, "disperseEther", rs[:2], vs); err == nil {
		t.Fatal("disperseEther with 2 recipients and 3 values went through")
	}
	if err := call(d, big.NewInt(60), &dABI, "disperseEther", rs, vs); err != nil {
		t.Fatal(err)
	}
	if err := call(d, nil, &dABI, "disperseToken", token, rs, vs); err == nil {
		t.Fatal("disperseToken without an allowance went through")
	}
	maxU := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	if err := call(token, nil, &tABI, "approve", d, maxU); err != nil {
		t.Fatal(err)
	}
	if err := call(d, nil, &dABI, "disperseToken", token, rs, vs); err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		eth, err := client.BalanceAt(ctx, r, nil)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := engine.BalanceOf(ctx, client, token, r)
		if err != nil {
			t.Fatal(err)
		}
		if eth.Cmp(vs[i]) != 0 || tok.Cmp(vs[i]) != 0 {
			t.Fatalf("recipient %d holds %s wei and %s tokens, want %s of each (once)", i, eth, tok, vs[i])
		}
	}
}
