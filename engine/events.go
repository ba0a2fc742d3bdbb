package engine

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"strings"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// MaxEventsPage is the most events one page of a contract's events holds,
// and the default page size.
const MaxEventsPage = 1000

// Scan tuning of a page of events. A page reads the chain oldest first in
// eth_getLogs calls over block ranges ("spans") that adapt to what the
// contract emits: a span that held no log grows eightfold, one that held
// logs is resized to hold about what the page still needs, and a span the
// node refuses as too large (IsLogLimit) is halved and never grown back to
// the refused width. A contract that emitted little over a long chain is
// crossed in a few calls, a dense one is read in calls of about a page.
const (
	// initialEventSpan is the span of a first page's first call.
	initialEventSpan = 128
	// eventSpanGrowth bounds how much a span grows (or shrinks) per call.
	eventSpanGrowth = 8
	// maxEventCalls bounds the eth_getLogs calls of one page: a page that
	// meets it before filling ends with Next at the first block not read,
	// possibly with fewer events, even none (a node that caps each call at
	// a small range, far below the chain's height).
	maxEventCalls = 64
)

// EventQuery asks for a page of the events of one contract, oldest first
// (block, then log index).
type EventQuery struct {
	// Topics are the ids of the events to match (any of them); none
	// matches every event of the ABI (EventTopics makes them from a name).
	Topics []common.Hash
	// From is the first block (nil: 0, so that a contract registered after
	// it emitted events shows them too); To the last (nil: the head; beyond
	// the head: clamped to it).
	From, To *uint64
	// Limit is the most events of the page (1 to MaxEventsPage; 0:
	// MaxEventsPage).
	Limit int
	// At resumes a walk: the Next of the previous page (same Topics, From
	// and To).
	At *EventCursor
}

// EventCursor is where a page of events starts: the first event at or
// after (Block, Index), and how the scan that stopped there was reading
// the node, so that the next page goes on at the same pace.
type EventCursor struct {
	Block uint64
	Index uint
	// Span is the block range of the next eth_getLogs call (at least 1);
	// Ceiling, when not 0, the narrowest range the node refused (a span
	// stays below it).
	Span, Ceiling uint64
}

// EventsPage is a page of decoded events; Next is set while later events
// may exist within the query's range.
type EventsPage struct {
	Events []EventView
	Next   *EventCursor
	// Calls counts the eth_getLogs calls the page made, refused ones
	// included.
	Calls int
}

// EventTopics returns the ids of a's events called name: its name, or its
// full signature when the name is overloaded ("Transfer(address,address,uint256)",
// spaces ignored). An unknown event is invalid_argument on field.
func EventTopics(a *abi.ABI, field, name string) ([]common.Hash, error) {
	var ids []common.Hash
	sig := strings.ReplaceAll(name, " ", "")
	for _, ev := range a.Events {
		if ev.RawName == name || ev.Sig == sig {
			ids = append(ids, ev.ID)
		}
	}
	if len(ids) == 0 {
		return nil, Invalid(field, "the contract's ABI has no event %q", name)
	}
	return ids, nil
}

// ContractEvents reads a page of the events of the contract at address
// (described by a) as q asks, oldest first, decoded with a. Logs the ABI
// does not describe and removed logs are left out. From after To is
// invalid_argument on fromBlock; a node's failure is returned wrapped,
// uncoded.
func ContractEvents(ctx context.Context, chain IndexChain, address common.Address, a *abi.ABI, q EventQuery) (EventsPage, error) {
	if q.From != nil && q.To != nil && *q.From > *q.To {
		return EventsPage{}, Invalid("fromBlock", "fromBlock %d is after toBlock %d", *q.From, *q.To)
	}
	head, err := chain.HeaderByNumber(ctx, nil)
	if err != nil {
		return EventsPage{}, fmt.Errorf("read the head: %w", err)
	}
	last := head.Number.Uint64()
	if q.To != nil && *q.To < last {
		last = *q.To
	}
	s := eventScan{chain: chain, abi: a, limit: q.Limit, last: last, span: initialEventSpan}
	if s.limit <= 0 || s.limit > MaxEventsPage {
		s.limit = MaxEventsPage
	}
	s.fq = ethereum.FilterQuery{Addresses: []common.Address{address}}
	if len(q.Topics) > 0 {
		s.fq.Topics = [][]common.Hash{q.Topics}
	}
	if q.From != nil {
		s.start = *q.From
	}
	if at := q.At; at != nil {
		s.span, s.ceiling = max(at.Span, 1), at.Ceiling
		if at.Block >= s.start {
			s.start, s.skip = at.Block, at.Index
		}
	}
	return s.run(ctx)
}

