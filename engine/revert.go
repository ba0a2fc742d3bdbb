package engine

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/txengine/txengine/engine/abicodec"
)

// abiOf returns the ABI of tx's contract (nil when unknown), to decode
// its custom revert errors.
func (s *Sender) abiOf(ctx context.Context, tx *Transaction) *abi.ABI {
	if len(tx.ABI) > 0 {
		a, _ := abicodec.ParseABI(tx.ABI)
		return a
	}
	if tx.ContractID == "" {
		return nil
	}
	if a, ok := s.abis[tx.ContractID]; ok {
		return a
	}
	var a *abi.ABI
	if c, err := s.store.ContractByID(ctx, tx.ContractID); err == nil {
		a, _ = abicodec.ParseABI(c.ABI)
	}
	if s.abis == nil {
		s.abis = map[string]*abi.ABI{}
	}
	s.abis[tx.ContractID] = a
	return a
}

// estimateFailure turns an estimation error into the failure of the
// transaction when the error is the transaction's fault: it reverts, it
// needs more gas than a block allows ("gas required exceeds allowance", a
// gas limit above the block's), or the account cannot pay; nil when it is
// not (the node refuses for another reason, or did not answer). The revert
// reason is decoded with the contract's ABI when known (custom errors).
func estimateFailure(err error, a *abi.ABI) *TxError {
	switch {
	case needsTooMuchGas(err):
		return &TxError{Code: TxInvalid, Message: "the transaction needs more gas than a block allows: " + nodeMessage(err)}
	case IsRevert(err):
		return &TxError{Code: TxReverted, Message: RevertMessage(a, err)}
	case ClassifyNodeError(err) == NodeInsufficientFunds:
		return &TxError{Code: TxInsufficientFunds, Message: "the account cannot pay for gas and value"}
	}
	return nil
}

// needsTooMuchGas reports whether an estimate failed because the call
// needs more gas than the node allows any transaction (go-ethereum: "gas
// required exceeds allowance (N)", the block's gas limit or the node's gas
// cap; Anvil: "Out of gas: gas required exceeds allowance: N"), or a gas
// limit above the block's.
func needsTooMuchGas(err error) bool {
	if err == nil {
		return false
	}
	return strings.Contains(strings.ToLower(err.Error()), "gas required exceeds allowance") || ClassifyNodeError(err) == NodeGasLimit
}

// revertReasonOf extracts the decoded revert reason from a JSON-RPC error
// that carries revert data (go-ethereum's rpc.DataError), or from its text.
func revertReasonOf(err error) (string, bool) {
	var de interface{ ErrorData() interface{} }
	if errors.As(err, &de) {
		if s, ok := de.ErrorData().(string); ok {
			if data, herr := hex.DecodeString(strings.TrimPrefix(s, "0x")); herr == nil {
				if reason, ok := abicodec.RevertReason(data); ok {
					return reason, true
				}
			}
		}
	}
	msg := err.Error()
	if i := strings.Index(msg, "execution reverted: "); i >= 0 {
		return msg[i+len("execution reverted: "):], true
	}
	return "", false
}
