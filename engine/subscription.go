package engine

import (
	"encoding/json"
	"math/big"
	"slices"
	"sort"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/txengine/txengine/engine/abicodec"
)

// Event subscriptions (issue 19, in progress): the domain part that does not
// depend on the store or the API. A subscription is a standing request for
// the logs of one event of one contract (kind events), or for the ERC-20
// Transfer logs of any token whose recipient is one of the owner's accounts
// (kind deposits). Each network's watcher reads the logs of a block once,
// with the queries of SubscriptionQueries (the union of every
// subscription's addresses and topics), and matches them in memory
// (SubscriptionMatcher), whatever the number of subscriptions.

// Subscription kinds.
const (
	SubscriptionEvents   = "events"
	SubscriptionDeposits = "deposits"
)

// maxFilterValues bounds the values one indexed argument's filter lists.
const maxFilterValues = 100

// SubscriptionFilter is a subscription's selection of logs: the contract
// (zero for deposits: any token) and the topics, position by position (an
// empty position matches any value).
type SubscriptionFilter struct {
	Address common.Address
	// Topics[0] holds the event's id; Topics[1..3] the accepted values of
	// its indexed arguments.
	Topics [][]common.Hash
}

// EventFilterTopics returns the topics that select event ev with filters:
// an indexed argument's name to a value or a list of values (JSON, as a
// call's arguments are written; strings and bytes are matched by their
// hash, as the log holds them). An unknown or non-indexed argument, a value
// of the wrong type and an empty or too long list are invalid_argument on
// field filters.<name>.
func EventFilterTopics(ev *abi.Event, filters map[string]json.RawMessage) ([][]common.Hash, error) {
	topics := [][]common.Hash{{ev.ID}}
	if len(filters) == 0 {
		return topics, nil
	}
	names := make([]string, 0, len(filters))
	for name := range filters {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !slices.ContainsFunc(ev.Inputs, func(a abi.Argument) bool { return a.Indexed && a.Name == name }) {
			return nil, Invalid("filters."+name, "event %s has no indexed argument %q (filters select indexed arguments only)", ev.Sig, name)
		}
	}
	query := make([][]any, 0, 3)
	for _, in := range ev.Inputs {
		if !in.Indexed {
			continue
		}
		raw, ok := filters[in.Name]
		if !ok {
			query = append(query, nil)
			continue
		}
		values, err := filterValues(in, raw)
		if err != nil {
			return nil, err
		}
		query = append(query, values)
	}
	rest, err := abi.MakeTopics(query...)
	if err != nil {
		return nil, Invalid("filters", "the filters of event %s do not encode: %v", ev.Sig, err)
	}
	topics = append(topics, rest...)
	// Trailing positions that accept anything are left out: the node then
	// matches logs with fewer topics too (anonymous arguments never are).
	for len(topics) > 1 && len(topics[len(topics)-1]) == 0 {
		topics = topics[:len(topics)-1]
	}
	return topics, nil
}

// filterValues decodes the filter of indexed argument in: one value or a
// list of them.
func filterValues(in abi.Argument, raw json.RawMessage) ([]any, error) {
	field := "filters." + in.Name
	switch in.Type.T {
	case abi.SliceTy, abi.ArrayTy, abi.TupleTy:
		return nil, Invalid(field, "filtering on an indexed %s is not supported (the log holds only its hash)", in.Type.String())
	}
	var list []json.RawMessage
	if len(raw) > 0 && raw[0] == '[' {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, Invalid(field, "not a JSON list: %v", err)
		}
		if len(list) == 0 || len(list) > maxFilterValues {
			return nil, Invalid(field, "a list of 1 to %d values is required, got %d", maxFilterValues, len(list))
		}
	} else {
		list = []json.RawMessage{raw}
	}
	out := make([]any, len(list))
	for i, v := range list {
		goValue, _, err := abicodec.FromJSON(in.Type, v, field)
		if err != nil {
			return nil, CodecError(err)
		}
		out[i] = goValue.Interface()
	}
	return out, nil
}

// DepositFilter is the filter of a deposits subscription for the accounts
// of its owner: the Transfer logs of any contract whose recipient (topic 2)
// is one of them.
func DepositFilter(accounts []common.Address) SubscriptionFilter {
	to := make([]common.Hash, len(accounts))
	for i, a := range accounts {
		to[i] = common.BytesToHash(a.Bytes())
	}
	return SubscriptionFilter{Topics: [][]common.Hash{{TransferTopic}, nil, to}}
}

// Matches reports whether l passes f.
func (f SubscriptionFilter) Matches(l *types.Log) bool {
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

// SubscriptionQueries returns the eth_getLogs queries of one block range
// that together return every log one of filters can match, however many
// filters there are: one over the union of the contracts' addresses and
// event ids, and one for the filters without an address (deposits) over the
// union of their topics; a union longer than MaxQueryList is left out of
// its query. The node's answer may hold logs that no single filter matches
// (the union is wider); SubscriptionMatcher sorts them out.
func SubscriptionQueries(filters []SubscriptionFilter, from, to uint64) []ethereum.FilterQuery {
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

// SubscriptionMatcher matches logs to the subscriptions of one network in
// memory, indexed by event id (topic 0).
type SubscriptionMatcher struct {
	byTopic map[common.Hash][]matchEntry
}

// matchEntry is one subscription of a SubscriptionMatcher.
type matchEntry struct {
	id     string
	filter SubscriptionFilter
}

// NewSubscriptionMatcher indexes filters by subscription id.
func NewSubscriptionMatcher(filters map[string]SubscriptionFilter) *SubscriptionMatcher {
	m := &SubscriptionMatcher{byTopic: map[common.Hash][]matchEntry{}}
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
func (m *SubscriptionMatcher) Match(l *types.Log) []string {
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

// newUint returns v as a block number of a query.
func newUint(v uint64) *big.Int { return new(big.Int).SetUint64(v) }

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
