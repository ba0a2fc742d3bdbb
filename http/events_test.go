package http

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/engine"
)

// eventsABI describes a contract with two events.
const eventsABI = `[
 {"type":"event","name":"Transfer","anonymous":false,"inputs":[{"name":"from","type":"address","indexed":true},{"name":"to","type":"address","indexed":true},{"name":"value","type":"uint256","indexed":false}]},
 {"type":"event","name":"Approval","anonymous":false,"inputs":[{"name":"owner","type":"address","indexed":true},{"name":"spender","type":"address","indexed":true},{"name":"value","type":"uint256","indexed":false}]}
]`

// evPos is an event's place in the chain.
type evPos struct {
	block uint64
	index uint
}

// eventsFixture is a contract registered at block reg with its logs on a
// richChain.
type eventsFixture struct {
	e    *contractEnv
	id   string
	addr common.Address
}

func newEventsFixture(t *testing.T, reg uint64) *eventsFixture {
	e := newContractEnv(t)
	addr := common.HexToAddress("0x00000000000000000000000000000000000e0e01")
	rec := e.req("PUT", "/contracts", "/contracts", e.aliceToken,
		`{"name":"Evented","network":"dev","address":"`+addr.Hex()+`","abi":`+eventsABI+`}`)
	wantStatus(t, rec, 201)
	var ct contractView
	decodeData(t, rec, &ct)
	e.store.exec(t, `UPDATE contracts SET block = ? WHERE id = ?`, reg, ct.ID)
	return &eventsFixture{e: e, id: ct.ID, addr: addr}
}

// add puts a log of event ("Transfer", "Approval" or "Other", which the
// ABI does not describe) at p; its value is the block number.
func (f *eventsFixture) add(event string, p evPos) {
	topic := crypto.Keccak256Hash([]byte(event + "(address,address,uint256)"))
	f.e.rich.logs = append(f.e.rich.logs, types.Log{
		Address: f.addr, BlockNumber: p.block, Index: p.index,
		Topics: []common.Hash{topic, common.BytesToHash(f.e.aliceAcct.Address.Bytes()), common.BytesToHash(f.e.bobAcct.Address.Bytes())},
		Data:   common.LeftPadBytes(new(big.Int).SetUint64(p.block).Bytes(), 32),
	})
}

type eventsBody struct {
	Data []engine.EventView `json:"data"`
	Next string             `json:"next"`
}

func (f *eventsFixture) get(t *testing.T, query string) eventsBody {
	t.Helper()
	rec := f.e.req("GET", "/contracts/{contractId}/events", "/contracts/"+f.id+"/events"+query, f.e.aliceToken, "")
	wantStatus(t, rec, 200)
	var b eventsBody
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatalf("GET events%s: %v", query, err)
	}
	return b
}

// walk follows next from the page of query; it returns the positions read
// and the number of pages.
func (f *eventsFixture) walk(t *testing.T, query string) ([]evPos, int) {
	t.Helper()
	var got []evPos
	b := f.get(t, query)
	for pages := 1; ; pages++ {
		for _, ev := range b.Data {
			got = append(got, evPos{ev.BlockNumber, ev.LogIndex})
		}
		if b.Next == "" {
			return got, pages
		}
		if pages > 5000 {
			t.Fatalf("GET events%s: more than 5,000 pages", query)
		}
		sep := "?"
		if query != "" {
			sep = "&"
		}
		b = f.get(t, query+sep+"cursor="+b.Next)
	}
}

