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
	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// chainReader is what the API reads from a network's node: heads, nonces,
// balances, fees, eth_call and its chain id (readiness). engine.BatchCall,
// engine.BalanceOf and their kin take their own narrower interfaces.
type chainReader interface {
	ChainID(ctx context.Context) (*big.Int, error)
	engine.HeaderReader
	engine.NonceReader
	engine.BalanceReader
	ethereum.GasPricer
	ethereum.GasPricer1559
}

var _ chainReader = engine.Node(nil)

// chainOf returns nw's node as the API reads it.
func chainOf(nw *engine.Network) chainReader { return nw.Chain }

// txCounter is the optional part of a chain that counts the transactions
// of a block (eth_getBlockTransactionCountByHash); *evm.Client has it.
type txCounter interface {
	TransactionCount(ctx context.Context, blockHash common.Hash) (uint, error)
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
	h, err := chainOf(nw).HeaderByNumber(ctx, number)
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
	price, err := chainOf(nw).SuggestGasPrice(ctx)
	if err != nil {
		s.fail(c, networkFailure(nw.Name, err))
		return
	}
	v := gasPriceView{GasPrice: price.String()}
	head, err := chainOf(nw).HeaderByNumber(ctx, nil)
	if err != nil {
		s.fail(c, networkFailure(nw.Name, err))
		return
	}
	if head.BaseFee != nil {
		tip, err := chainOf(nw).SuggestGasTipCap(ctx)
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
