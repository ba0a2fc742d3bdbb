package engine

import (
	"fmt"
	"net/http"

	"github.com/ethereum/go-ethereum/rpc"
)

// NodeErrorSample is one answer a node (or its provider) gives to a
// broadcast (eth_sendRawTransaction) or an estimate (eth_estimateGas), in
// the words of one client, with where the words come from: the tests of
// ClassifyNodeError and estimateVerdict, and the fault injectors of the
// simulation, use the same rows.
type NodeErrorSample struct {
	// Client is the node or provider: geth, erigon, nethermind, besu,
	// hardhat, anvil, provider.
	Client string
	// Source is where the words are: repository and file (or document).
	Source string
	// Method is eth_sendRawTransaction or eth_estimateGas.
	Method string
	// Code is the JSON-RPC error code (0 when the answer is an HTTP error:
	// see Status).
	Code int
	// Status is the HTTP status of an answer that carries no JSON-RPC
	// error (0: a JSON-RPC error in a 200 answer).
	Status int
	// Message is the error's message (an HTTP answer's body).
	Message string
	// Kind is how ClassifyNodeError classifies the answer.
	Kind NodeErrorKind
	// TxCode is, for an estimate, the code the transaction fails with
	// before a nonce is taken ("" when the answer is not the transaction's
	// fault: it is parked or retried).
	TxCode TxErrorCode
}

// Err is the error go-ethereum's client returns for the sample: a JSON-RPC
// error object (with ErrorCode), or an rpc.HTTPError.
func (s NodeErrorSample) Err() error {
	if s.Status != 0 {
		return rpc.HTTPError{StatusCode: s.Status, Status: fmt.Sprintf("%d %s", s.Status, http.StatusText(s.Status)), Body: []byte(s.Message)}
	}
	return sampleRPCError{code: s.Code, msg: s.Message}
}

// sampleRPCError is a JSON-RPC error object as go-ethereum's client
// returns it (rpc.Error).
type sampleRPCError struct {
	code int
	msg  string
}

func (e sampleRPCError) Error() string  { return e.msg }
func (e sampleRPCError) ErrorCode() int { return e.code }

// Sources of the samples.
const (
	srcGethTxpool     = "ethereum/go-ethereum core/txpool/errors.go"
	srcGethCore       = "ethereum/go-ethereum core/error.go"
	srcGethValidation = "ethereum/go-ethereum core/txpool/validation.go"
	srcGethLegacy     = "ethereum/go-ethereum core/txpool/legacypool/legacypool.go"
	srcGethEstimator  = "ethereum/go-ethereum eth/gasestimator/gasestimator.go"
	srcGethTransition = "ethereum/go-ethereum core/state_transition.go (buyGas)"
	srcGethHTTP       = "ethereum/go-ethereum rpc/errors.go (HTTPError: a provider's HTTP answer)"
	srcErigon         = "erigontech/erigon txnprovider/txpool/txpoolcfg/txpoolcfg.go (DiscardReason.String)"
	srcNethermindPool = "NethermindEth/nethermind src/Nethermind/Nethermind.TxPool/TxPoolErrorMessages.cs"
	srcNethermindTx   = "NethermindEth/nethermind src/Nethermind/Nethermind.Core/Messages/TxErrorMessages.cs"
	srcBesu           = "hyperledger/besu ethereum/api/src/main/java/org/hyperledger/besu/ethereum/api/jsonrpc/internal/response/RpcErrorType.java"
	srcHardhat        = "NomicFoundation/hardhat Hardhat Network (hardhat@2; messages of its EDR provider)"
	srcAnvil          = "foundry-rs/foundry crates/anvil/src/eth/error.rs"
	srcEIP1474        = "ethereum/EIPs EIPS/eip-1474.md (-32005 limit exceeded)"
	srcProviders      = "provider documentation: Alchemy and QuickNode error references (HTTP 429 Too Many Requests)"
)

// Methods of the samples.
const (
	methodSend     = "eth_sendRawTransaction"
	methodEstimate = "eth_estimateGas"
)

// NodeErrorSamples returns the refusals and failures of the nodes the
// service is used with, one row per message variant, with their source.
// Numbers in messages are examples (the 429 in amounts is deliberate: such
// a message was once read as a rate limit).
func NodeErrorSamples() []NodeErrorSample {
	var out []NodeErrorSample
	for _, f := range []func() []NodeErrorSample{gethSamples, erigonSamples, nethermindSamples, besuSamples, hardhatSamples, anvilSamples, rateLimitSamples} {
		out = append(out, f()...)
	}
	return out
}

