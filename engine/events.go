package engine

import (
	"context"
	"math/big"
	"sort"
	"strings"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// MaxEventBlocks bounds the block range of one events query, and of each
// eth_getLogs call of a paged one.
const MaxEventBlocks = 10_000

// maxEventScanBlocks bounds the blocks one page of the recent events reads
// from the node (in queries of MaxEventBlocks): a page that meets it before
// filling ends with a next position, possibly with fewer events.
const maxEventScanBlocks = 10 * MaxEventBlocks

// EventPos is a log's position in the chain. A page of recent events holds
// the events strictly before one.
type EventPos struct {
	Block uint64
	Index uint
}

// follows reports whether p comes strictly after l: l belongs to the page
// that p bounds.
func (p EventPos) follows(l *types.Log) bool {
	return l.BlockNumber < p.Block || (l.BlockNumber == p.Block && l.Index < p.Index)
}

// EventQuery asks for the events of one contract.
type EventQuery struct {
	// Topics are the ids of the events to match (any of them); none
	// matches every event of the ABI (EventTopics makes them from a name).
	Topics []common.Hash
	// From set: the range From..To (To defaults to the head and is clamped
	// to it), oldest first, at most MaxEventBlocks blocks, answered whole.
	// From nil: the most recent events first, from To (or the head) back to
	// the contract's registration block, Limit per page, from Before.
	From, To *uint64
	Limit    int
	Before   *EventPos
}

// EventsPage is a page of decoded events; Next is set while earlier events
// may exist (paged queries only).
type EventsPage struct {
	Events []EventView
	Next   *EventPos
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

// ContractEvents reads the events of the contract at address (registered
// at block registered, described by a) as q asks, decoded with a. Logs the
// ABI does not describe and removed logs are left out. A bad range is
// invalid_argument; a node's failure is returned wrapped, uncoded.
func ContractEvents(ctx context.Context, chain IndexChain, address common.Address, a *abi.ABI, registered uint64, q EventQuery) (EventsPage, error) {
	head, err := chain.HeaderByNumber(ctx, nil)
	if err != nil {
		return EventsPage{}, err
	}
	last := head.Number.Uint64()
	if q.To != nil && *q.To < last {
		last = *q.To
	}
	fq := ethereum.FilterQuery{Addresses: []common.Address{address}}
	if len(q.Topics) > 0 {
		fq.Topics = [][]common.Hash{q.Topics}
	}
	if q.From == nil {
		return recentEvents(ctx, chain, fq, a, registered, last, q.Limit, q.Before)
	}
	from := *q.From
	if from > last {
		if q.To != nil && from > *q.To {
			return EventsPage{}, Invalid("fromBlock", "fromBlock %d is after toBlock %d", from, *q.To)
		}
		return EventsPage{Events: []EventView{}}, nil // the range starts after the head: nothing yet
	}
	if last-from+1 > MaxEventBlocks {
		return EventsPage{}, Invalid("toBlock", "the range %d..%d spans %d blocks; at most %d blocks per query: narrow fromBlock/toBlock, or omit fromBlock for the most recent events, paged", from, last, last-from+1, MaxEventBlocks)
	}
	fq.FromBlock, fq.ToBlock = new(big.Int).SetUint64(from), new(big.Int).SetUint64(last)
	logs, err := chain.FilterLogs(ctx, fq)
	if err != nil {
		return EventsPage{}, err
	}
	out := make([]EventView, 0, len(logs))
	for i := range logs {
		if ev, decoded := decodeLiveLog(a, &logs[i]); decoded {
			out = append(out, ev)
		}
	}
	return EventsPage{Events: out}, nil
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

// recentEvents reads the events of q between lower (the registration
// block) and top, newest first, strictly before before (nil: from top): it
// queries the node backwards in windows of MaxEventBlocks blocks until the
// page holds limit events, the registration block is reached, or
// maxEventScanBlocks blocks were read. Next is set while earlier events may
// exist: at the last event returned when the page is full, at the first
// block not read when the scan budget ran out.
func recentEvents(ctx context.Context, chain IndexChain, q ethereum.FilterQuery, a *abi.ABI, lower, top uint64, limit int, before *EventPos) (EventsPage, error) {
	res := EventsPage{Events: []EventView{}}
	bound := EventPos{Block: top + 1} // everything up to top
	if before != nil && before.Block <= top {
		bound = *before
		top = bound.Block
	}
	full := func() bool {
		if len(res.Events) < limit {
			return false
		}
		prev := res.Events[len(res.Events)-1]
		res.Next = &EventPos{Block: prev.BlockNumber, Index: prev.LogIndex}
		return true
	}
	var scanned uint64
	for top >= lower {
		if scanned >= maxEventScanBlocks {
			res.Next = &EventPos{Block: top + 1}
			return res, nil
		}
		start := lower
		if top-lower+1 > MaxEventBlocks {
			start = top - MaxEventBlocks + 1
		}
		q.FromBlock, q.ToBlock = new(big.Int).SetUint64(start), new(big.Int).SetUint64(top)
		logs, err := chain.FilterLogs(ctx, q)
		if err != nil {
			return EventsPage{}, err
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
			if full() { // one more exists: the next page starts after the last one returned
				return res, nil
			}
			res.Events = append(res.Events, ev)
		}
		scanned += top - start + 1
		if start == lower {
			return res, nil
		}
		top = start - 1
		bound = EventPos{Block: top + 1}
		if full() { // full at a window's edge: earlier windows may hold more
			return res, nil
		}
	}
	return res, nil
}
