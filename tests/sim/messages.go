package sim

import (
	"fmt"
	"strings"
)

// refusal is one way a node words a refusal of a kind.
type refusal struct {
	client string
	// code is the JSON-RPC error code the client answers with.
	code int
	// format is the message; %d verbs get the numbers the node would say
	// (nonces, amounts), in order.
	format string
}

// Refusal kinds the model chain answers with.
const (
	refNonceTooLow       = "nonce_too_low"
	refNonceTooHigh      = "nonce_too_high"
	refAlreadyKnown      = "already_known"
	refReplaceUnderpaid  = "replacement_underpriced"
	refFeeBelowBase      = "fee_below_base"
	refPoolFull          = "pool_full"
	refRateLimited       = "rate_limited"
	refInsufficientFunds = "insufficient_funds"
	refGasAllowance      = "gas_allowance"
	refRevert            = "revert"
)

// refusals are the message variants per kind, from the clients' sources:
// go-ethereum core/txpool/errors.go, core/txpool/legacypool, core/error.go
// and eth/gasestimator; Hardhat's hardhat-network (packages/hardhat-core
// /src/internal/hardhat-network/provider/node.ts, errors.ts); Anvil
// (crates/anvil/src/eth/error.rs); Erigon's txpool (DiscardReason strings)
// and Nethermind's JSON-RPC (AcceptTxResult) where they differ.
//
// engine.NodeErrorSamples holds the fixed texts the classifier is tested
// on; this table is the model chain's own because it needs the numbers a
// node puts in its words (the nonces expected and given, a balance and a
// cost, which the sender parses), and a model refusal is worded from it
// with the run's values.
var refusals = map[string][]refusal{
	refNonceTooLow: {
		{"geth", -32000, "nonce too low: address 0x5a, tx: %d state: %d"},
		{"hardhat", -32000, "Nonce too low. Expected nonce to be %[2]d but got %[1]d."},
		{"anvil", -32003, "nonce too low"},
		{"erigon", -32000, "nonce too low"},
	},
	refNonceTooHigh: {
		{"hardhat", -32000, "Nonce too high. Expected nonce to be %[2]d but got %[1]d. Note that transactions can't be queued when automining."},
		{"nethermind", -32000, "nonce too high"},
	},
	refAlreadyKnown: {
		{"geth", -32000, "already known"},
		{"hardhat", -32000, "Known transaction: 0x%x"},
		{"anvil", -32003, "transaction already imported"},
		{"nethermind", -32010, "AlreadyKnown"},
	},
	refReplaceUnderpaid: {
		{"geth", -32000, "replacement transaction underpriced"},
		{"hardhat", -32000, "Replacement transaction underpriced. A gasPrice/maxFeePerGas of at least %d is necessary to replace the existing transaction with nonce %d."},
		{"anvil", -32003, "replacement transaction underpriced"},
	},
	refFeeBelowBase: {
		{"geth", -32000, "max fee per gas less than block base fee: address 0x5a, maxFeePerGas: %d, baseFee: %d"},
		{"hardhat", -32000, "Transaction maxFeePerGas (%d) is too low for the next block, which has a baseFeePerGas of %d"},
	},
	refPoolFull: {
		{"geth", -32000, "txpool is full"},
		{"nethermind", -32010, "transaction pool is full"},
	},
	refRateLimited: {
		{"infura", -32005, "daily request count exceeded, request rate limited"},
		{"alchemy", 429, "Your app has exceeded its compute units per second capacity."},
		{"quicknode", -32007, "request limit reached - rate limit"},
	},
	refInsufficientFunds: {
		{"geth", -32000, "insufficient funds for gas * price + value: balance %d, queued cost 0, tx cost %d, overshot %d"},
		{"hardhat", -32000, "sender doesn't have enough funds to send tx. The max upfront cost is: %[2]d and the sender's account only has: %[1]d"},
		{"anvil", -32003, "insufficient funds for gas * price + value"},
	},
	refGasAllowance: {
		{"geth", -32000, "gas required exceeds allowance (%d)"},
		{"anvil", -32603, "Out of gas: gas required exceeds allowance: %d"},
	},
	refRevert: {
		{"geth", 3, "execution reverted: ERC20: transfer amount exceeds balance"},
		{"hardhat", -32603, "Error: VM Exception while processing transaction: reverted with reason string 'ERC20: transfer amount exceeds balance'"},
	},
}

// rpcError is a JSON-RPC error object as go-ethereum's client returns it
// (rpc.Error, rpc.DataError).
type rpcError struct {
	code int
	msg  string
	data any
}

func (e *rpcError) Error() string          { return e.msg }
func (e *rpcError) ErrorCode() int         { return e.code }
func (e *rpcError) ErrorData() interface{} { return e.data }

// VariantKey names a wording in Config.Disabled: "refusal:" + kind + "/" + client.
func VariantKey(kind, client string) string { return "refusal:" + kind + "/" + client }

// clients are the node clients a run's node words its refusals as.
var clients = []string{"geth", "hardhat", "anvil", "erigon", "nethermind"}

// refuse words a refusal of kind as the run's client does (f.client), or,
// when it has no wording of its own (or it is left out), as one of the
// others chosen by the rng; args fill in the numbers.
func refuse(f *Faults, kind string, args ...any) *rpcError {
	var vs []refusal
	for _, v := range refusals[kind] {
		if !f.Enabled(VariantKey(kind, v.client)) {
			continue
		}
		if v.client == f.client {
			vs = []refusal{v}
			break
		}
		vs = append(vs, v)
	}
	v := vs[f.rng.Intn(len(vs))]
	return &rpcError{code: v.code, msg: sprintfLoose(v.format, args...)}
}

// sprintfLoose formats with as many args as format uses (extra ones are
// dropped, so one call serves every variant).
func sprintfLoose(format string, args ...any) string {
	for n := len(args); n >= 0; n-- {
		s := fmt.Sprintf(format, args[:n]...)
		if !hasFormatNoise(s) {
			return s
		}
	}
	return format
}

// hasFormatNoise reports whether Sprintf complained (missing or extra args).
func hasFormatNoise(s string) bool {
	for _, bad := range []string{"%!(EXTRA", "%!d(MISSING)", "%!x(MISSING)", "%!(BADINDEX)"} {
		if strings.Contains(s, bad) {
			return true
		}
	}
	return false
}
