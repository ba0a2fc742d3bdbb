package sim

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/txengine/txengine/engine"
)

// Node is the JSON-RPC node of the model chain as the engine sees it
// (engine.Node), with the node's faults: rate limits, 5xx, timeouts,
// answers lost after the request took effect, refusals, and requests it
// refuses for good.
type Node struct {
	c      *Chain
	faults *Faults
	log    *slog.Logger
	// refuseSend and refuseEstimate are the memos of the requests the node
	// always refuses at broadcast (as unaffordable) and at estimation (gas
	// required exceeds allowance).
	refuseSend, refuseEstimate map[uint64]bool
	// strictFees refuses a fee cap below the base fee (Hardhat does; geth
	// pools it until the base fee falls).
	strictFees bool
}

var _ engine.Node = (*Node)(nil)

// fail is the transport's fate of a call: nil, or the error the client
// would get (the request did not reach the node, or its answer was lost
// before it took effect).
func (n *Node) fail(ctx context.Context, method string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n.faults.maybeCrash(method)
	rng := n.faults.rng
	switch {
	case n.faults.roll(FaultNode429, method):
		return rpc.HTTPError{StatusCode: 429, Status: "429 Too Many Requests", Body: []byte(`{"jsonrpc":"2.0","error":{"code":-32005,"message":"rate limited"}}`)}
	case n.faults.roll(FaultNode5xx, method):
		codes := []int{500, 502, 503, 504}
		code := codes[rng.Intn(len(codes))]
		return rpc.HTTPError{StatusCode: code, Status: fmt.Sprintf("%d upstream unavailable", code), Body: []byte("upstream connect error")}
	case n.faults.roll(FaultNodeTimeout, method):
		return fmt.Errorf("Post \"http://node/\": %w", context.DeadlineExceeded)
	case n.faults.roll(FaultNodeRPCRate, method):
		return refuse(n.faults, refRateLimited)
	}
	return nil
}

func (n *Node) ChainID(ctx context.Context) (*big.Int, error) {
	if err := n.fail(ctx, "eth_chainId"); err != nil {
		return nil, err
	}
	return big.NewInt(chainID), nil
}

func (n *Node) HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error) {
	if err := n.fail(ctx, "eth_getBlockByNumber"); err != nil {
		return nil, err
	}
	b, err := n.blockAt(number)
	if err != nil {
		return nil, err
	}
	return types.CopyHeader(b.header), nil
}

// blockAt is the canonical block number (nil: the head).
func (n *Node) blockAt(number *big.Int) (*block, error) {
	if number == nil {
		return n.c.head(), nil
	}
	if !number.IsUint64() || number.Uint64() > n.c.Head() {
		return nil, ethereum.NotFound
	}
	return n.c.blocks[number.Uint64()], nil
}

func (n *Node) NonceAt(ctx context.Context, account common.Address, number *big.Int) (uint64, error) {
	if err := n.fail(ctx, "eth_getTransactionCount"); err != nil {
		return 0, err
	}
	b, err := n.blockAt(number)
	if err != nil {
		return 0, err
	}
	return b.state.nonces[account], nil
}

func (n *Node) PendingNonceAt(ctx context.Context, account common.Address) (uint64, error) {
	if err := n.fail(ctx, "eth_getTransactionCount"); err != nil {
		return 0, err
	}
	nonce := n.c.NonceOf(account)
	for n.c.pool.get(account, nonce) != nil {
		nonce++
	}
	return nonce, nil
}

func (n *Node) BalanceAt(ctx context.Context, _ common.Address, _ *big.Int) (*big.Int, error) {
	if err := n.fail(ctx, "eth_getBalance"); err != nil {
		return nil, err
	}
	return new(big.Int).Mul(big.NewInt(1e18), big.NewInt(1000)), nil
}

func (n *Node) EstimateGas(ctx context.Context, msg ethereum.CallMsg) (uint64, error) {
	if err := n.fail(ctx, "eth_estimateGas"); err != nil {
		return 0, err
	}
	t, ok := decodeTransfer(msg.Data)
	if !ok || msg.To == nil || *msg.To != n.c.Token {
		return intrinsicGas, nil
	}
	if n.refuseEstimate[t.memo] {
		n.faults.count(FaultGasAllowance)
		return 0, refuse(n.faults, refGasAllowance, n.c.GasLimit)
	}
	if n.c.head().state.tokens[msg.From] < t.amount {
		e := refuse(n.faults, refRevert)
		e.data = "0x08c379a0" // Error(string), without its argument: undecodable, as some nodes send it
		return 0, e
	}
	return transferGas, nil
}

func (n *Node) SuggestGasPrice(ctx context.Context) (*big.Int, error) {
	if err := n.fail(ctx, "eth_gasPrice"); err != nil {
		return nil, err
	}
	return new(big.Int).Mul(n.c.baseFee, big.NewInt(2)), nil
}

func (n *Node) SuggestGasTipCap(ctx context.Context) (*big.Int, error) {
	if err := n.fail(ctx, "eth_maxPriorityFeePerGas"); err != nil {
		return nil, err
	}
	return big.NewInt(gwei / 10), nil
}