// sendSample is a refusal of a broadcast.
func sendSample(client, src string, code int, msg string, kind NodeErrorKind) NodeErrorSample {
	return NodeErrorSample{Client: client, Source: src, Method: methodSend, Code: code, Message: msg, Kind: kind}
}

// estimateSample is a failed estimate; txCode is the code the transaction
// fails with ("" when it is not its fault).
func estimateSample(client, src string, code int, msg string, kind NodeErrorKind, txCode TxErrorCode) NodeErrorSample {
	return NodeErrorSample{Client: client, Source: src, Method: methodEstimate, Code: code, Message: msg, Kind: kind, TxCode: txCode}
}

// httpSample is a provider's HTTP answer without a JSON-RPC error.
func httpSample(status int, msg string, kind NodeErrorKind) NodeErrorSample {
	return NodeErrorSample{Client: "provider", Source: srcGethHTTP, Method: methodSend, Status: status, Message: msg, Kind: kind}
}

// gethSamples are go-ethereum's.
func gethSamples() []NodeErrorSample {
	return []NodeErrorSample{
		sendSample("geth", srcGethTxpool, -32000, "already known", NodeAlreadyKnown),
		sendSample("geth", srcGethTxpool, -32000, "transaction underpriced", NodeUnderpriced),
		sendSample("geth", srcGethValidation, -32000, "transaction underpriced: tip needed 1000000, tip permitted 429", NodeUnderpriced),
		sendSample("geth", srcGethTxpool, -32000, "replacement transaction underpriced", NodeUnderpriced),
		sendSample("geth", srcGethTxpool, -32000, "account limit exceeded", NodePoolFull),
		sendSample("geth", srcGethTxpool, -32000, "exceeds block gas limit", NodeGasLimit),
		sendSample("geth", srcGethTxpool, -32000, "invalid sender", NodeInvalid),
		sendSample("geth", srcGethTxpool, -32000, "oversized data", NodeInvalid),
		sendSample("geth", srcGethLegacy, -32000, "txpool is full", NodePoolFull),
		sendSample("geth", srcGethCore, -32000, "nonce too low: address 0x71562b71999873DB5b286dF957af199Ec94617F7, tx: 3 state: 5", NodeNonceTooLow),
		sendSample("geth", srcGethCore, -32000, "nonce too high: address 0x71562b71999873DB5b286dF957af199Ec94617F7, tx: 9 state: 5", NodeNonceTooHigh),
		sendSample("geth", srcGethCore, -32000, "max fee per gas less than block base fee: address 0x71562b71999873DB5b286dF957af199Ec94617F7, maxFeePerGas: 429 baseFee: 1000", NodeUnderpriced),
		sendSample("geth", srcGethCore, -32000, "max priority fee per gas higher than max fee per gas", NodeInvalid),
		sendSample("geth", srcGethCore, -32000, "transaction gas limit too high (cap: 16777216, tx: 30000000)", NodeGasLimit),
		sendSample("geth", srcGethValidation, -32000, "intrinsic gas too low: gas 21000, minimum needed 21429", NodeGasLimit),
		sendSample("geth", srcGethValidation, -32000, "insufficient funds for gas * price + value: balance 1429000000, tx cost 2000000000, overshot 571000000", NodeInsufficientFunds),
		sendSample("geth", srcGethValidation, -32000, "insufficient funds for gas * price + value: balance 3588509972154781432, queued cost 3584803419091365097, tx cost 4225470593866929, overshot 518917530450594", NodeInsufficientFunds),
		estimateSample("geth", srcGethEstimator, -32000, "gas required exceeds allowance (30000000)", NodeUnknown, TxInvalid),
		estimateSample("geth", srcGethTxpool, -32000, "exceeds block gas limit", NodeGasLimit, TxInvalid),
		estimateSample("geth", srcGethTransition, -32000, "insufficient funds for gas * price + value: address 0x71562b71999873DB5b286dF957af199Ec94617F7 have 1429 want 2000", NodeInsufficientFunds, TxInsufficientFunds),
		estimateSample("geth", srcGethCore, 3, "execution reverted: ERC20: transfer amount exceeds balance", NodeUnknown, TxReverted),
		estimateSample("geth", srcGethCore, -32602, "invalid argument 0: json: cannot unmarshal hex string without 0x prefix", NodeUnknown, ""),
	}
}

