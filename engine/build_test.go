package engine

import (
	"context"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
)

// buildLookup is an in-memory SendLookup: alice owns account a1 (her
// default), transaction t1 and token k1; bob owns t2.
type buildLookup struct{}

var (
	buildAlice = &Account{ID: "a1", Owner: "alice", Address: common.HexToAddress("0xa1")}
	buildT1    = "11111111-1111-1111-1111-111111111111"
	buildT2    = "22222222-2222-2222-2222-222222222222"
	buildK1    = "33333333-3333-3333-3333-333333333333"
)

func (buildLookup) Sender(_ context.Context, owner string, from *string) (*Account, error) {
	if owner == "alice" && (from == nil || *from == "a1") {
		return buildAlice, nil
	}
	return nil, Errorf(CodeNotFound, "from", "no such account")
}

func (buildLookup) OwnContract(_ context.Context, owner, id, field string) (*Contract, error) {
	if owner == "alice" && id == buildK1 {
		return &Contract{ID: buildK1, Owner: "alice", Network: "dev", Address: common.HexToAddress("0x0b1"), BWType: TypeERC20}, nil
	}
	return nil, Errorf(CodeNotFound, field, "contract %s not found", id)
}

func (buildLookup) TransactionByID(_ context.Context, id string) (*Transaction, error) {
	switch id {
	case buildT1:
		return &Transaction{ID: id, Owner: "alice", AccountID: "a1"}, nil
	case buildT2:
		return &Transaction{ID: id, Owner: "bob", AccountID: "b1"}, nil
	}
	return nil, ErrNotFound
}

func (buildLookup) AccountByID(_ context.Context, id string) (*Account, error) {
	if id == "a1" {
		return buildAlice, nil
	}
	return &Account{ID: id, Owner: "bob"}, nil
}

const buildABI = `[{"type":"function","name":"transfer","stateMutability":"nonpayable","inputs":[{"name":"to","type":"address"},{"name":"value","type":"uint256"}],"outputs":[{"type":"bool"}]},
{"type":"function","name":"deposit","stateMutability":"payable","inputs":[],"outputs":[]}]`

// TestBuilder: Build turns a request into a transaction, and refuses each
// bad input with the code and field of the API's error, storing nothing
// (the lookup is read-only).
func TestBuilder(t *testing.T) {
	parsed, err := abi.JSON(strings.NewReader(buildABI))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	b := Builder{Lookup: buildLookup{}, Clock: fixedClock{now}, MaxCallbacks: 2}
	target := SendTarget{Network: "dev", Address: common.HexToAddress("0xc0"), ABI: &parsed, Contract: &Contract{ID: "c0", Name: "Token"}}
	args := []json.RawMessage{json.RawMessage(`"0x00000000000000000000000000000000000000b0"`), json.RawMessage(`"5"`)}
	str := func(s string) *string { return &s }
	secs := func(n int64) *int64 { return &n }

	tx, err := b.Build(context.Background(), SendRequest{Owner: "alice", Target: target, Method: "transfer", Args: args,
		Options: SendOptions{Callbacks: []string{"https://example.com/cb"}, DependsOn: []string{buildT1, buildT1},
			WaitForAsset: str(buildK1), WaitForValue: str("7"), WaitTimeout: secs(60)}})
	if err != nil {
		t.Fatal(err)
	}
	if tx.Owner != "alice" || tx.AccountID != "a1" || tx.From != buildAlice.Address || tx.Network != "dev" || tx.Method != "transfer" ||
		tx.Status != StatusNew || tx.ContractID != "c0" || tx.ContractName != "Token" || tx.Value.Sign() != 0 ||
		len(tx.DependsOn) != 1 || tx.WaitForAsset != common.HexToAddress("0x0b1").Hex() || tx.WaitForValue.Int64() != 7 ||
		!tx.WaitUntil.Equal(now.Add(time.Minute)) || len(tx.Data) != 4+64 || len(tx.Parameters) != 2 {
		t.Fatalf("built %+v", tx)
	}

	long := strings.Repeat("m", MaxMethodLen+1)
	for _, c := range []struct {
		name        string
		r           SendRequest
		code        Code
		field, text string
	}{
		{"long method", SendRequest{Method: long}, CodeInvalidArgument, "method", "longer"},
		{"unknown method", SendRequest{Method: "nope"}, CodeNotFound, "method", "nope"},
		{"bad argument", SendRequest{Method: "transfer", Args: args[:1]}, CodeInvalidArgument, "arg", ""},
		{"value to a non-payable method", SendRequest{Method: "transfer", Args: args, Value: big.NewInt(1)}, CodeInvalidArgument, "value", "not payable"},
		{"too many callbacks", SendRequest{Method: "deposit", Options: SendOptions{Callbacks: []string{"https://a.example", "https://b.example", "https://c.example"}}}, CodeInvalidArgument, "callbacks", "at most 2"},
		{"private callback", SendRequest{Method: "deposit", Options: SendOptions{Callbacks: []string{"http://100.64.0.1/"}}}, CodeInvalidArgument, "callbacks", "refused"},
		{"value without asset", SendRequest{Method: "deposit", Options: SendOptions{WaitForValue: str("1")}}, CodeInvalidArgument, "waitForAsset", "required"},
		{"another's token", SendRequest{Owner: "bob", Method: "deposit", Options: SendOptions{WaitForAsset: str(buildK1), WaitForValue: str("1")}}, CodeNotFound, "waitForAsset", ""},
		{"another's dependency", SendRequest{Method: "deposit", Options: SendOptions{DependsOn: []string{buildT2}}}, CodeNotFound, "dependsOn", ""},
		{"not an id", SendRequest{Method: "deposit", Options: SendOptions{DependsOn: []string{"x"}}}, CodeInvalidArgument, "dependsOn", ""},
		{"zero timeout", SendRequest{Method: "deposit", Options: SendOptions{WaitTimeout: secs(0)}}, CodeInvalidArgument, "waitTimeout", ""},
		{"another's sender", SendRequest{Method: "deposit", Options: SendOptions{From: str("b1")}}, CodeNotFound, "from", ""},
	} {
		r := c.r
		if r.Owner == "" {
			r.Owner = "alice"
		}
		r.Target = target
		_, err := b.Build(context.Background(), r)
		e, ok := err.(*Error)
		if !ok || e.Code != c.code || e.Field != c.field || !strings.Contains(e.Message, c.text) {
			t.Errorf("%s: %v, want %s on %s (%q)", c.name, err, c.code, c.field, c.text)
		}
	}
}
