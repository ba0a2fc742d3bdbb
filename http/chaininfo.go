package http

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// maxEventBlocks bounds the block range of one events query.
const maxEventBlocks = 10_000

// logFilterer is the optional part of a chain that reads logs
// (eth_getLogs); *evm.Client has it.
type logFilterer interface {
	FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error)
}

// txCounter is the optional part of a chain that counts the transactions
// of a block (eth_getBlockTransactionCountByHash); *evm.Client has it.
type txCounter interface {
	TransactionCount(ctx context.Context, blockHash common.Hash) (uint, error)
}

// contractEvents serves GET /contracts/{contractId}/events?fromBlock=&toBlock=&event=:
// the contract's logs decoded with its ABI, oldest first. fromBlock
// defaults to the registration block, toBlock to latest; a toBlock beyond
// the head is clamped to it; at most maxEventBlocks blocks per query.
func (s *Server) contractEvents(c *gin.Context) {
	ct, err := s.pathContract(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	tg, err := s.contractTarget(ct)
	if err != nil {
		s.fail(c, err)
		return
	}
	var topics [][]common.Hash
	name, err := boundedQuery(c, "event")
	if err != nil {
		s.fail(c, err)
		return
	}
	if name != "" {
		var ids []common.Hash
		for _, ev := range tg.abi.Events {
			if ev.RawName == name || ev.Sig == strings.ReplaceAll(name, " ", "") {
				ids = append(ids, ev.ID)
			}
		}
		if len(ids) == 0 {
			s.fail(c, engine.Invalid("event", "the contract's ABI has no event %q", name))
			return
		}
		topics = [][]common.Hash{ids}
	}
	from := ct.Block
	if v, set := c.GetQuery("fromBlock"); set {
		if from, err = parseBlockNumber("fromBlock", v); err != nil {
			s.fail(c, err)
			return
		}
	}
	var to *uint64
	if v, set := c.GetQuery("toBlock"); set && v != "latest" {
		n, err := parseBlockNumber("toBlock", v)
		if err != nil {
			s.fail(c, err)
			return
		}
		to = &n
	}
	filterer, canFilter := tg.network.Chain.(logFilterer)
	if !canFilter {
		s.fail(c, unavailable("network %s cannot read logs", tg.network.Name))
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.ChainTimeout)
	defer cancel()
	head, err := tg.network.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		s.fail(c, networkFailure(tg.network.Name, err))
		return
	}
	last := head.Number.Uint64()
	if to != nil && *to < last {
		last = *to
	}
	if from > last {
		if to != nil && from > *to {
			s.fail(c, engine.Invalid("fromBlock", "fromBlock %d is after toBlock %d", from, *to))
			return
		}
		ok(c, []engine.EventView{}) // the range starts after the head: nothing yet
		return
	}
	if last-from+1 > maxEventBlocks {
		s.fail(c, engine.Invalid("toBlock", "the range %d..%d spans %d blocks; at most %d blocks per query: narrow fromBlock/toBlock", from, last, last-from+1, maxEventBlocks))
		return
	}
	logs, err := filterer.FilterLogs(ctx, ethereum.FilterQuery{
		FromBlock: new(big.Int).SetUint64(from), ToBlock: new(big.Int).SetUint64(last),
		Addresses: []common.Address{ct.Address}, Topics: topics,
	})
	if err != nil {
		s.fail(c, networkFailure(tg.network.Name, err))
		return
	}
	out := make([]engine.EventView, 0, len(logs))
	for i := range logs {
		if logs[i].Removed {
			continue
		}
		if ev, decoded := engine.DecodeLog(tg.abi, &logs[i]); decoded {
			out = append(out, engine.ViewEvent(ev))
		}
	}
	ok(c, out)
}

// parseBlockNumber parses a decimal block number.
func parseBlockNumber(field, v string) (uint64, error) {
	if v == "" || strings.Trim(v, "0123456789") != "" {
		return 0, engine.Invalid(field, "%s must be a decimal block number", field)
	}
	n, err := strconv.ParseUint(v, 10, 63)
	if err != nil {
		return 0, engine.Invalid(field, "%s %s is out of range", field, v)
	}
	return n, nil
}

