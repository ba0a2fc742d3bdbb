package engine

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
)

// erc20StubChain answers eth_call for one token; other Chain methods are
// not used (the embedded nil interface would panic).
type erc20StubChain struct {
	Node
	token    common.Address
	answers  map[string][]byte // method name -> raw answer
	balances map[common.Address]*big.Int
	err      error
}

func (c *erc20StubChain) CallContract(_ context.Context, msg ethereum.CallMsg, _ *big.Int) ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	if *msg.To != c.token {
		return nil, nil
	}
	m, err := erc20Reader.MethodById(msg.Data[:4])
	if err != nil {
		return nil, errors.New("execution reverted")
	}
	if m.Name == "balanceOf" {
		args, err := m.Inputs.Unpack(msg.Data[4:])
		if err != nil {
			return nil, err
		}
		bal := c.balances[args[0].(common.Address)]
		if bal == nil {
			bal = new(big.Int)
		}
		return m.Outputs.Pack(bal)
	}
	return c.answers[m.Name], nil
}

func newERC20Stub(t *testing.T) *erc20StubChain {
	t.Helper()
	pack := func(method string, v any) []byte {
		b, err := erc20Reader.Methods[method].Outputs.Pack(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return &erc20StubChain{
		token: common.HexToAddress("0x00000000000000000000000000000000000000aa"),
		answers: map[string][]byte{
			"name":        pack("name", "Demo Token"),
			"symbol":      pack("symbol", "DEMO"),
			"decimals":    pack("decimals", uint8(6)),
			"totalSupply": pack("totalSupply", big.NewInt(1_000_000)),
		},
		balances: map[common.Address]*big.Int{common.HexToAddress("0x01"): big.NewInt(77)},
	}
}

func TestReadTokenInfo(t *testing.T) {
	ctx := context.Background()
	chain := newERC20Stub(t)
	info, err := ReadTokenInfo(ctx, chain, chain.token)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "Demo Token" || info.Symbol != "DEMO" || info.Decimals != 6 || info.TotalSupply.Int64() != 1_000_000 {
		t.Errorf("info = %+v", info)
	}

	// bytes32 symbols (as some early tokens have) are accepted.
	var b32 [32]byte
	copy(b32[:], "MKR")
	chain.answers["symbol"] = b32[:]
	if info, err = ReadTokenInfo(ctx, chain, chain.token); err != nil || info.Symbol != "MKR" {
		t.Errorf("bytes32 symbol: %+v, %v", info, err)
	}

	// No contract at the address.
	if _, err := ReadTokenInfo(ctx, chain, common.HexToAddress("0x02")); !IsNotToken(err) {
		t.Errorf("no code: err = %v, want ErrNotToken", err)
	}
	// A garbage answer.
	chain.answers["decimals"] = []byte{1, 2, 3}
	if _, err := ReadTokenInfo(ctx, chain, chain.token); !IsNotToken(err) {
		t.Errorf("garbage: err = %v, want ErrNotToken", err)
	}
	// A node error is returned wrapped, not as ErrNotToken.
	chain.err = errors.New("connection refused")
	_, err = ReadTokenInfo(ctx, chain, chain.token)
	if err == nil || IsNotToken(err) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("node error: %v", err)
	}
}

func TestBalanceOf(t *testing.T) {
	ctx := context.Background()
	chain := newERC20Stub(t)
	if bal, err := BalanceOf(ctx, chain, chain.token, common.HexToAddress("0x01")); err != nil || bal.Int64() != 77 {
		t.Errorf("balance = %v, %v", bal, err)
	}
	if bal, err := BalanceOf(ctx, chain, chain.token, common.HexToAddress("0x03")); err != nil || bal.Sign() != 0 {
		t.Errorf("zero balance = %v, %v", bal, err)
	}
	if supply, err := TotalSupply(ctx, chain, chain.token); err != nil || supply.Int64() != 1_000_000 {
		t.Errorf("supply = %v, %v", supply, err)
	}
}