func (n *Node) CallContract(ctx context.Context, _ ethereum.CallMsg, _ *big.Int) ([]byte, error) {
	if err := n.fail(ctx, "eth_call"); err != nil {
		return nil, err
	}
	return nil, nil
}

// SendTransaction applies the pool's rules to tx, with the node's faults:
// a refusal for now without looking at it, an "ok" for a transaction the
// pool then drops, an answer lost after the pool took it.
func (n *Node) SendTransaction(ctx context.Context, tx *types.Transaction) error {
	const method = "eth_sendRawTransaction"
	err := n.send(ctx, tx)
	n.log.Debug("sim: node send", "from", n.c.sender(tx), "nonce", tx.Nonce(), "hash", tx.Hash(), "answer", err, "chain_nonce", n.c.NonceOf(n.c.sender(tx)))
	return err
}

// send is SendTransaction's answer.
func (n *Node) send(ctx context.Context, tx *types.Transaction) error {
	const method = "eth_sendRawTransaction"
	if err := n.fail(ctx, method); err != nil {
		return err
	}
	rng := n.faults.rng
	if n.faults.roll(FaultRefusedForNow, method) {
		if rng.Intn(2) == 0 {
			return refuse(n.faults, refPoolFull)
		}
		return refuse(n.faults, refRateLimited)
	}
	err := n.admit(tx)
	n.faults.maybeCrash(method)
	if err == nil && n.faults.roll(FaultSilentDrop, method) {
		n.c.pool.remove(n.c.sender(tx), tx.Nonce())
	}
	if n.faults.roll(FaultLostAnswer, method) {
		return fmt.Errorf("Post \"http://node/\": %w", context.DeadlineExceeded)
	}
	return err
}

// admit is the pool's verdict on tx: nil when it took it.
func (n *Node) admit(tx *types.Transaction) error {
	from, err := types.Sender(n.c.signer, tx)
	if err != nil {
		return &rpcError{code: -32000, msg: "invalid sender"}
	}
	p, chainNonce := n.c.pool, n.c.NonceOf(from)
	if p.has(from, tx) {
		return refuse(n.faults, refAlreadyKnown, tx.Hash())
	}
	if tx.Nonce() < chainNonce {
		return refuse(n.faults, refNonceTooLow, tx.Nonce(), chainNonce)
	}
	if t, ok := decodeTransfer(tx.Data()); ok && n.refuseSend[t.memo] {
		n.faults.count(FaultRefusedForGood)
		cost := new(big.Int).Mul(tx.GasFeeCap(), new(big.Int).SetUint64(tx.Gas()))
		balance := new(big.Int).Div(cost, big.NewInt(3))
		return refuse(n.faults, refInsufficientFunds, balance, cost, new(big.Int).Sub(cost, balance))
	}
	if n.strictFees && tx.GasFeeCap().Cmp(n.c.baseFee) < 0 {
		return refuse(n.faults, refFeeBelowBase, tx.GasFeeCap(), n.c.baseFee)
	}
	if tx.Nonce() >= chainNonce+p.gapLimit {
		return refuse(n.faults, refNonceTooHigh, tx.Nonce(), chainNonce)
	}
	if old := p.get(from, tx.Nonce()); old != nil {
		if !bumped(tx.GasFeeCap(), old.GasFeeCap()) || !bumped(tx.GasTipCap(), old.GasTipCap()) {
			return refuse(n.faults, refReplaceUnderpaid, old.GasFeeCap(), tx.Nonce())
		}
		p.put(from, tx)
		return nil
	}
	if p.count(from) >= p.slots {
		// Full: a transaction below the highest one held takes the place
		// of the highest (geth evicts queued futures first); else refused.
		top := p.highest(from)
		if tx.Nonce() > top {
			return refuse(n.faults, refPoolFull)
		}
		p.remove(from, top)
	}
	p.put(from, tx)
	return nil
}

func (n *Node) BlockReceipts(ctx context.Context, number uint64) ([]*types.Receipt, error) {
	if err := n.fail(ctx, "eth_getBlockReceipts"); err != nil {
		return nil, err
	}
	b, err := n.blockAt(new(big.Int).SetUint64(number))
	if err != nil {
		return nil, err
	}
	out := make([]*types.Receipt, len(b.receipts))
	for i, r := range b.receipts {
		cp := *r
		out[i] = &cp
	}
	return out, nil
}

func (n *Node) TransactionReceipt(ctx context.Context, hash common.Hash) (*types.Receipt, error) {
	if err := n.fail(ctx, "eth_getTransactionReceipt"); err != nil {
		return nil, err
	}
	num, ok := n.c.byHash[hash]
	if !ok {
		return nil, ethereum.NotFound
	}
	for _, r := range n.c.blocks[num].receipts {
		if r.TxHash == hash {
			cp := *r
			return &cp, nil
		}
	}
	return nil, ethereum.NotFound
}
