package http

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
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

// maxEventScanBlocks bounds the blocks one page of the recent events reads
// from the node (in queries of maxEventBlocks): a page that meets it before
// filling ends with a next cursor, possibly with fewer events.
const maxEventScanBlocks = 10 * maxEventBlocks

// eventsPage is the body of the paged events listing: data plus next when
// earlier events may exist.
type eventsPage struct {
	Data []engine.EventView `json:"data"`
	Next string             `json:"next,omitempty"`
}

// contractEvents serves GET /contracts/{contractId}/events?fromBlock=
// &toBlock=&event=&limit=&cursor=: the contract's logs decoded with its ABI.
//
// With fromBlock, the range fromBlock..toBlock (toBlock defaults to latest
// and is clamped to the head), oldest first, at most maxEventBlocks blocks.
// Without fromBlock, the most recent events first: from toBlock (or the
// head) back to the registration block, limit per page (default 100) and a
// next cursor while earlier events may exist (recentEvents). Omitting the
// range is never an error, however old the contract.
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
	fromArg, ranged := c.GetQuery("fromBlock")
	var from uint64
	if ranged {
		if from, err = parseBlockNumber("fromBlock", fromArg); err != nil {
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
	var page eventPaging
	if ranged {
		for _, p := range []string{"limit", "cursor"} {
			if _, set := c.GetQuery(p); set {
				s.fail(c, engine.Invalid(p, "%s pages the events without fromBlock (newest first); with fromBlock the range is answered whole", p))
				return
			}
		}
	} else {
		if page.limit, err = queryLimit(c); err != nil {
			s.fail(c, err)
			return
		}
		if v, set := c.GetQuery("cursor"); set {
			if page.before, err = decodeEventCursor(v); err != nil {
				s.fail(c, err)
				return
			}
		}
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
	q := ethereum.FilterQuery{Addresses: []common.Address{ct.Address}, Topics: topics}
	if !ranged {
		res, err := recentEvents(ctx, filterer, q, tg.abi, ct.Block, last, page)
		if err != nil {
			s.fail(c, networkFailure(tg.network.Name, err))
			return
		}
		c.JSON(200, res)
		return
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
		s.fail(c, engine.Invalid("toBlock", "the range %d..%d spans %d blocks; at most %d blocks per query: narrow fromBlock/toBlock, or omit fromBlock for the most recent events, paged", from, last, last-from+1, maxEventBlocks))
		return
	}
	q.FromBlock, q.ToBlock = new(big.Int).SetUint64(from), new(big.Int).SetUint64(last)
	logs, err := filterer.FilterLogs(ctx, q)
	if err != nil {
		s.fail(c, networkFailure(tg.network.Name, err))
		return
	}
	out := make([]engine.EventView, 0, len(logs))
	for i := range logs {
		if ev, decoded := decodeLiveLog(tg.abi, &logs[i]); decoded {
			out = append(out, ev)
		}
	}
	ok(c, out)
}

// decodeLiveLog decodes l with the contract's ABI; removed logs and logs
// the ABI does not describe are not events.
func decodeLiveLog(a *abi.ABI, l *types.Log) (engine.EventView, bool) {
	if l.Removed {
		return engine.EventView{}, false
	}
	ev, decoded := engine.DecodeLog(a, l)
	if !decoded {
		return engine.EventView{}, false
	}
	return engine.ViewEvent(ev), true
}

// eventPos is a log's position in the chain: the paged listing's cursor
// says "the events strictly before this position".
type eventPos struct {
	block uint64
	index uint
}

// follows reports whether p comes strictly after l: l belongs to the page
// that p bounds.
func (p eventPos) follows(l *types.Log) bool {
	return l.BlockNumber < p.block || (l.BlockNumber == p.block && l.Index < p.index)
}

// eventPaging is the page asked of recentEvents.
type eventPaging struct {
	limit  int
	before *eventPos // nil: from the top
}

// recentEvents reads the events of q between lower (the registration
// block) and top, newest first: it queries the node backwards in windows of
// maxEventBlocks blocks until the page holds limit events, the registration
// block is reached, or maxEventScanBlocks blocks were read. Next is set
// while earlier events may exist: at the last event returned when the page
// is full, at the first block not read when the scan budget ran out.
func recentEvents(ctx context.Context, f logFilterer, q ethereum.FilterQuery, a *abi.ABI, lower, top uint64, page eventPaging) (eventsPage, error) {
	res := eventsPage{Data: []engine.EventView{}}
	bound := eventPos{block: top + 1} // everything up to top
	if page.before != nil && page.before.block <= top {
		bound = *page.before
		top = bound.block
	}
	var scanned uint64
	for top >= lower {
		if scanned >= maxEventScanBlocks {
			res.Next = encodeEventCursor(eventPos{block: top + 1})
			return res, nil
		}
		start := lower
		if top-lower+1 > maxEventBlocks {
			start = top - maxEventBlocks + 1
		}
		q.FromBlock, q.ToBlock = new(big.Int).SetUint64(start), new(big.Int).SetUint64(top)
		logs, err := f.FilterLogs(ctx, q)
		if err != nil {
			return eventsPage{}, err
		}
		sort.SliceStable(logs, func(i, j int) bool {
			if logs[i].BlockNumber != logs[j].BlockNumber {
				return logs[i].BlockNumber > logs[j].BlockNumber
			}
			return logs[i].Index > logs[j].Index
		})
		for i := range logs {
			if !bound.follows(&logs[i]) {
				continue
			}
			ev, decoded := decodeLiveLog(a, &logs[i])
			if !decoded {
				continue
			}
			if len(res.Data) == page.limit {
				// One more exists: the next page starts after the last one returned.
				prev := res.Data[len(res.Data)-1]
				res.Next = encodeEventCursor(eventPos{block: prev.BlockNumber, index: prev.LogIndex})
				return res, nil
			}
			res.Data = append(res.Data, ev)
		}
		scanned += top - start + 1
		if start == lower {
			return res, nil
		}
		top = start - 1
		bound = eventPos{block: top + 1}
		if len(res.Data) == page.limit {
			// Full at a window's edge: earlier windows may hold more.
			prev := res.Data[len(res.Data)-1]
			res.Next = encodeEventCursor(eventPos{block: prev.BlockNumber, index: prev.LogIndex})
			return res, nil
		}
	}
	return res, nil
}

// encodeEventCursor makes the opaque cursor of a position.
func encodeEventCursor(p eventPos) string { return encodeLogCursor("e1", p.block, p.index) }

// decodeEventCursor reads a cursor of encodeEventCursor.
func decodeEventCursor(s string) (*eventPos, error) {
	block, idx, err := decodeLogCursor("e1", s)
	if err != nil {
		return nil, err
	}
	return &eventPos{block: block, index: idx}, nil
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
