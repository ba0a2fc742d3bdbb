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
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// txCounter is the optional part of a chain that counts the transactions
// of a block (eth_getBlockTransactionCountByHash); *evm.Client has it.
type txCounter interface {
	TransactionCount(ctx context.Context, blockHash common.Hash) (uint, error)
}

// eventsPage is the body of the paged events listing: data plus next when
// earlier events may exist.
type eventsPage struct {
	Data []engine.EventView `json:"data"`
	Next string             `json:"next,omitempty"`
}

// contractEvents serves GET /contracts/{contractId}/events?fromBlock=
// &toBlock=&event=&limit=&cursor=: the contract's logs decoded with its ABI
// (engine.ContractEvents).
//
// With fromBlock, the range fromBlock..toBlock (toBlock defaults to latest
// and is clamped to the head), oldest first, at most engine.MaxEventBlocks
// blocks. Without fromBlock, the most recent events first: from toBlock
// (or the head) back to the registration block, limit per page (default
// 100) and a next cursor while earlier events may exist. Omitting the range
// is never an error, however old the contract.
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
	q, err := eventQuery(c, tg.abi)
	if err != nil {
		s.fail(c, err)
		return
	}
	chain, canFilter := tg.network.Chain.(engine.IndexChain)
	if !canFilter {
		s.fail(c, unavailable("network %s cannot read logs", tg.network.Name))
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.ChainTimeout)
	defer cancel()
	page, err := engine.ContractEvents(ctx, chain, ct.Address, tg.abi, ct.Block, q)
	if err != nil {
		if _, coded := asEngineError(err); !coded {
			err = networkFailure(tg.network.Name, err)
		}
		s.fail(c, err)
		return
	}
	if q.From != nil {
		ok(c, page.Events)
		return
	}
	res := eventsPage{Data: page.Events}
	if page.Next != nil {
		res.Next = encodeEventCursor(*page.Next)
	}
	c.JSON(200, res)
}

// eventQuery reads the query of GET /contracts/{contractId}/events for a
// contract described by a.
func eventQuery(c *gin.Context, a *abi.ABI) (engine.EventQuery, error) {
	var q engine.EventQuery
	name, err := boundedQuery(c, "event")
	if err != nil {
		return q, err
	}
	if name != "" {
		if q.Topics, err = engine.EventTopics(a, "event", name); err != nil {
			return q, err
		}
	}
	if q.From, err = queryBlockNumber(c, "fromBlock", false); err != nil {
		return q, err
	}
	if q.To, err = queryBlockNumber(c, "toBlock", true); err != nil {
		return q, err
	}
	if q.From != nil {
		for _, p := range []string{"limit", "cursor"} {
			if _, set := c.GetQuery(p); set {
				return q, engine.Invalid(p, "%s pages the events without fromBlock (newest first); with fromBlock the range is answered whole", p)
			}
		}
		return q, nil
	}
	if q.Limit, err = queryLimit(c); err != nil {
		return q, err
	}
	if v, set := c.GetQuery("cursor"); set {
		if q.Before, err = decodeEventCursor(v); err != nil {
			return q, err
		}
	}
	return q, nil
}

// encodeEventCursor makes the opaque cursor of a position.
func encodeEventCursor(p engine.EventPos) string { return encodeLogCursor("e1", p.Block, p.Index) }

// decodeEventCursor reads a cursor of encodeEventCursor.
func decodeEventCursor(s string) (*engine.EventPos, error) {
	block, idx, err := decodeLogCursor("e1", s)
	if err != nil {
		return nil, err
	}
	return &engine.EventPos{Block: block, Index: idx}, nil
}

// queryBlockNumber reads the query parameter field as a decimal block
// number: nil when absent (or "latest", where latestOK).
func queryBlockNumber(c *gin.Context, field string, latestOK bool) (*uint64, error) {
	v, set := c.GetQuery(field)
	if !set || (latestOK && v == "latest") {
		return nil, nil
	}
	n, err := parseBlockNumber(field, v)
	if err != nil {
		return nil, err
	}
	return &n, nil
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
