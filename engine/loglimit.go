package engine

import (
	"errors"
	"strings"
)

// The eth_getLogs refusals that a smaller block range may cure: the node or
// the provider in front of it caps the results, the response's size or
// the range of one query. The texts, lower case, as nodes and providers
// write them (the number in them varies with the configuration):
//
//	text                                        | who                          | source
//	--------------------------------------------+------------------------------+---------------------------------------------------------------
//	"exceed maximum block range"                | geth (--rpc.rangelimit),     | go-ethereum v1.17.8 eth/filters/filter.go (invalidParamsErr
//	                                            | publicnode                   | "exceed maximum block range %d"); ponder-sh/ponder
//	                                            |                              | packages/utils/src/getLogsRetryHelper.ts ("maximum block range")
//	"query returned more than"                  | Infura (-32005), Polygon     | 0xProject/0x-mesh ethereum/blockwatch/block_watcher.go
//	                                            | zkEVM: "... 10000 results"   | (infuraTooManyResultsErrMsg); ponder getLogsRetryHelper.ts
//	"log response size exceeded"                | Alchemy (-32602)             | ponder getLogsRetryHelper.ts ("this block range should work")
//	"query exceeds max results"                 | reth ("..., retry with the   | paradigmxyz/reth crates/rpc/rpc/src/eth/filter.rs
//	                                            | range a-b"), llamarpc, Ankr  | (QueryExceedsMaxResults); ponder getLogsRetryHelper.ts
//	"query exceeds max block range"             | reth, Hyperliquid            | reth filter.rs (QueryExceedsMaxBlocks); ponder ("hyperliquid")
//	"logs matched by query exceeds limit of"    | Arbitrum (Nitro)             | ponder getLogsRetryHelper.ts ("arbitrum")
//	"block range is too large" / "block range   | Optimism, Base               | ponder getLogsRetryHelper.ts ("optimism", "base")
//	too large"                                  |                              |
//	"block range is too wide"                   | Ankr (-32600), Moonbeam      | ponder getLogsRetryHelper.ts ("ankr", "moonriver")
//	"requested too many blocks from"            | Avalanche                    | ponder getLogsRetryHelper.ts ("avalanche")
//	"max range:"                                | Cloudflare                   | ponder getLogsRetryHelper.ts ("Cloudflare")
//	"maximum allowed number of requested blocks"| thirdweb                     | ponder getLogsRetryHelper.ts ("thirdweb")
//	"try with this block range"                 | Infura, zkSync               | ponder getLogsRetryHelper.ts ("infura, zksync")
//	"is limited to a"  ("... 10,000 range")     | QuickNode, 1RPC, Blast       | ponder getLogsRetryHelper.ts ("quicknode, 1rpc, blast")
//	"response size should not greater than"     | 1RPC                         | ponder getLogsRetryHelper.ts ("1rpc")
//	"backend response too large"                | Optimism                     | ponder getLogsRetryHelper.ts ("optimism")
//	"block range limit exceeded"                | Chainstack                   | ponder getLogsRetryHelper.ts ("chainstack")
//	"please limit the query to at most"         | Coinbase (Base node)         | ponder getLogsRetryHelper.ts ("coinbase")
//	"up to a" + "block range"                   | Alchemy free tier, Aurora    | ponder getLogsRetryHelper.ts ("aurora")
//	"block range greater than", "block range    | Swell, Somnia                | ponder getLogsRetryHelper.ts ("swell", "somnia")
//	exceeds"                                    |                              |
//	"query must be smaller than size"           | Harmony                      | ponder getLogsRetryHelper.ts ("harmony")
//	"limit exceeded" with code -32005           | BSC public endpoints         | tradingstrategy-ai/web3-ethereum-defi docs (troubleshooting,
//	                                            |                              | "Limits exceeded": bnb-chain/bsc issue 1215)
//
// Code -32005 is also Infura's rate limit ("daily request count exceeded,
// request rate limited"): with a text about rates it is not a log limit.
var logLimitTexts = []string{
	"exceed maximum block range",
	"query returned more than",
	"log response size exceeded",
	"query exceeds max results",
	"logs matched by query exceeds limit of",
	"block range is too large",
	"block range too large",
	"block range is too wide",
	"requested too many blocks from",
	"max range:",
	"maximum allowed number of requested blocks",
	"try with this block range",
	"is limited to a",
	"response size should not greater than",
	"backend response too large",
	"block range limit exceeded",
	"please limit the query to at most",
	"query exceeds max block range",
	"block range greater than",
	"block range exceeds",
	"query must be smaller than size",
}

// limitExceededCode is the JSON-RPC code of "limit exceeded" (EIP-1474).
const limitExceededCode = -32005

// IsLogLimit reports whether err is an eth_getLogs refusal that a smaller
// block range may cure (too many results, a response too large, a range
// too wide): the subscription processor halves its range on it.
func IsLogLimit(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	for _, t := range logLimitTexts {
		if strings.Contains(msg, t) {
			return true
		}
	}
	if strings.Contains(msg, "up to a") && strings.Contains(msg, "block range") {
		return true
	}
	var coded interface{ ErrorCode() int }
	if errors.As(err, &coded) && coded.ErrorCode() == limitExceededCode {
		return !strings.Contains(msg, "rate") && !strings.Contains(msg, "request count") &&
			!strings.Contains(msg, "too many requests")
	}
	return false
}
