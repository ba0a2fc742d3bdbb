package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/contracts"
	"github.com/txengine/txengine/engine/abicodec"
)

// Keys of the treasury's transactions that refill members in batches
// (docs/pools.md#batches), under TopUpKeyPrefix like every top-up.
const (
	// disperserKey is the treasury's deployment of its disperser
	// (contracts.Disperse), once per network.
	disperserKey = TopUpKeyPrefix + "disperser"
	// approveKeyPrefix + token is the treasury's approve(disperser, max)
	// of the token.
	approveKeyPrefix = TopUpKeyPrefix + "approve:"
	// batchKeyPrefix + asset is a batch: one transaction of the treasury
	// that refills every member it names with the asset.
	batchKeyPrefix = TopUpKeyPrefix + "batch:"
)

// TopUpBatchKey is the OrderingKey of a pool's batch top-up of asset ("ETH"
// or a token's EIP-55 address): while one is pending, no member of the pool
// gets another top-up of the asset.
func TopUpBatchKey(asset string) string { return batchKeyPrefix + asset }

// Bounds of batches.
const (
	// DefaultPoolBatchMin is the fewest members owed one asset at a look
	// that the treasury refills with one batch, once its disperser is
	// deployed (and, for a token, approved); fewer get one transaction
	// each.
	DefaultPoolBatchMin = 4
	// maxBatchRecipients bounds a batch (about 35,000 gas a new holder:
	// 4.5 M gas); the members past it, the least busy, wait for the next.
	maxBatchRecipients = 128
	// maxDisperserDeploys is how many failed deployments make the keeper
	// give up batches for the treasury (the node refuses them): its
	// members get one top-up each.
	maxDisperserDeploys = 3
	// batchPause is how long a pool's batches of an asset stay off after
	// one failed: its members get one top-up each meanwhile.
	batchPause = 5 * time.Minute
	// batchSetupWait is how long a pool's top-ups of an asset are held
	// while the disperser's deployment or the token's approval is on its
	// way (a block or two), instead of going one per member: on a busy
	// node the treasury sends 16 a block, so 32 members' gas and tokens
	// one by one take 4 blocks, and their nonces come before the batches.
	// Past it (a deployment stuck or slow) they go one by one.
	batchSetupWait = 30 * time.Second
)

// disperseABIJSON is the disperser's ABI with ERC-20's Transfer event: a
// token batch's events (the token's transfers) decode with it.
var disperseABIJSON = func() json.RawMessage {
	var entries []json.RawMessage
	if err := json.Unmarshal(contracts.Disperse().ABI, &entries); err != nil {
		panic(fmt.Sprintf("engine: disperser ABI: %v", err))
	}
	var erc20 []json.RawMessage
	if err := json.Unmarshal([]byte(erc20TransferABI), &erc20); err != nil {
		panic(fmt.Sprintf("engine: ERC-20 ABI: %v", err))
	}
	out, _ := json.Marshal(append(entries, erc20[1]))
	return out
}()

// disperseABI is the parsed disperseABIJSON, built once and only read.
var disperseABI = mustParseABI(string(disperseABIJSON))

// erc20ApproveABI is ERC-20's approve and allowance.
const erc20ApproveABI = `[
 {"type":"function","name":"approve","stateMutability":"nonpayable","inputs":[{"name":"spender","type":"address"},{"name":"value","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]},
 {"type":"function","name":"allowance","stateMutability":"view","inputs":[{"name":"owner","type":"address"},{"name":"spender","type":"address"}],"outputs":[{"name":"","type":"uint256"}]},
 {"type":"event","name":"Approval","anonymous":false,"inputs":[{"name":"owner","type":"address","indexed":true},{"name":"spender","type":"address","indexed":true},{"name":"value","type":"uint256","indexed":false}]}
]`

// erc20Approve is the parsed erc20ApproveABI, built once and only read.
var erc20Approve = mustParseABI(erc20ApproveABI)

// deployState is what a keeper knows of a treasury's disperser
// deployments: the last one's id (pending, or ended and not yet read)
// and how many failed.
type deployState struct {
	scanned bool
	last    string
	failed  int
}