// TestEventsAllOldestFirst: a call with no query returns every event of
// the contract, those before its registration block too, oldest first
// (block, then log index; the node's order is not trusted), in one page
// without next, over a long chain in a few node calls.
func TestEventsAllOldestFirst(t *testing.T) {
	f := newEventsFixture(t, 40_000)
	f.e.rich.head = 50_000
	var want []evPos
	for b := uint64(10); b <= 48_000; b += 97 { // 495 blocks with events, from far before the registration
		for i := uint(0); i < 2; i++ {
			want = append(want, evPos{b, i})
		}
	}
	for i := len(want) - 1; i >= 0; i-- { // newest first, as a node never answers, on purpose
		f.add("Transfer", want[i])
	}
	f.add("Other", evPos{20, 5}) // not in the ABI: left out
	f.e.rich.filterCalls = 0
	b := f.get(t, "")
	got := make([]evPos, 0, len(b.Data))
	for _, ev := range b.Data {
		got = append(got, evPos{ev.BlockNumber, ev.LogIndex})
	}
	if !slices.Equal(got, want) || b.Next != "" {
		t.Fatalf("no query: %d events (first %v), next %q; want %d oldest first from %v, no next", len(got), got[:min(3, len(got))], b.Next, len(want), want[0])
	}
	if b.Data[0].Event != "Transfer" || b.Data[0].ReturnValues["value"] != "10" {
		t.Fatalf("first event: %+v", b.Data[0])
	}
	t.Logf("%d eth_getLogs calls, widest %d", f.e.rich.filterCalls, f.e.rich.widest)
	if f.e.rich.filterCalls > 12 {
		t.Fatalf("%d eth_getLogs calls for one page over 50,000 blocks; want at most 12", f.e.rich.filterCalls)
	}
}

// TestEventsPagedExactlyOnce: pages follow next until every event was
// returned exactly once in chain order, whatever the page size (pages cut
// inside a block and at a window's edge), and combine with fromBlock,
// toBlock and event; a page of 1,000 by default.
func TestEventsPagedExactlyOnce(t *testing.T) {
	f := newEventsFixture(t, 5)
	f.e.rich.head = 30_000
	var all, transfers []evPos
	for b := uint64(0); b < 30_000; b += 7 {
		n := uint(1 + b%3)
		for i := uint(0); i < n; i++ {
			p := evPos{b, i}
			all = append(all, p)
			if (b+uint64(i))%4 == 0 {
				f.add("Approval", p)
				continue
			}
			transfers = append(transfers, p)
			f.add("Transfer", p)
		}
	}
	if len(all) < 8_000 {
		t.Fatalf("fixture: %d events", len(all))
	}
	between := func(ps []evPos, from, to uint64) []evPos {
		var out []evPos
		for _, p := range ps {
			if p.block >= from && p.block <= to {
				out = append(out, p)
			}
		}
		return out
	}
	for _, tt := range []struct {
		query string
		want  []evPos
		pages int // 0: not checked
	}{
		{"", all, (len(all) + 999) / 1000},
		{"?limit=1000", all, (len(all) + 999) / 1000},
		{"?limit=333", all, 0},
		{"?limit=2&toBlock=100", between(all, 0, 100), 0},
		{"?toBlock=12000", between(all, 0, 12_000), 0},
		{"?fromBlock=7001&toBlock=21000&limit=250", between(all, 7_001, 21_000), 0},
		{"?fromBlock=29000&toBlock=99999999", between(all, 29_000, 30_000), 1},
		{"?event=Transfer&limit=777", transfers, 0},
		{"?event=Transfer(address,address,uint256)&toBlock=latest", transfers, 0},
		{"?fromBlock=30001", nil, 1},
	} {
		got, pages := f.walk(t, tt.query)
		if !slices.Equal(got, tt.want) {
			t.Fatalf("walk %q: %d events, want %d (exactly once, in order)", tt.query, len(got), len(tt.want))
		}
		if tt.pages > 0 && pages != tt.pages {
			t.Fatalf("walk %q: %d pages, want %d", tt.query, pages, tt.pages)
		}
	}
	if b := f.get(t, ""); len(b.Data) != 1000 || b.Next == "" {
		t.Fatalf("default page: %d events, next %q; want 1,000 and next", len(b.Data), b.Next)
	}
}

