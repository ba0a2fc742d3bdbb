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

// Alice's pool buildP1 on dev; buildP2 is hers on another network.
var (
	buildP1      = "44444444-4444-4444-4444-444444444444"
	buildP2      = "55555555-5555-5555-5555-555555555555"
	buildMember  = PoolMember{AccountID: "m1", Address: common.HexToAddress("0xe1"), Slot: 3}
	buildWaiting = "wait" // an orderingKey the lookup assigns with Wait
)

func (buildLookup) OwnPool(_ context.Context, owner, id, field string) (*Pool, error) {
	if owner == "alice" && id == buildP1 {
		return &Pool{ID: buildP1, Owner: "alice", Network: "dev", Size: 4}, nil
	}
	if owner == "alice" && id == buildP2 {
		return &Pool{ID: buildP2, Owner: "alice", Network: "main", Size: 1}, nil
	}
	return nil, Errorf(CodeNotFound, field, "pool %s not found", id)
}

func (buildLookup) AssignPoolMember(_ context.Context, p *Pool, need PoolNeed) (PoolAssignment, error) {
	if need.OrderingKey != buildWaiting {
		return PoolAssignment{Member: buildMember}, nil
	}
	// What the member lacks: the value and 1,000 wei of gas.
	return PoolAssignment{Member: buildMember, Wait: true, WaitAsset: AssetETH, WaitValue: new(big.Int).Add(need.Value, big.NewInt(1000))}, nil
}

// TestBuilderPool: a send through a pool is sent from the member the
// engine assigns, carries the pool, the key and what it needs of the
// member (the token and amount of a transfer, else ETH and the value),
// and waits for that need when the member cannot cover it; bad pool
// options are refused on their field.
func TestBuilderPool(t *testing.T) {
	parsed, err := abi.JSON(strings.NewReader(buildABI))
	if err != nil {
		t.Fatal(err)
	}
	b := Builder{Lookup: buildLookup{}, Clock: fixedClock{time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)}, MaxCallbacks: 2}
	target := SendTarget{Network: "dev", Address: common.HexToAddress("0xc0"), ABI: &parsed}
	args := []json.RawMessage{json.RawMessage(`"0x00000000000000000000000000000000000000b0"`), json.RawMessage(`"5"`)}
	str := func(s string) *string { return &s }
	token := common.HexToAddress("0xc0").Hex()

	tx, err := b.Build(context.Background(), SendRequest{Owner: "alice", Target: target, Method: "transfer", Args: args,
		Asset: token, AssetValue: big.NewInt(5), Options: SendOptions{Pool: str(buildP1), OrderingKey: str("customer-7")}})
	if err != nil {
		t.Fatal(err)
	}
	if tx.AccountID != "m1" || tx.From != buildMember.Address || tx.PoolID != buildP1 || tx.OrderingKey != "customer-7" ||
		tx.PoolAsset != token || tx.PoolValue.Int64() != 5 {
		t.Fatalf("transfer through a pool: %+v", tx)
	}
	// A token transfer through a pool always waits for its member's tokens
	// (the sender releases it when they cover it, less what is in flight).
	if tx.WaitForAsset != token || tx.WaitForValue.Int64() != 5 {
		t.Fatalf("transfer through a pool waits for %s %v, want the token's 5", tx.WaitForAsset, tx.WaitForValue)
	}

	tx, err = b.Build(context.Background(), SendRequest{Owner: "alice", Target: target, Method: "deposit", Value: big.NewInt(9),
		Options: SendOptions{Pool: str(buildP1), OrderingKey: str(buildWaiting)}})
	if err != nil {
		t.Fatal(err)
	}
	if tx.PoolAsset != AssetETH || tx.PoolValue.Int64() != 9 || tx.WaitForAsset != AssetETH || tx.WaitForValue.Int64() != 1009 {
		t.Fatalf("send through a pool that waits: %+v", tx)
	}
	// The request's own waitForAsset stays.
	tx, err = b.Build(context.Background(), SendRequest{Owner: "alice", Target: target, Method: "deposit", Value: big.NewInt(9),
		Options: SendOptions{Pool: str(buildP1), OrderingKey: str(buildWaiting), WaitForAsset: str("ETH"), WaitForValue: str("100")}})
	if err != nil {
		t.Fatal(err)
	}
	if tx.WaitForValue.Int64() != 100 {
		t.Fatalf("own waitForValue replaced: %+v", tx)
	}

	for _, c := range []struct {
		name        string
		opts        SendOptions
		code        Code
		field, text string
	}{
		{"pool with from", SendOptions{Pool: str(buildP1), From: str("a1")}, CodeInvalidArgument, "pool", "pool and from"},
		{"not an id", SendOptions{Pool: str("p1")}, CodeInvalidArgument, "pool", ""},
		{"another's pool", SendOptions{Pool: str("66666666-6666-6666-6666-666666666666")}, CodeNotFound, "pool", ""},
		{"another network", SendOptions{Pool: str(buildP2)}, CodeInvalidArgument, "pool", "network main"},
		{"key without pool", SendOptions{OrderingKey: str("k")}, CodeInvalidArgument, "orderingKey", "pool"},
		{"empty key", SendOptions{Pool: str(buildP1), OrderingKey: str("")}, CodeInvalidArgument, "orderingKey", ""},
		{"long key", SendOptions{Pool: str(buildP1), OrderingKey: str(strings.Repeat("k", MaxOrderingKeyLen+1))}, CodeInvalidArgument, "orderingKey", ""},
		{"top-up key", SendOptions{Pool: str(buildP1), OrderingKey: str(TopUpKeyPrefix + "x")}, CodeInvalidArgument, "orderingKey", "reserved"},
	} {
		_, err := b.Build(context.Background(), SendRequest{Owner: "alice", Target: target, Method: "deposit", Options: c.opts})
		e, ok := err.(*Error)
		if !ok || e.Code != c.code || e.Field != c.field || !strings.Contains(e.Message, c.text) {
			t.Errorf("%s: %v, want %s on %s (%q)", c.name, err, c.code, c.field, c.text)
		}
	}
	if _, err := b.Build(context.Background(), SendRequest{Owner: "alice", Target: target, Method: "deposit",
		Options: SendOptions{Pool: str(buildP1), OrderingKey: str(strings.Repeat("é", MaxOrderingKeyLen))}}); err != nil {
		t.Errorf("a key of %d characters: %v", MaxOrderingKeyLen, err)
	}
}
