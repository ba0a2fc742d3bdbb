package engine

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/txengine/txengine/engine/abicodec"
)

// CallRequest is one eth_call of a batch, at the latest block.
type CallRequest struct {
	From common.Address
	To   common.Address
	Data []byte
}

// CallResult is the outcome of one CallRequest: the return data, or the
// error of that call alone (a revert, typically).
type CallResult struct {
	Data []byte
	Err  error
}

// BatchCaller is implemented by chains that can send many eth_calls in one
// round trip (a JSON-RPC batch). It is optional: BatchCall falls back to
// sequential calls.
type BatchCaller interface {
	// BatchCall performs reqs and returns one result per request, in order.
	// An error means the batch as a whole failed (transport, node down).
	BatchCall(ctx context.Context, reqs []CallRequest) ([]CallResult, error)
}

// BatchCall performs reqs on chain at the latest block, in one round trip
// when chain is a BatchCaller and one call after the other otherwise. The
// error is that of the batch as a whole; per-call errors are in the results.
// In the sequential fallback, an error that is not a revert stops the batch.
func BatchCall(ctx context.Context, chain ethereum.ContractCaller, reqs []CallRequest) ([]CallResult, error) {
	if len(reqs) == 0 {
		return []CallResult{}, nil
	}
	if bc, ok := chain.(BatchCaller); ok {
		return bc.BatchCall(ctx, reqs)
	}
	return CallEach(ctx, chain, reqs)
}

// CallEach performs reqs one call after the other (the fallback of
// BatchCall); an error that is not a revert stops it.
func CallEach(ctx context.Context, chain ethereum.ContractCaller, reqs []CallRequest) ([]CallResult, error) {
	out := make([]CallResult, len(reqs))
	for i, r := range reqs {
		to := r.To
		data, err := chain.CallContract(ctx, ethereum.CallMsg{From: r.From, To: &to, Data: r.Data}, nil)
		if err != nil && !IsRevert(err) {
			return nil, err
		}
		out[i] = CallResult{Data: data, Err: err}
	}
	return out, nil
}

// RevertMessage describes a reverted call: "execution reverted", followed by
// the reason decoded from the revert data the node returned (Error(string),
// Panic(uint256) or a custom error of a, which may be nil) when there is one.
func RevertMessage(a *abi.ABI, err error) string {
	var de interface{ ErrorData() interface{} }
	if errors.As(err, &de) {
		if s, ok := de.ErrorData().(string); ok {
			if data, herr := hex.DecodeString(strings.TrimPrefix(s, "0x")); herr == nil {
				if reason, ok := abicodec.DecodeRevert(a, data); ok {
					return "execution reverted: " + reason
				}
			}
		}
	}
	if reason, ok := revertReasonOf(err); ok {
		return "execution reverted: " + reason
	}
	return "execution reverted"
}

// TxBatcher is implemented by chains that estimate gas and broadcast many
// transactions in one round trip each (JSON-RPC batches). It is optional:
// EstimateAll and SendAll fall back to one call each.
type TxBatcher interface {
	// BatchEstimateGas returns one estimate or one error per message, in
	// order; the error is that of the batch as a whole.
	BatchEstimateGas(ctx context.Context, msgs []ethereum.CallMsg) ([]uint64, []error, error)
	// BatchSendTransactions broadcasts txs in order and returns one error
	// per transaction; the error is that of the batch as a whole (then the
	// outcome of every transaction is unknown).
	BatchSendTransactions(ctx context.Context, txs []*types.Transaction) ([]error, error)
}

// EstimateAll estimates the gas of msgs at the latest block, in one round
// trip when chain is a TxBatcher.
func EstimateAll(ctx context.Context, chain ethereum.GasEstimator, msgs []ethereum.CallMsg) ([]uint64, []error, error) {
	if b, ok := chain.(TxBatcher); ok {
		return b.BatchEstimateGas(ctx, msgs)
	}
	return EstimateEach(ctx, chain, msgs)
}