// blockView is the JSON form of a block header.
type blockView struct {
	Number           uint64 `json:"number"`
	Hash             string `json:"hash"`
	ParentHash       string `json:"parentHash"`
	Timestamp        string `json:"timestamp"`
	GasLimit         uint64 `json:"gasLimit"`
	GasUsed          uint64 `json:"gasUsed"`
	BaseFeePerGas    string `json:"baseFeePerGas,omitempty"`
	TransactionCount uint   `json:"transactionCount"`
	Miner            string `json:"miner"`
}

// pathNetwork returns the network of the path parameter network; unknown
// networks are not found.
func (s *Server) pathNetwork(c *gin.Context) (*engine.Network, error) {
	name := c.Param("network")
	nw, found := s.networks[name]
	if !found || nw.Chain == nil {
		return nil, notFound("network", "network %q is not configured", name)
	}
	return nw, nil
}

// latestBlock serves GET /contracts/network/{network}/block/latest.
func (s *Server) latestBlock(c *gin.Context) { s.block(c, nil) }

// blockByNumber serves GET /contracts/network/{network}/block/{number}.
func (s *Server) blockByNumber(c *gin.Context) {
	n, err := parseBlockNumber("number", c.Param("number"))
	if err != nil {
		s.fail(c, err)
		return
	}
	s.block(c, new(big.Int).SetUint64(n))
}

func (s *Server) block(c *gin.Context, number *big.Int) {
	nw, err := s.pathNetwork(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	counter, canCount := nw.Chain.(txCounter)
	if !canCount {
		s.fail(c, unavailable("network %s cannot count block transactions", nw.Name))
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.ChainTimeout)
	defer cancel()
	h, err := nw.Chain.HeaderByNumber(ctx, number)
	if errors.Is(err, ethereum.NotFound) || (err == nil && h == nil) {
		s.fail(c, notFound("number", "block %s not found on network %s (beyond the head?)", number, nw.Name))
		return
	}
	if err != nil {
		s.fail(c, networkFailure(nw.Name, err))
		return
	}
	count, err := counter.TransactionCount(ctx, h.Hash())
	if err != nil {
		s.fail(c, networkFailure(nw.Name, err))
		return
	}
	v := blockView{
		Number: h.Number.Uint64(), Hash: h.Hash().Hex(), ParentHash: h.ParentHash.Hex(),
		Timestamp: engine.FormatTime(time.Unix(int64(h.Time), 0)), GasLimit: h.GasLimit, GasUsed: h.GasUsed,
		TransactionCount: count, Miner: h.Coinbase.Hex(),
	}
	if h.BaseFee != nil {
		v.BaseFeePerGas = h.BaseFee.String()
	}
	ok(c, v)
}

// gasPriceView is the JSON form of the network's fee levels, wei strings.
type gasPriceView struct {
	GasPrice             string `json:"gasPrice"`
	MaxFeePerGas         string `json:"maxFeePerGas,omitempty"`
	MaxPriorityFeePerGas string `json:"maxPriorityFeePerGas,omitempty"`
	BaseFeePerGas        string `json:"baseFeePerGas,omitempty"`
}

// gasPrice serves GET /contracts/network/{network}/gas-price: the legacy
// gas price and, on EIP-1559 networks, the fee cap the service itself
// signs with (engine.MaxFeePerGas), the tip and the head's base fee.
func (s *Server) gasPrice(c *gin.Context) {
	nw, err := s.pathNetwork(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.ChainTimeout)
	defer cancel()
	price, err := nw.Chain.SuggestGasPrice(ctx)
	if err != nil {
		s.fail(c, networkFailure(nw.Name, err))
		return
	}
	v := gasPriceView{GasPrice: price.String()}
	head, err := nw.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		s.fail(c, networkFailure(nw.Name, err))
		return
	}
	if head.BaseFee != nil {
		tip, err := nw.Chain.SuggestGasTipCap(ctx)
		if err != nil {
			s.fail(c, networkFailure(nw.Name, fmt.Errorf("tip: %w", err)))
			return
		}
		v.BaseFeePerGas = head.BaseFee.String()
		v.MaxPriorityFeePerGas = tip.String()
		v.MaxFeePerGas = engine.MaxFeePerGas(head.BaseFee, tip).String()
	}
	ok(c, v)
}
