package actors_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"

	"github.com/txengine/txengine/contracts"
	"github.com/txengine/txengine/engine"
)

// TestContractCreationIsSent: a transaction with engine.MethodCreate is
// estimated, signed and sent with no recipient, and the contract it creates
// is at crypto.CreateAddress(sender, nonce).
func TestContractCreationIsSent(t *testing.T) {
	f := newFixture(t, 8, time.Minute)
	ctx := context.Background()
	tx := &engine.Transaction{
		ID: uuid.NewString(), Owner: f.user.ID, AccountID: f.account.ID, Network: "dev", From: f.account.Address,
		Method: engine.MethodCreate, Data: contracts.Disperse().Bin, Status: engine.StatusNew, Created: engine.SystemClock{}.Now(),
	}
	if _, err := f.sys.Submit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	got := f.waitAll([]string{tx.ID}, 30*time.Second)[0]
	if got.Status != engine.StatusCompleted || got.Nonce == nil {
		t.Fatalf("creation %s (%+v), want completed", got.Status, got.Error)
	}
	addr := crypto.CreateAddress(f.account.Address, *got.Nonce)
	// The disperser is there: it refuses a call whose value is not the sum
	// (an address without code would accept any call).
	dABI, err := contracts.Disperse().ParsedABI()
	if err != nil {
		t.Fatal(err)
	}
	data, err := dABI.Pack("disperseEther", []common.Address{f.account.Address}, []*big.Int{big.NewInt(1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.net.Chain.CallContract(ctx, ethereum.CallMsg{From: f.account.Address, To: &addr, Data: data}, nil); err == nil {
		t.Fatalf("no contract at %s = CreateAddress(sender, %d)", addr.Hex(), *got.Nonce)
	}
	if _, err := f.net.Chain.CallContract(ctx, ethereum.CallMsg{From: f.account.Address, To: &addr, Data: data, Value: big.NewInt(1)}, nil); err != nil {
		t.Fatalf("the disperser at %s refuses a right call: %v", addr.Hex(), err)
	}
}