// TestEventsNodeLimits: a node that refuses wide ranges, or ranges of many
// logs, still gives every event in order (the range is halved); a node
// whose range limit is far below the chain's height gives pages that end
// after a bounded number of calls with next, possibly empty, and the walk
// still finds every event.
func TestEventsNodeLimits(t *testing.T) {
	f := newEventsFixture(t, 0)
	f.e.rich.head = 20_000
	var want []evPos
	for b := uint64(1); b <= 20_000; b += 3 {
		want = append(want, evPos{b, 0}, evPos{b, 1})
		f.add("Transfer", evPos{b, 0})
		f.add("Approval", evPos{b, 1})
	}
	f.e.rich.maxResults = 150
	if got, _ := f.walk(t, ""); !slices.Equal(got, want) {
		t.Fatalf("results capped at 150: %d events, want %d", len(got), len(want))
	}
	f.e.rich.maxResults, f.e.rich.maxRange = 0, 1000
	if got, _ := f.walk(t, "?limit=500"); !slices.Equal(got, want) {
		t.Fatalf("ranges capped at 1,000 blocks: %d events, want %d", len(got), len(want))
	}

	f.e.rich.logs = nil
	f.e.rich.head, f.e.rich.maxRange = 1_000_000, 100
	f.add("Transfer", evPos{999_000, 0})
	f.e.rich.filterCalls = 0
	first := f.get(t, "")
	if len(first.Data) != 0 || first.Next == "" || f.e.rich.filterCalls > 64 {
		t.Fatalf("first page of a sparse contract under a 100-block range limit: %d events, next %q, %d calls", len(first.Data), first.Next, f.e.rich.filterCalls)
	}
	if got, _ := f.walk(t, ""); !slices.Equal(got, []evPos{{999_000, 0}}) {
		t.Fatalf("walk under a 100-block range limit: %v", got)
	}
}

// TestEventsBadInput: bad parameters are 400 naming the parameter.
func TestEventsBadInput(t *testing.T) {
	f := newEventsFixture(t, 0)
	f.e.rich.head = 100
	f.add("Transfer", evPos{1, 0})
	old := base64.RawURLEncoding.EncodeToString([]byte("e1:5:0")) // the newest-first listing's
	zeroSpan := base64.RawURLEncoding.EncodeToString([]byte("e2:5:0:0:0"))
	for _, tt := range []struct{ query, field string }{
		{"fromBlock=x", "fromBlock"}, {"fromBlock=0x10", "fromBlock"}, {"fromBlock=-1", "fromBlock"},
		{"toBlock=-1", "toBlock"}, {"toBlock=1.5", "toBlock"}, {"toBlock=", "toBlock"}, {"toBlock=soon", "toBlock"},
		{"fromBlock=9&toBlock=8", "fromBlock"}, {"event=Minted", "event"}, {"event=" + strings.Repeat("a", 257), "event"},
		{"limit=0", "limit"}, {"limit=1001", "limit"}, {"limit=x", "limit"},
		{"cursor=x", "cursor"}, {"cursor=" + old, "cursor"}, {"cursor=" + zeroSpan, "cursor"},
		{"cursor=" + encodeTransferCursor(engine.TransferCursor{BlockNumber: 1}), "cursor"},
	} {
		rec := f.e.req("GET", "/contracts/{contractId}/events", "/contracts/"+f.id+"/events?"+tt.query, f.e.aliceToken, "")
		wantError(t, rec, 400, engine.CodeInvalidArgument, tt.field)
	}
	// A cursor is a position: one of another query reads from there.
	next := encodeEventCursor(engine.EventCursor{Block: 1, Index: 1, Span: 10})
	if b := f.get(t, "?cursor="+next); len(b.Data) != 0 || b.Next != "" {
		t.Fatalf("after the only event: %+v", b)
	}
	if b := f.get(t, fmt.Sprintf("?fromBlock=0&limit=1&cursor=%s", encodeEventCursor(engine.EventCursor{Block: 1, Span: 1}))); len(b.Data) != 1 {
		t.Fatalf("at the only event: %+v", b)
	}
}
