package engine

import (
	"encoding/json"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
)

// erc20TransferABI is ERC-20's transfer and its event: a token top-up is
// a transfer, its Transfer event decoded like any direct send's.
const erc20TransferABI = `[
 {"type":"function","name":"transfer","stateMutability":"nonpayable","inputs":[{"name":"to","type":"address"},{"name":"value","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]},
 {"type":"event","name":"Transfer","anonymous":false,"inputs":[{"name":"from","type":"address","indexed":true},{"name":"to","type":"address","indexed":true},{"name":"value","type":"uint256","indexed":false}]}
]`

// erc20Transfer is the parsed erc20TransferABI's transfer method, built
// once and only read (as erc20Reader).
var erc20Transfer = func() abi.Method {
	a := mustParseABI(erc20TransferABI)
	return a.Methods["transfer"]
}()

// topUpTx builds the treasury's transaction of t: a plain ETH transfer, or
// the token's transfer(member, amount).
func (k *PoolKeeper) topUpTx(p *Pool, treasury *Account, t topUp) (*Transaction, error) {
	tx := &Transaction{
		ID: NewID(), Owner: p.Owner, AccountID: treasury.ID, Network: p.Network, From: treasury.Address,
		ContractAddress: t.member.Address, Value: new(big.Int).Set(t.amount), Status: StatusNew,
		Created: k.cfg.Clock.Now(), PoolID: p.ID, OrderingKey: t.key(),
	}
	if t.asset == AssetETH {
		return tx, nil // no data: a plain transfer, as a filler is
	}
	m := &erc20Transfer
	data, params, err := packJSON(m, strings.ToLower(t.member.Address.Hex()), t.amount.String())
	if err != nil {
		return nil, err
	}
	tx.ContractAddress, tx.Value = common.HexToAddress(t.asset), new(big.Int)
	tx.Method, tx.Parameters, tx.Data, tx.ContractBWType = m.RawName, params, data, TypeERC20
	tx.ABI = json.RawMessage(erc20TransferABI)
	return tx, nil
}