// EstimateDistinct is EstimateAll asking the node once for each distinct
// call of msgs (same sender, recipient, value and data): a pump of many
// equal calls (a payout of the same amount to the same addresses, a burst
// of test transfers) would otherwise have the node execute each of them.
// The calls of one pump are estimated against the chain's latest state,
// which an equal call reads alike; each answer (gas, revert or error) goes
// to every call equal to the one estimated.
func EstimateDistinct(ctx context.Context, chain ethereum.GasEstimator, msgs []ethereum.CallMsg) ([]uint64, []error, error) {
	index := make([]int, len(msgs))
	distinct := make([]ethereum.CallMsg, 0, len(msgs))
	seen := make(map[string]int, len(msgs))
	for i, m := range msgs {
		key := callKey(i, m)
		j, ok := seen[key]
		if !ok {
			j = len(distinct)
			seen[key] = j
			distinct = append(distinct, m)
		}
		index[i] = j
	}
	if len(distinct) == len(msgs) {
		return EstimateAll(ctx, chain, msgs)
	}
	g, e, err := EstimateAll(ctx, chain, distinct)
	if err != nil {
		return nil, nil, err
	}
	gas := make([]uint64, len(msgs))
	errs := make([]error, len(msgs))
	for i, j := range index {
		gas[i], errs[i] = g[j], e[j]
	}
	return gas, errs, nil
}

// callKey identifies the call m (the i-th) for EstimateDistinct by every
// field an estimate reads. A call with blobs or authorizations is keyed by
// its position: it is estimated on its own.
func callKey(i int, m ethereum.CallMsg) string {
	var b strings.Builder
	if m.BlobGasFeeCap != nil || len(m.BlobHashes) > 0 || len(m.AuthorizationList) > 0 {
		fmt.Fprintf(&b, "own:%d", i)
		return b.String()
	}
	b.WriteString("call:")
	b.Write(m.From[:])
	if m.To != nil {
		b.WriteByte(1)
		b.Write(m.To[:])
	} else {
		b.WriteByte(0)
	}
	for _, v := range []*big.Int{m.Value, m.GasPrice, m.GasFeeCap, m.GasTipCap} {
		b.WriteByte('|')
		if v != nil {
			b.WriteString(v.String())
		}
	}
	fmt.Fprintf(&b, "|%d|%d|", m.Gas, len(m.AccessList))
	for _, t := range m.AccessList {
		b.Write(t.Address[:])
		for _, k := range t.StorageKeys {
			b.Write(k[:])
		}
		b.WriteByte(';')
	}
	b.WriteByte('|')
	b.Write(m.Data)
	return b.String()
}

// EstimateEach estimates msgs one call after the other; an error that
// does not concern its call alone (a transport failure, a rate limit, a
// node that cannot serve calls: see concernsCallOnly) ends it, leaving the
// rest unestimated with that error.
func EstimateEach(ctx context.Context, chain ethereum.GasEstimator, msgs []ethereum.CallMsg) ([]uint64, []error, error) {
	gas := make([]uint64, len(msgs))
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		gas[i], errs[i] = chain.EstimateGas(ctx, m)
		if errs[i] != nil && !concernsCallOnly(errs[i]) {
			for j := i + 1; j < len(msgs); j++ {
				errs[j] = errs[i]
			}
			break
		}
	}
	return gas, errs, nil
}

// SendAll broadcasts txs in order, in one round trip when chain is a
// TxBatcher.
func SendAll(ctx context.Context, chain ethereum.TransactionSender, txs []*types.Transaction) ([]error, error) {
	if b, ok := chain.(TxBatcher); ok {
		return b.BatchSendTransactions(ctx, txs)
	}
	return SendEach(ctx, chain, txs)
}

// SendEach broadcasts txs one call after the other.
func SendEach(ctx context.Context, chain ethereum.TransactionSender, txs []*types.Transaction) ([]error, error) {
	errs := make([]error, len(txs))
	for i, tx := range txs {
		errs[i] = chain.SendTransaction(ctx, tx)
	}
	return errs, nil
}
