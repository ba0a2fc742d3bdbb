package engine

import (
	"encoding/json"
	"errors"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/txengine/txengine/engine/abicodec"
)

const subscriptionTestABI = `[
 {"type":"event","name":"Transfer","inputs":[
  {"name":"from","type":"address","indexed":true},{"name":"to","type":"address","indexed":true},
  {"name":"value","type":"uint256","indexed":false}]},
 {"type":"event","name":"Named","inputs":[
  {"name":"label","type":"string","indexed":true},{"name":"id","type":"uint64","indexed":true},
  {"name":"ok","type":"bool","indexed":true}]},
 {"type":"event","name":"Listed","inputs":[{"name":"ids","type":"uint256[]","indexed":true}]}
]`

func subscriptionTestEvent(t *testing.T, name string) *abi.Event {
	t.Helper()
	a, err := abicodec.ParseABI([]byte(subscriptionTestABI))
	if err != nil {
		t.Fatal(err)
	}
	ev, ok := a.Events[name]
	if !ok {
		t.Fatalf("no event %s", name)
	}
	return &ev
}

func addrTopic(a common.Address) common.Hash { return common.BytesToHash(a.Bytes()) }

// TestEventFilterTopics: filters on indexed arguments become the topics the
// log holds (addresses padded, strings hashed, lists OR'ed, positions left
// open where no filter is given); anything else is a 400 on its field.
func TestEventFilterTopics(t *testing.T) {
	transfer := subscriptionTestEvent(t, "Transfer")
	a1 := common.HexToAddress("0x52908400098527886E0F7030069857D2E4169EE7")
	a2 := common.HexToAddress("0x8617E340B3D01FA5F11F306F4090FD50E238070D")
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }

	got, err := EventFilterTopics(transfer, nil)
	if err != nil || len(got) != 1 || got[0][0] != TransferTopic {
		t.Fatalf("no filters: %v, %v", got, err)
	}
	got, err = EventFilterTopics(transfer, map[string]json.RawMessage{"to": raw(`"` + a1.Hex() + `"`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(got[1]) != 0 || len(got[2]) != 1 || got[2][0] != addrTopic(a1) {
		t.Fatalf("to filter: %v", got)
	}
	got, err = EventFilterTopics(transfer, map[string]json.RawMessage{"from": raw(`["` + a1.Hex() + `","` + a2.Hex() + `"]`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !slices.Equal(got[1], []common.Hash{addrTopic(a1), addrTopic(a2)}) {
		t.Fatalf("from list: %v", got)
	}

	named := subscriptionTestEvent(t, "Named")
	got, err = EventFilterTopics(named, map[string]json.RawMessage{"label": raw(`"gold"`), "ok": raw(`true`)})
	if err != nil {
		t.Fatal(err)
	}
	if got[1][0] != crypto.Keccak256Hash([]byte("gold")) || len(got[2]) != 0 || got[3][0] != common.BigToHash(common.Big1) {
		t.Fatalf("string and bool: %v", got)
	}

	for _, c := range []struct {
		ev      *abi.Event
		filters map[string]json.RawMessage
		field   string
	}{
		{transfer, map[string]json.RawMessage{"nobody": raw(`1`)}, "filters.nobody"},
		{transfer, map[string]json.RawMessage{"value": raw(`"1"`)}, "filters.value"},
		{transfer, map[string]json.RawMessage{"to": raw(`"0x12"`)}, "filters.to"},
		{transfer, map[string]json.RawMessage{"to": raw(`[]`)}, "filters.to"},
		{transfer, map[string]json.RawMessage{"to": raw(`[1,`)}, "filters.to"},
		{named, map[string]json.RawMessage{"id": raw(`-1`)}, "filters.id"},
		{subscriptionTestEvent(t, "Listed"), map[string]json.RawMessage{"ids": raw(`[1]`)}, "filters.ids"},
	} {
		_, err := EventFilterTopics(c.ev, c.filters)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidArgument || e.Field != c.field {
			t.Errorf("%s %v: %v, want invalid_argument on %s", c.ev.Name, c.filters, err, c.field)
		}
	}
}

// queryAccepts is a node's eth_getLogs filter semantics: any listed
// address, and at each topic position any listed value (none: any).
func queryAccepts(q ethereum.FilterQuery, l *types.Log) bool {
	if len(q.Addresses) > 0 && !slices.Contains(q.Addresses, l.Address) {
		return false
	}
	for i, accepted := range q.Topics {
		if len(accepted) == 0 {
			continue
		}
		if i >= len(l.Topics) || !slices.Contains(accepted, l.Topics[i]) {
			return false
		}
	}
	return true
}

// TestSubscriptionQueriesCoverEveryMatch: for many subscriptions (events of
// a few contracts, filtered or not, and deposits), the queries are at most
// two whatever their number, every log a subscription matches is returned
// by one of them, and the matcher finds exactly the subscriptions whose
// filter accepts the log.
func TestSubscriptionQueriesCoverEveryMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	contracts := []common.Address{common.HexToAddress("0xaa"), common.HexToAddress("0xbb"), common.HexToAddress("0xcc")}
	accounts := make([]common.Address, 6)
	for i := range accounts {
		accounts[i] = common.BigToAddress(big.NewInt(int64(1000 + i)))
	}
	other := crypto.Keccak256Hash([]byte("Other(address)"))
	filters := map[string]SubscriptionFilter{}
	for i := range 300 {
		id := string(rune('a'+i%26)) + string(rune('a'+i/26))
		switch i % 3 {
		case 0:
			filters[id] = DepositFilter(accounts[rng.IntN(3):][:2])
		case 1:
			filters[id] = SubscriptionFilter{Address: contracts[rng.IntN(3)], Topics: [][]common.Hash{{TransferTopic}}}
		default:
			filters[id] = SubscriptionFilter{Address: contracts[rng.IntN(2)], Topics: [][]common.Hash{{other}, {addrTopic(accounts[rng.IntN(6)])}}}
		}
	}
	list := make([]SubscriptionFilter, 0, len(filters))
	for _, f := range filters {
		list = append(list, f)
	}
	queries := SubscriptionQueries(list, 7, 7)
	if len(queries) != 2 {
		t.Fatalf("%d queries for %d subscriptions, want 2", len(queries), len(filters))
	}
	for _, q := range queries {
		if q.FromBlock.Uint64() != 7 || q.ToBlock.Uint64() != 7 {
			t.Fatalf("query range %v..%v", q.FromBlock, q.ToBlock)
		}
	}
	m := NewSubscriptionMatcher(filters)
	anyAddr := append(slices.Clone(contracts), common.HexToAddress("0xdd"))
	matched := 0
	for range 5000 {
		l := &types.Log{
			Address: anyAddr[rng.IntN(len(anyAddr))],
			Topics:  []common.Hash{[]common.Hash{TransferTopic, other}[rng.IntN(2)], addrTopic(accounts[rng.IntN(6)])},
		}
		if rng.IntN(2) == 0 {
			l.Topics = append(l.Topics, addrTopic(accounts[rng.IntN(6)]))
		}
		var want []string
		for id, f := range filters {
			if f.Matches(l) {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		got := m.Match(l)
		if !slices.Equal(got, want) {
			t.Fatalf("log %v: matcher %v, want %v", l.Topics, got, want)
		}
		if len(want) > 0 {
			matched++
			if !slices.ContainsFunc(queries, func(q ethereum.FilterQuery) bool { return queryAccepts(q, l) }) {
				t.Fatalf("log %s %v matches %v but no query returns it: %+v", l.Address, l.Topics, want, queries)
			}
		}
	}
	if matched < 500 {
		t.Fatalf("only %d of 5000 random logs matched a subscription: the test does not exercise the matcher", matched)
	}
}

// TestDepositFilter: a deposit is a Transfer to one of the accounts, from
// any contract; a transfer from them, or another event, is not.
func TestDepositFilter(t *testing.T) {
	mine := common.HexToAddress("0x1111")
	f := DepositFilter([]common.Address{mine})
	in := &types.Log{Address: common.HexToAddress("0x99"), Topics: []common.Hash{TransferTopic, addrTopic(common.HexToAddress("0x22")), addrTopic(mine)}}
	out := &types.Log{Address: in.Address, Topics: []common.Hash{TransferTopic, addrTopic(mine), addrTopic(common.HexToAddress("0x22"))}}
	short := &types.Log{Address: in.Address, Topics: []common.Hash{TransferTopic}}
	approval := &types.Log{Address: in.Address, Topics: []common.Hash{crypto.Keccak256Hash([]byte("Approval(address,address,uint256)")), in.Topics[1], in.Topics[2]}}
	if !f.Matches(in) || f.Matches(out) || f.Matches(short) || f.Matches(approval) {
		t.Fatalf("deposit filter: in %v out %v short %v approval %v", f.Matches(in), f.Matches(out), f.Matches(short), f.Matches(approval))
	}
}

// TestSubscriptionQueriesBoundLists: a union longer than MaxQueryList
// (addresses, event ids, deposit recipients) is left out of its query, so
// no node refuses it, and every matching log is still returned.
func TestSubscriptionQueriesBoundLists(t *testing.T) {
	var list []SubscriptionFilter
	var accounts []common.Address
	for i := range MaxQueryList + 1 {
		a := common.BigToAddress(big.NewInt(int64(5000 + i)))
		accounts = append(accounts, a)
		list = append(list, SubscriptionFilter{Address: a, Topics: [][]common.Hash{{crypto.Keccak256Hash(a.Bytes())}}})
	}
	list = append(list, DepositFilter(accounts))
	queries := SubscriptionQueries(list, 1, 1)
	if len(queries) != 2 {
		t.Fatalf("%d queries, want 2", len(queries))
	}
	for _, q := range queries {
		if len(q.Addresses) > MaxQueryList {
			t.Fatalf("a query lists %d addresses", len(q.Addresses))
		}
		for i, pos := range q.Topics {
			if len(pos) > MaxQueryList {
				t.Fatalf("a query lists %d values at topic %d", len(pos), i)
			}
		}
	}
	last := accounts[MaxQueryList]
	for _, l := range []*types.Log{
		{Address: last, Topics: []common.Hash{crypto.Keccak256Hash(last.Bytes())}},
		{Address: common.HexToAddress("0xfeed"), Topics: []common.Hash{TransferTopic, addrTopic(last), addrTopic(last)}},
	} {
		if !slices.ContainsFunc(queries, func(q ethereum.FilterQuery) bool { return queryAccepts(q, l) }) {
			t.Fatalf("log %s %v matches a subscription but no query returns it: %+v", l.Address, l.Topics, queries)
		}
	}
	// Within the bounds, the lists are kept.
	small := SubscriptionQueries(list[:3], 1, 1)
	if len(small) != 1 || len(small[0].Addresses) != 3 || len(small[0].Topics) != 1 || len(small[0].Topics[0]) != 3 {
		t.Fatalf("queries of 3 subscriptions: %+v", small)
	}
}