// eventScan is the state of one page's scan: the next block to read
// (start; logs of that block below skip were returned already), the span
// of the next call and the narrowest refused one.
type eventScan struct {
	chain         IndexChain
	abi           *abi.ABI
	fq            ethereum.FilterQuery
	limit         int
	last          uint64
	start         uint64
	skip          uint
	span, ceiling uint64
	page          EventsPage
	// blocksRead and logsRead are what the page's calls covered and got.
	blocksRead, logsRead uint64
}

// run reads windows of span blocks from start until the page is full, the
// range is read, or maxEventCalls calls were made.
func (s *eventScan) run(ctx context.Context) (EventsPage, error) {
	s.page.Events = []EventView{}
	for s.start <= s.last {
		if s.page.Calls >= maxEventCalls {
			s.page.Next = s.cursor(s.start, s.skip)
			return s.page, nil
		}
		end := s.last
		if s.span-1 < end-s.start {
			end = s.start + s.span - 1
		}
		s.fq.FromBlock, s.fq.ToBlock = new(big.Int).SetUint64(s.start), new(big.Int).SetUint64(end)
		logs, err := s.chain.FilterLogs(ctx, s.fq)
		s.page.Calls++
		if err != nil {
			if IsLogLimit(err) && end > s.start { // narrower ranges may pass
				s.ceiling = end - s.start + 1
				s.span = max(s.ceiling/2, 1)
				continue
			}
			return EventsPage{}, fmt.Errorf("eth_getLogs %d..%d: %w", s.start, end, err)
		}
		block, index, full := s.take(logs)
		s.resize(end-s.start+1, len(logs))
		if full {
			s.page.Next = s.cursor(block, index)
			if index > 0 { // the next page skips part of its first block: one more block
				s.page.Next.Span++
			}
			return s.page, nil
		}
		s.start, s.skip = end+1, 0
		if len(s.page.Events) == s.limit && s.start <= s.last { // full at a window's edge
			s.page.Next = s.cursor(s.start, 0)
			return s.page, nil
		}
	}
	return s.page, nil
}

// take adds the events of logs (one window) to the page in chain order; it
// reports whether the page is full with an event left over, and where.
func (s *eventScan) take(logs []types.Log) (block uint64, index uint, full bool) {
	sort.SliceStable(logs, func(i, j int) bool { // the node's order is not trusted
		if logs[i].BlockNumber != logs[j].BlockNumber {
			return logs[i].BlockNumber < logs[j].BlockNumber
		}
		return logs[i].Index < logs[j].Index
	})
	for i := range logs {
		l := &logs[i]
		if l.BlockNumber < s.start || l.BlockNumber > s.last || (l.BlockNumber == s.start && l.Index < s.skip) {
			continue
		}
		ev, decoded := decodeLiveLog(s.abi, l)
		if !decoded {
			continue
		}
		if len(s.page.Events) == s.limit {
			return l.BlockNumber, l.Index, true
		}
		s.page.Events = append(s.page.Events, ev)
	}
	return 0, 0, false
}

// resize sets the span of the next call from the last one's (width blocks
// that held n logs): about what the page still needs (a whole page once
// it is full) at the density the page has seen so far, an eighth more
// (densities vary: a window that falls short costs a round trip more),
// within eventSpanGrowth of width, below the ceiling.
func (s *eventScan) resize(width uint64, n int) {
	s.blocksRead += width
	s.logsRead += uint64(n)
	need := uint64(s.limit - len(s.page.Events))
	if need == 0 {
		need = uint64(s.limit)
	}
	next := width * eventSpanGrowth
	if s.logsRead > 0 {
		fit := (s.blocksRead*need + s.logsRead - 1) / s.logsRead // rounded up
		fit += fit / 8
		next = min(max(fit, width/eventSpanGrowth), next)
	}
	if s.ceiling > 0 && next >= s.ceiling {
		next = s.ceiling - 1
	}
	s.span = max(next, 1)
}

// cursor is the position (block, index) with the scan's pace.
func (s *eventScan) cursor(block uint64, index uint) *EventCursor {
	return &EventCursor{Block: block, Index: index, Span: s.span, Ceiling: s.ceiling}
}

// decodeLiveLog decodes l with the contract's ABI; removed logs and logs
// the ABI does not describe are not events.
func decodeLiveLog(a *abi.ABI, l *types.Log) (EventView, bool) {
	if l.Removed {
		return EventView{}, false
	}
	ev, decoded := DecodeLog(a, l)
	if !decoded {
		return EventView{}, false
	}
	return ViewEvent(ev), true
}
