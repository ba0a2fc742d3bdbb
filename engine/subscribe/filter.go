package subscribe

import (
	"slices"
	"sort"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine"
)

// Filter is a subscription's selection of logs: the contract (zero for
// deposits: any token) and the topics, position by position (an empty
// position matches any value).
type Filter struct {
	Address common.Address
	// Topics[0] holds the event's id; Topics[1..3] the accepted values of
	// its indexed arguments.
	Topics [][]common.Hash
}

// DepositFilter is the filter of a deposits subscription for the accounts
// of its owner: the Transfer logs of any contract whose recipient (topic 2)
// is one of them.
func DepositFilter(accounts []common.Address) Filter {
	to := make([]common.Hash, len(accounts))
	for i, a := range accounts {
		to[i] = common.BytesToHash(a.Bytes())
	}
	return Filter{Topics: [][]common.Hash{{engine.TransferTopic}, nil, to}}
}

// Matches reports whether l passes f.
func (f Filter) Matches(l *types.Log) bool {
	if f.Address != (common.Address{}) && l.Address != f.Address {
		return false
	}
	if len(l.Topics) < len(f.Topics) {
		return false
	}
	for i, accepted := range f.Topics {
		if len(accepted) > 0 && !slices.Contains(accepted, l.Topics[i]) {
			return false
		}
	}
	return true
}

// MaxQueryList bounds the addresses, and the values of one topic position,
// of one eth_getLogs query: nodes refuse longer lists (geth's default log
// query limit is 1,000). A union longer than that is dropped from the query
// (any value at that position), which returns more logs for the matcher to
// sort out, never fewer.
const MaxQueryList = 500

// Queries returns the eth_getLogs queries of one block range
// that together return every log one of filters can match, however many
// filters there are: one over the union of the contracts' addresses and
// event ids, and one for the filters without an address (deposits) over the
// union of their topics; a union longer than MaxQueryList is left out of
// its query. The node's answer may hold logs that no single filter matches
// (the union is wider); Matcher sorts them out.
func Queries(filters []Filter, from, to uint64) []ethereum.FilterQuery {
	var (
		addrs      = map[common.Address]bool{}
		events     = map[common.Hash]bool{}
		anyAddr    [3]map[common.Hash]bool
		anyAddrAll [3]bool
		anyAddrN   int
	)
	for _, f := range filters {
		if f.Address != (common.Address{}) {
			addrs[f.Address] = true
			if len(f.Topics) > 0 {
				for _, id := range f.Topics[0] {
					events[id] = true
				}
			}
			continue
		}
		anyAddrN++
		for i := range 3 {
			if i >= len(f.Topics) || len(f.Topics[i]) == 0 {
				anyAddrAll[i] = true
				continue
			}
			if anyAddr[i] == nil {
				anyAddr[i] = map[common.Hash]bool{}
			}
			for _, h := range f.Topics[i] {
				anyAddr[i][h] = true
			}
		}
	}
	var out []ethereum.FilterQuery
	bounds := func(q ethereum.FilterQuery) ethereum.FilterQuery {
		q.FromBlock, q.ToBlock = newUint(from), newUint(to)
		return q
	}
	if len(addrs) > 0 {
		q := ethereum.FilterQuery{Topics: [][]common.Hash{bounded(events)}}
		if len(addrs) <= MaxQueryList {
			q.Addresses = sortedKeys(addrs)
		}
		if q.Topics[0] == nil {
			q.Topics = nil
		}
		out = append(out, bounds(q))
	}
	if anyAddrN > 0 {
		topics := make([][]common.Hash, 3)
		for i := range 3 {
			if !anyAddrAll[i] {
				topics[i] = bounded(anyAddr[i])
			}
		}
		for len(topics) > 0 && len(topics[len(topics)-1]) == 0 {
			topics = topics[:len(topics)-1]
		}
		out = append(out, bounds(ethereum.FilterQuery{Topics: topics}))
	}
	return out
}

// bounded returns the members of set in order, or nil (any value) when
// they are more than MaxQueryList.
func bounded(set map[common.Hash]bool) []common.Hash {
	if len(set) > MaxQueryList {
		return nil
	}
	return sortedKeys(set)
}

// Matcher matches logs to the subscriptions of one network in memory,
// indexed by event id (topic 0).
type Matcher struct {
	byTopic map[common.Hash][]matchEntry
}

// matchEntry is one subscription of a Matcher.
type matchEntry struct {
	id     string
	filter Filter
}

// NewMatcher indexes filters by subscription id.
func NewMatcher(filters map[string]Filter) *Matcher {
	m := &Matcher{byTopic: map[common.Hash][]matchEntry{}}
	ids := make([]string, 0, len(filters))
	for id := range filters {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		f := filters[id]
		if len(f.Topics) == 0 {
			continue // matches no event: a subscription always names one
		}
		for _, t0 := range f.Topics[0] {
			m.byTopic[t0] = append(m.byTopic[t0], matchEntry{id: id, filter: f})
		}
	}
	return m
}

// Match returns the ids of the subscriptions that l belongs to, in id
// order (none for a log without topics).
func (m *Matcher) Match(l *types.Log) []string {
	if len(l.Topics) == 0 {
		return nil
	}
	var ids []string
	for _, e := range m.byTopic[l.Topics[0]] {
		if e.filter.Matches(l) {
			ids = append(ids, e.id)
		}
	}
	return ids
}

// sortedKeys returns the members of set in byte order (addresses, hashes).
func sortedKeys[K interface {
	comparable
	Cmp(K) int
}](set map[K]bool) []K {
	out := make([]K, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b K) int { return a.Cmp(b) })
	return out
}