// disperserView is what a look knows of a treasury's disperser.
type disperserView struct {
	// addr is its address, known once its deployment has a nonce
	// (known): approvals may go before it is mined.
	addr  common.Address
	known bool
	// ready: its deployment completed; batches may go.
	ready bool
	// deploy is the deployment to send: none is pending, and the node
	// refused fewer than maxDisperserDeploys.
	deploy *Transaction
	// pending: a deployment is on its way (not yet completed).
	pending bool
}

// disperser returns what is known of treasury's disperser on the keeper's
// network (disperserView). The keeper follows its own deployment by id
// (one read a look); the first time it looks for a treasury (a restart)
// it finds the deployments by sender and MethodCreate (ListTransactions,
// once; it scans the owner's rows): the address is
// crypto.CreateAddress(treasury, the deployment's nonce).
func (k *PoolKeeper) disperser(ctx context.Context, p *Pool, treasury *Account) (disperserView, error) {
	k.mu.Lock()
	addr, ready := k.dispersers[treasury.ID]
	st := k.deploys[treasury.ID]
	k.mu.Unlock()
	if ready {
		return disperserView{addr: addr, known: true, ready: true}, nil
	}
	var found *Transaction
	var err error
	if !st.scanned {
		if st, found, err = k.scanDeploys(ctx, p, treasury); err != nil {
			return disperserView{}, err
		}
	} else if st.last != "" {
		found, err = k.cfg.Store.TransactionByID(ctx, st.last)
		switch {
		case IsNotFound(err):
			st.last = "" // not accepted: sent again
		case err != nil:
			return disperserView{}, fmt.Errorf("disperser deployment %s: %w", st.last, err)
		case found.Status == StatusFailed:
			st.failed, st.last, found = st.failed+1, "", nil
		}
	}
	var v disperserView
	switch {
	case found != nil && found.Status != StatusCompleted:
		// pending: its address once it has a nonce
		v.pending = true
		if found.Nonce != nil {
			v.addr, v.known = crypto.CreateAddress(treasury.Address, *found.Nonce), true
		}
	case found != nil && found.Nonce != nil:
		v.addr, v.known, v.ready = crypto.CreateAddress(treasury.Address, *found.Nonce), true, true
	case st.failed < maxDisperserDeploys:
		v.deploy = k.setupTx(p, treasury, disperserKey, common.Address{}, MethodCreate, contracts.Disperse().Bin, nil)
		st.last = v.deploy.ID
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if v.ready {
		k.dispersers[treasury.ID] = v.addr
	}
	k.deploys[treasury.ID] = st
	return v, nil
}

// scanDeploys reads treasury's disperser deployments: the newest not
// failed (nil: none) and how many failed.
func (k *PoolKeeper) scanDeploys(ctx context.Context, p *Pool, treasury *Account) (deployState, *Transaction, error) {
	from := treasury.Address
	txs, _, err := k.cfg.Store.ListTransactions(ctx, TxFilter{Owner: p.Owner, From: &from, Network: p.Network, Method: MethodCreate, Limit: 20})
	if err != nil {
		return deployState{}, nil, fmt.Errorf("disperser deployments: %w", err)
	}
	st := deployState{scanned: true}
	var found *Transaction
	for _, tx := range txs { // newest first
		switch {
		case tx.OrderingKey != disperserKey:
		case tx.Status == StatusFailed:
			st.failed++
		case found == nil:
			found, st.last = tx, tx.ID
		}
	}
	return st, found, nil
}

// setupTx is one of the treasury's transactions that prepare batches (the
// disperser's deployment, an approval).
func (k *PoolKeeper) setupTx(p *Pool, treasury *Account, key string, to common.Address, method string, data []byte, params []any) *Transaction {
	return &Transaction{
		ID: NewID(), Owner: p.Owner, AccountID: treasury.ID, Network: p.Network, From: treasury.Address,
		ContractAddress: to, Method: method, Parameters: params, Data: data, Value: new(big.Int), Status: StatusNew,
		Created: k.cfg.Clock.Now(), PoolID: p.ID, OrderingKey: key,
	}
}

// approved reports whether treasury's disperser may move amount of token
// for it (its allowance on chain); when not, approve is the approval to
// send (nil when one is pending).
func (k *PoolKeeper) approved(ctx context.Context, p *Pool, treasury *Account, disperser common.Address, token string, amount *big.Int, pending []string) (bool, *Transaction, error) {
	tokenAddr := common.HexToAddress(token)
	data, err := erc20Approve.Pack("allowance", treasury.Address, disperser)
	if err != nil {
		return false, nil, fmt.Errorf("pack allowance: %w", err)
	}
	raw, err := k.cfg.Network.Chain.CallContract(ctx, ethereum.CallMsg{From: treasury.Address, To: &tokenAddr, Data: data}, nil)
	if err != nil {
		return false, nil, fmt.Errorf("allowance of token %s: %w", token, err)
	}
	out, err := erc20Approve.Unpack("allowance", raw)
	if err != nil || len(out) != 1 {
		return false, nil, fmt.Errorf("allowance of token %s: %w", token, ErrNotToken)
	}
	if allowance, _ := out[0].(*big.Int); allowance != nil && allowance.Cmp(amount) >= 0 {
		return true, nil, nil
	}
	if slices.Contains(pending, approveKeyPrefix+token) {
		return false, nil, nil
	}
	m := erc20Approve.Methods["approve"]
	data, params, err := packJSON(&m, disperser.Hex(), math.MaxBig256.String())
	if err != nil {
		return false, nil, err
	}
	tx := k.setupTx(p, treasury, approveKeyPrefix+token, tokenAddr, m.RawName, data, params)
	tx.ABI, tx.ContractBWType = json.RawMessage(erc20ApproveABI), TypeERC20
	return false, tx, nil
}

// packJSON packs a call of m with args, each marshalled to JSON.
func packJSON(m *abi.Method, args ...any) ([]byte, []any, error) {
	raw := make([]json.RawMessage, len(args))
	for i, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, nil, fmt.Errorf("pack %s: %w", m.RawName, err)
		}
		raw[i] = b
	}
	data, params, err := abicodec.PackCall(m, raw)
	if err != nil {
		return nil, nil, fmt.Errorf("pack %s: %w", m.RawName, err)
	}
	return data, params, nil
}

