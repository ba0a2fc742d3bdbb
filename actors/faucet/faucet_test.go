package faucet

import (
	"context"
	"io"
	"log/slog"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm"
	"github.com/txengine/txengine/engine/evm/evmtest"
)

// TestFaucetActorFundsABurstOfAccounts: 1,500 accounts created at once
// (one Fund each, as System.AccountCreated sends) are all funded, each
// once, although the faucet keeps at most engine.FaucetMaxInFlight
// transfers unconfirmed: the actor funds the waiting addresses in batches
// and asks again for those beyond its room once blocks include the first.
func TestFaucetActorFundsABurstOfAccounts(t *testing.T) {
	ctx := context.Background()
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	sim := evmtest.Start(t, 200*time.Millisecond, crypto.PubkeyToAddress(key.PublicKey))
	client, err := evm.Dial(ctx, sim.IPC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	net := &engine.Network{Name: "dev", ChainID: big.NewInt(1337), Chain: client}
	amount := big.NewInt(1e15)
	f := engine.NewFaucet(net, key, amount)

	sys := actor.NewActorSystem()
	pid := sys.Root.Spawn(Props(f, slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { _ = sys.Root.StopFuture(pid).Wait() })

	n := engine.FaucetMaxInFlight + 476
	addrs := make([]common.Address, n)
	for i := range addrs {
		addrs[i] = common.BigToAddress(big.NewInt(int64(0x10000 + i)))
		sys.Root.Send(pid, &Fund{Addresses: []common.Address{addrs[i]}})
	}
	// The same addresses asked again while their transfers are out.
	sys.Root.Send(pid, &Fund{Addresses: addrs[:100]})

	deadline := time.Now().Add(60 * time.Second)
	for {
		qs := make([]engine.BalanceQuery, n)
		for i, a := range addrs {
			qs[i] = engine.BalanceQuery{ETH: true, Holder: a}
		}
		bals, errs, err := engine.Balances(ctx, client, qs)
		if err != nil {
			t.Fatal(err)
		}
		funded := 0
		for i := range bals {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			switch bals[i].Cmp(amount) {
			case 0:
				funded++
			case 1:
				t.Fatalf("%s holds %s wei: paid more than once", addrs[i].Hex(), bals[i])
			}
		}
		if funded == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d accounts funded after 60 s", funded, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	mined, err := client.NonceAt(ctx, f.Address(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if mined != uint64(n) {
		t.Fatalf("the faucet sent %d transfers for %d accounts", mined, n)
	}
}

// panickyClient is the node client whose first PendingNonceAt panics.
type panickyClient struct {
	*evm.Client
	panicked atomic.Bool
}

func (c *panickyClient) PendingNonceAt(ctx context.Context, a common.Address) (uint64, error) {
	if c.panicked.CompareAndSwap(false, true) {
		panic("injected: the node client panicked")
	}
	return c.Client.PendingNonceAt(ctx, a)
}

// TestFaucetActorRestartsAfterAPanic: a panic while funding restarts the
// faucet actor (lifecycle supervision, as spawned in production), and the
// addresses it had queued are funded by the next incarnation.
func TestFaucetActorRestartsAfterAPanic(t *testing.T) {
	ctx := context.Background()
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	sim := evmtest.Start(t, 100*time.Millisecond, crypto.PubkeyToAddress(key.PublicKey))
	client, err := evm.Dial(ctx, sim.IPC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	chain := &panickyClient{Client: client}
	net := &engine.Network{Name: "dev", ChainID: big.NewInt(1337), Chain: chain}
	f := engine.NewFaucet(net, key, big.NewInt(1e15))

	sys := actor.NewActorSystem()
	pid := sys.Root.Spawn(lifecycle.Guarded(Props(f, slog.New(slog.NewTextHandler(io.Discard, nil)))))
	t.Cleanup(func() { _ = sys.Root.StopFuture(pid).Wait() })
	addrs := []common.Address{common.BigToAddress(big.NewInt(0x20001)), common.BigToAddress(big.NewInt(0x20002))}
	sys.Root.Send(pid, &Fund{Addresses: addrs})

	deadline := time.Now().Add(30 * time.Second)
	for {
		funded := 0
		for _, a := range addrs {
			if bal, err := client.BalanceAt(ctx, a, nil); err == nil && bal.Sign() > 0 {
				funded++
			}
		}
		if funded == len(addrs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d addresses funded after the panic (panicked: %v)", funded, len(addrs), chain.panicked.Load())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !chain.panicked.Load() {
		t.Fatal("the injected panic did not happen")
	}
}
