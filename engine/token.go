package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
)

// erc20ReadABI is the read-only part of ERC-20 that the service calls on any
// token, registered or not.
const erc20ReadABI = `[
 {"type":"function","name":"name","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"string"}]},
 {"type":"function","name":"symbol","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"string"}]},
 {"type":"function","name":"decimals","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint8"}]},
 {"type":"function","name":"totalSupply","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint256"}]},
 {"type":"function","name":"balanceOf","stateMutability":"view","inputs":[{"name":"account","type":"address"}],"outputs":[{"name":"","type":"uint256"}]}
]`

// erc20Reader is the parsed erc20ReadABI. It is built once and only read.
var erc20Reader = mustParseABI(erc20ReadABI)

func mustParseABI(s string) abi.ABI {
	a, err := abi.JSON(strings.NewReader(s))
	if err != nil {
		panic(fmt.Sprintf("engine: built-in ABI: %v", err))
	}
	return a
}

// ErrNotToken is returned (wrapped) by the token readers when the contract
// answers a call with no data or data that does not decode as ERC-20: there
// is no contract at the address, or it is not an ERC-20 token.
var ErrNotToken = &Error{Code: CodeInvalidArgument, Message: "not an ERC-20 token"}

// TokenInfo is what ERC-20 says about itself on the chain.
type TokenInfo struct {
	Name        string
	Symbol      string
	Decimals    uint8
	TotalSupply *big.Int
}

// ReadTokenInfo reads name, symbol, decimals and totalSupply of the ERC-20
// token at addr with eth_call at the latest block. Errors of the node are
// returned wrapped as they are; answers that do not decode wrap ErrNotToken.
// A name or symbol returned as bytes32 (as some early tokens do) is accepted.
func ReadTokenInfo(ctx context.Context, chain ethereum.ContractCaller, addr common.Address) (TokenInfo, error) {
	var info TokenInfo
	var err error
	if info.Name, err = callString(ctx, chain, addr, "name"); err != nil {
		return TokenInfo{}, err
	}
	if info.Symbol, err = callString(ctx, chain, addr, "symbol"); err != nil {
		return TokenInfo{}, err
	}
	out, err := callERC20(ctx, chain, addr, "decimals")
	if err != nil {
		return TokenInfo{}, err
	}
	dec, ok := out[0].(uint8)
	if !ok {
		return TokenInfo{}, fmt.Errorf("token %s: decimals: %w", addr.Hex(), ErrNotToken)
	}
	info.Decimals = dec
	if info.TotalSupply, err = callUint256(ctx, chain, addr, "totalSupply"); err != nil {
		return TokenInfo{}, err
	}
	return info, nil
}

// BalanceOf returns balanceOf(holder) of the ERC-20 token at token, at the
// latest block. Errors are as for ReadTokenInfo.
func BalanceOf(ctx context.Context, chain ethereum.ContractCaller, token, holder common.Address) (*big.Int, error) {
	return callUint256(ctx, chain, token, "balanceOf", holder)
}

// TotalSupply returns totalSupply() of the ERC-20 token at token.
func TotalSupply(ctx context.Context, chain ethereum.ContractCaller, token common.Address) (*big.Int, error) {
	return callUint256(ctx, chain, token, "totalSupply")
}

func callUint256(ctx context.Context, chain ethereum.ContractCaller, token common.Address, method string, args ...any) (*big.Int, error) {
	out, err := callERC20(ctx, chain, token, method, args...)
	if err != nil {
		return nil, err
	}
	v, ok := out[0].(*big.Int)
	if !ok {
		return nil, fmt.Errorf("token %s: %s: %w", token.Hex(), method, ErrNotToken)
	}
	return v, nil
}

// callString calls a string getter, falling back to bytes32 (right-padded
// with zeros) for tokens that declare name and symbol that way.
func callString(ctx context.Context, chain ethereum.ContractCaller, token common.Address, method string) (string, error) {
	raw, err := callRaw(ctx, chain, token, method)
	if err != nil {
		return "", err
	}
	return decodeString(token, method, raw)
}

// decodeString decodes the answer raw of the string getter method of
// token, accepting bytes32 (right-padded with zeros) too.
func decodeString(token common.Address, method string, raw []byte) (string, error) {
	out, err := erc20Reader.Unpack(method, raw)
	if err == nil && len(out) == 1 {
		if s, ok := out[0].(string); ok {
			return s, nil
		}
	}
	if len(raw) == 32 {
		return string(bytes.TrimRight(raw, "\x00")), nil
	}
	return "", fmt.Errorf("token %s: %s: %w", token.Hex(), method, ErrNotToken)
}

func callERC20(ctx context.Context, chain ethereum.ContractCaller, token common.Address, method string, args ...any) ([]any, error) {
	raw, err := callRaw(ctx, chain, token, method, args...)
	if err != nil {
		return nil, err
	}
	out, err := erc20Reader.Unpack(method, raw)
	if err != nil || len(out) != 1 {
		return nil, fmt.Errorf("token %s: %s: %w", token.Hex(), method, ErrNotToken)
	}
	return out, nil
}

func callRaw(ctx context.Context, chain ethereum.ContractCaller, token common.Address, method string, args ...any) ([]byte, error) {
	data, err := erc20Reader.Pack(method, args...)
	if err != nil {
		return nil, fmt.Errorf("token %s: pack %s: %w", token.Hex(), method, err)
	}
	raw, err := chain.CallContract(ctx, ethereum.CallMsg{To: &token, Data: data}, nil)
	if err != nil {
		return nil, fmt.Errorf("token %s: %s: %w", token.Hex(), method, err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("token %s: %s: empty answer: %w", token.Hex(), method, ErrNotToken)
	}
	return raw, nil
}

// IsNotToken reports whether err says that a contract is not an ERC-20 token.
func IsNotToken(err error) bool { return errors.Is(err, ErrNotToken) }