// erigonSamples are Erigon's (the reason follows the import result's name).
func erigonSamples() []NodeErrorSample {
	return []NodeErrorSample{
		sendSample("erigon", srcErigon, -32000, "ALREADY_EXISTS: already known", NodeAlreadyKnown),
		sendSample("erigon", srcErigon, -32000, "INTERNAL_ERROR: existing txn with same hash", NodeAlreadyKnown),
		sendSample("erigon", srcErigon, -32000, "INVALID: nonce too low", NodeNonceTooLow),
		sendSample("erigon", srcErigon, -32000, "INVALID: insufficient funds", NodeInsufficientFunds),
		sendSample("erigon", srcErigon, -32000, "FEE_TOO_LOW: fee too low", NodeUnderpriced),
		sendSample("erigon", srcErigon, -32000, "FEE_TOO_LOW: could not replace existing tx", NodeUnderpriced),
		sendSample("erigon", srcErigon, -32000, "INVALID: IntrinsicGas", NodeGasLimit),
		sendSample("erigon", srcErigon, -32000, "INVALID: gas limit is too high", NodeGasLimit),
		sendSample("erigon", srcErigon, -32000, "INVALID: invalid sender", NodeInvalid),
		sendSample("erigon", srcErigon, -32000, "INTERNAL_ERROR: pending sub-pool is full", NodePoolFull),
		sendSample("erigon", srcErigon, -32000, "INTERNAL_ERROR: queued sub-pool is full", NodePoolFull),
		sendSample("erigon", srcErigon, -32000, "INVALID: spammer", NodePoolFull),
	}
}

// nethermindSamples are Nethermind's.
func nethermindSamples() []NodeErrorSample {
	return []NodeErrorSample{
		sendSample("nethermind", srcNethermindPool, -32010, "already known", NodeAlreadyKnown),
		sendSample("nethermind", srcNethermindPool, -32010, "nonce too low", NodeNonceTooLow),
		sendSample("nethermind", srcNethermindPool, -32010, "nonce too high", NodeNonceTooHigh),
		sendSample("nethermind", srcNethermindPool, -32010, "nonce too far in future", NodeNonceTooHigh),
		sendSample("nethermind", srcNethermindPool, -32010, "transaction underpriced", NodeUnderpriced),
		sendSample("nethermind", srcNethermindPool, -32010, "replacement transaction underpriced", NodeUnderpriced),
		sendSample("nethermind", srcNethermindPool, -32010, "gas limit reached", NodeGasLimit),
		sendSample("nethermind", srcNethermindPool, -32010, "failed to recover sender", NodeInvalid),
		sendSample("nethermind", srcNethermindTx, -32010, "intrinsic gas too low", NodeGasLimit),
		sendSample("nethermind", srcNethermindTx, -32010, "InvalidTxChainId: Expected 1337, got 1.", NodeInvalid),
		sendSample("nethermind", srcNethermindTx, -32010, "InvalidTxSignature: Signature is invalid.", NodeInvalid),
		sendSample("nethermind", srcNethermindTx, -32010, "InvalidMaxPriorityFeePerGas: Cannot be higher than maxFeePerGas.", NodeInvalid),
	}
}

// besuSamples are Besu's.
func besuSamples() []NodeErrorSample {
	return []NodeErrorSample{
		sendSample("besu", srcBesu, -32001, "Nonce too low", NodeNonceTooLow),
		sendSample("besu", srcBesu, -32006, "Nonce too high", NodeNonceTooHigh),
		sendSample("besu", srcBesu, -32000, "Transaction nonce is too distant from current sender nonce", NodeNonceTooHigh),
		sendSample("besu", srcBesu, -32003, "Intrinsic gas exceeds gas limit", NodeGasLimit),
		sendSample("besu", srcBesu, -32004, "Upfront cost exceeds account balance", NodeInsufficientFunds),
		sendSample("besu", srcBesu, -32005, "Transaction gas limit exceeds block gas limit", NodeGasLimit),
		sendSample("besu", srcBesu, -32009, "Gas price below configured minimum gas price", NodeUnderpriced),
		sendSample("besu", srcBesu, -32009, "Gas price below current base fee", NodeUnderpriced),
		sendSample("besu", srcBesu, -32000, "Known transaction", NodeAlreadyKnown),
		sendSample("besu", srcBesu, -32000, "Replacement transaction underpriced", NodeUnderpriced),
		sendSample("besu", srcBesu, -32000, "Wrong chainId", NodeInvalid),
		sendSample("besu", srcBesu, -32002, "Invalid signature", NodeInvalid),
		sendSample("besu", srcBesu, -32000, "Max priority fee per gas exceeds max fee per gas", NodeInvalid),
	}
}