// batchTx is the treasury's batch of ts (top-ups of one asset) through its
// disperser: disperseEther with their sum as value, or disperseToken.
func (k *PoolKeeper) batchTx(p *Pool, treasury *Account, disperser common.Address, asset string, ts []topUp) (*Transaction, error) {
	recipients := make([]string, len(ts))
	values := make([]string, len(ts))
	sum := new(big.Int)
	for i, t := range ts {
		recipients[i], values[i] = t.member.Address.Hex(), t.amount.String()
		sum.Add(sum, t.amount)
	}
	var data []byte
	var params []any
	var err error
	var m abi.Method
	value := new(big.Int)
	if asset == AssetETH {
		m = disperseABI.Methods["disperseEther"]
		data, params, err = packJSON(&m, recipients, values)
		value = sum
	} else {
		m = disperseABI.Methods["disperseToken"]
		data, params, err = packJSON(&m, asset, recipients, values)
	}
	if err != nil {
		return nil, err
	}
	tx := k.setupTx(p, treasury, TopUpBatchKey(asset), disperser, m.RawName, data, params)
	tx.Value, tx.ABI = value, disperseABIJSON
	return tx, nil
}

// newHolderGas is what a token transfer to a holder whose balance is zero
// when it is mined costs beyond one to a holder with a balance (a storage
// slot set from zero: 22,100 gas against 5,000).
const newHolderGas = 17_100

// batchGasHeadroom is the gas a token batch may need beyond its estimate:
// the estimate prices each member's balance as it is then, and a member
// that spends all its tokens before the batch is mined costs newHolderGas
// more. Without it, a batch estimated while members held tokens can run
// out of gas once they have spent them, and batches of the token stay off
// for batchPause. 0 for anything else.
func batchGasHeadroom(tx *Transaction) uint64 {
	if !strings.HasPrefix(tx.OrderingKey, batchKeyPrefix) || tx.Method != "disperseToken" || len(tx.Data) < 4 {
		return 0
	}
	args, err := disperseABI.Methods["disperseToken"].Inputs.Unpack(tx.Data[4:])
	if err != nil || len(args) != 3 {
		return 0
	}
	recipients, _ := args[1].([]common.Address)
	return uint64(len(recipients)) * newHolderGas
}
