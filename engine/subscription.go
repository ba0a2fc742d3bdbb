package engine

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/txengine/txengine/engine/abicodec"
)

// Event subscriptions (issue 19): the kinds, and the topics of an events
// subscription's filters, computed when it is created. The subscription,
// its deliveries and the store contracts are in substore.go; the processor
// that reads the logs and delivers them is package engine/subscribe.

// Subscription kinds.
const (
	SubscriptionEvents   = "events"
	SubscriptionDeposits = "deposits"
)

// maxFilterValues bounds the values one indexed argument's filter lists.
const maxFilterValues = 100

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