// hardhatSamples are Hardhat Network's.
func hardhatSamples() []NodeErrorSample {
	return []NodeErrorSample{
		sendSample("hardhat", srcHardhat, -32000, "Nonce too low. Expected nonce to be 5 but got 3.", NodeNonceTooLow),
		sendSample("hardhat", srcHardhat, -32000, "Nonce too high. Expected nonce to be 3 but got 5. Note that transactions can't be queued when automining.", NodeNonceTooHigh),
		sendSample("hardhat", srcHardhat, -32000, "Transaction gas limit is 40000000 and exceeds block gas limit of 30000000", NodeGasLimit),
		sendSample("hardhat", srcHardhat, -32000, "sender doesn't have enough funds to send tx. The max upfront cost is: 2000000000 and the sender's account only has: 1429000000", NodeInsufficientFunds),
		sendSample("hardhat", srcHardhat, -32000, "Transaction maxFeePerGas (1) is too low for the next block, which has a baseFeePerGas of 429", NodeUnderpriced),
		sendSample("hardhat", srcHardhat, -32000, "Replacement transaction underpriced. A gasPrice/maxFeePerGas of at least 1429 is necessary to replace the existing transaction with nonce 4.", NodeUnderpriced),
		sendSample("hardhat", srcHardhat, -32000, "Known transaction: 0x8c6f1b2d21a9a08ba7fce80d1b8dd0e6c3e2a7de8d3f6f0c1f3f4a1b2c3d4e5f", NodeAlreadyKnown),
		sendSample("hardhat", srcHardhat, -32000, "Transaction requires at least 21429 gas but got 21000", NodeGasLimit),
	}
}

// anvilSamples are Anvil's.
func anvilSamples() []NodeErrorSample {
	return []NodeErrorSample{
		sendSample("anvil", srcAnvil, -32003, "nonce too low", NodeNonceTooLow),
		sendSample("anvil", srcAnvil, -32003, "Nonce too high", NodeNonceTooHigh),
		sendSample("anvil", srcAnvil, -32003, "Insufficient funds for gas * price + value", NodeInsufficientFunds),
		sendSample("anvil", srcAnvil, -32003, "intrinsic gas too low", NodeGasLimit),
		sendSample("anvil", srcAnvil, -32003, "intrinsic gas too high -- tx gas limit 40000000 exceeds block gas limit 30000000", NodeGasLimit),
		sendSample("anvil", srcAnvil, -32003, "max fee per gas less than block base fee", NodeUnderpriced),
		sendSample("anvil", srcAnvil, -32003, "Transaction gas limit is greater than the block gas limit, gas_limit: 40000000, cap: 30000000", NodeGasLimit),
		sendSample("anvil", srcAnvil, -32003, "invalid chain id for signer", NodeInvalid),
		sendSample("anvil", srcAnvil, -32003, "Tx: [0x8c6f1b2d21a9a08ba7fce80d1b8dd0e6c3e2a7de8d3f6f0c1f3f4a1b2c3d4e5f] insufficient gas price to replace existing transaction", NodeUnderpriced),
		sendSample("anvil", srcAnvil, -32003, "Tx: [0x8c6f1b2d21a9a08ba7fce80d1b8dd0e6c3e2a7de8d3f6f0c1f3f4a1b2c3d4e5f] already Imported", NodeAlreadyKnown),
		estimateSample("anvil", srcAnvil, -32003, "Out of gas: gas required exceeds allowance: 30000000", NodeUnknown, TxInvalid),
	}
}

// rateLimitSamples are rate limits, by HTTP status or JSON-RPC code and by
// words, and other HTTP answers of providers.
func rateLimitSamples() []NodeErrorSample {
	return []NodeErrorSample{
		httpSample(http.StatusTooManyRequests, `{"jsonrpc":"2.0","error":{"code":-32005,"message":"rate limited"}}`, NodeRateLimited),
		httpSample(http.StatusTooManyRequests, "", NodeRateLimited),
		httpSample(http.StatusServiceUnavailable, "request rate exceeded, retry later", NodeRateLimited),
		httpSample(http.StatusServiceUnavailable, "upstream connect error", NodeUnknown),
		httpSample(http.StatusBadGateway, "bad gateway", NodeUnknown),
		{Client: "provider", Source: srcEIP1474, Method: methodSend, Code: -32005, Message: "daily request count exceeded, request rate limited", Kind: NodeRateLimited},
		{Client: "provider", Source: srcEIP1474, Method: methodEstimate, Code: -32005, Message: "project ID request rate exceeded", Kind: NodeRateLimited},
		{Client: "provider", Source: srcProviders, Method: methodEstimate, Code: 429, Message: "Your app has exceeded its compute units per second capacity.", Kind: NodeRateLimited},
	}
}
