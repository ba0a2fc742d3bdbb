package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/abicodec"
	"github.com/txengine/txengine/engine/subscribe"
)

// subEnv is a contractEnv (responses checked against openapi.json) whose
// dev network has 5 confirmations and its head at block 20.
type subEnv struct {
	*contractEnv
}

func newSubEnv(t *testing.T) *subEnv {
	e := newContractEnv(t)
	e.server.networks["dev"].Confirmations = 5
	return &subEnv{e}
}

// create posts body to /subscriptions as token and returns the view of a
// 201.
func (e *subEnv) create(token, body string) subscriptionView {
	e.t.Helper()
	rec := e.req("POST", "/subscriptions", "/subscriptions", token, body)
	if rec.Code != http.StatusCreated {
		e.t.Fatalf("POST /subscriptions %s: %d %s", body, rec.Code, rec.Body.String())
	}
	var v subscriptionView
	if err := json.Unmarshal(dataOf(e.t, rec.Body.Bytes()), &v); err != nil {
		e.t.Fatal(err)
	}
	return v
}

// stored returns the subscription as the store has it.
func (e *subEnv) stored(id string) *engine.Subscription {
	e.t.Helper()
	sub, err := e.store.SubscriptionByID(context.Background(), id)
	if err != nil {
		e.t.Fatalf("subscription %s: %v", id, err)
	}
	return sub
}

// dataOf returns the data member of a success body.
func dataOf(t testing.TB, body []byte) json.RawMessage {
	t.Helper()
	var b struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Data == nil {
		t.Fatalf("no data in %s (%v)", body, err)
	}
	return b.Data
}

// TestSubscriptionLifecycle: an events subscription of a registered
// contract with filters and a callback is created (201, the view, what the
// store holds), read, listed and deleted (200), then not found anywhere.
func TestSubscriptionLifecycle(t *testing.T) {
	e := newSubEnv(t)
	to := e.bobAcct.Address.Hex()
	body := `{"contractId":"` + e.bobToken20.ID + `","event":"Transfer","filters":{"to":["` + strings.ToLower(to) + `"]},
		"callbacks":["https://hooks.example.com/deposit"]}`
	v := e.create(e.bobToken, body)
	want := subscriptionView{
		ID: v.ID, Kind: "events", Network: "dev", ContractID: e.bobToken20.ID, Address: e.bobToken20.Address.Hex(),
		Event: "Transfer", Signature: "Transfer(address,address,uint256)",
		Filters:   map[string]json.RawMessage{"to": json.RawMessage(`["` + strings.ToLower(to) + `"]`)},
		Callbacks: []string{"https://hooks.example.com/deposit"}, Confirmations: 5, FromBlock: 21, NextBlock: 21,
		Created: engine.FormatTime(testNow),
	}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("view\n got %+v\nwant %+v", v, want)
	}
	if _, err := uuid.Parse(v.ID); err != nil {
		t.Fatalf("id %q: %v", v.ID, err)
	}

	sub := e.stored(v.ID)
	if sub.Owner != e.bob.ID || sub.Next != 21 || sub.FromBlock != 21 || sub.LastSeq != 0 || sub.Address != e.bobToken20.Address {
		t.Fatalf("stored: %+v", sub)
	}
	a, err := abicodec.ParseABI(sub.ABI)
	if err != nil || len(a.Events) != 1 || len(a.Methods) != 0 || a.Events["Transfer"].Sig != "Transfer(address,address,uint256)" {
		t.Fatalf("stored ABI is not the event's fragment alone: %s (%v)", sub.ABI, err)
	}
	wantTopics, err := engine.EventFilterTopics(ptr(a.Events["Transfer"]), map[string]json.RawMessage{"to": json.RawMessage(`["` + to + `"]`)})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sub.Topics, wantTopics) || len(sub.Topics) != 3 || sub.Topics[2][0] != common.BytesToHash(e.bobAcct.Address.Bytes()) {
		t.Fatalf("topics %v, want %v", sub.Topics, wantTopics)
	}

	rec := e.req("GET", "/subscriptions/{id}", "/subscriptions/"+v.ID, e.bobToken, "")
	wantStatus(t, rec, http.StatusOK)
	var got subscriptionView
	decodeData(t, rec, &got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GET: %+v", got)
	}
	rec = e.req("GET", "/subscriptions", "/subscriptions", e.bobToken, "")
	wantStatus(t, rec, http.StatusOK)
	var list []subscriptionView
	decodeData(t, rec, &list)
	if len(list) != 1 || !reflect.DeepEqual(list[0], want) || strings.Contains(rec.Body.String(), `"next"`) {
		t.Fatalf("list: %s", rec.Body.String())
	}

	rec = e.req("DELETE", "/subscriptions/{id}", "/subscriptions/"+v.ID, e.bobToken, "")
	wantStatus(t, rec, http.StatusOK)
	decodeData(t, rec, &got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DELETE answered %+v", got)
	}
	for _, r := range []struct{ method, template, path string }{
		{"GET", "/subscriptions/{id}", "/subscriptions/" + v.ID},
		{"DELETE", "/subscriptions/{id}", "/subscriptions/" + v.ID},
		{"GET", "/subscriptions/{id}/events", "/subscriptions/" + v.ID + "/events"},
	} {
		wantError(t, e.req(r.method, r.template, r.path, e.bobToken, ""), http.StatusNotFound, engine.CodeNotFound, "")
	}
	rec = e.req("GET", "/subscriptions", "/subscriptions", e.bobToken, "")
	decodeData(t, rec, &list)
	if len(list) != 0 {
		t.Fatalf("deleted subscription still listed: %s", rec.Body.String())
	}
	if n, err := e.store.CountSubscriptions(context.Background(), e.bob.ID); err != nil || n != 0 {
		t.Fatalf("count after delete = %d, %v", n, err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestSubscriptionForms: a contract by network, address and type or abi,
// an event by its signature, fromBlock as a number or a decimal string,
// explicit confirmations, an overloaded event by signature, and deposits.
func TestSubscriptionForms(t *testing.T) {
	e := newSubEnv(t)
	tok := e.aliceToken20.Address.Hex()
	v := e.create(e.bobToken, `{"network":"dev","address":"`+strings.ToLower(tok)+`","type":"erc20",
		"event":"Transfer(address, address, uint256)","fromBlock":3,"confirmations":0}`)
	if v.ContractID != "" || v.Address != tok || v.Event != "Transfer" || v.FromBlock != 3 || v.NextBlock != 3 ||
		v.Confirmations != 0 || v.Filters != nil || len(v.Callbacks) != 0 || v.Callbacks == nil {
		t.Fatalf("direct: %+v", v)
	}
	v = e.create(e.bobToken, `{"network":"dev","address":"`+tok+`","abi":`+testERC20ABI+`,"event":"Transfer","fromBlock":"1000","confirmations":1000}`)
	if v.FromBlock != 1000 || v.NextBlock != 1000 || v.Confirmations != 1000 {
		t.Fatalf("abi, fromBlock string above the head: %+v", v)
	}
	if sub := e.stored(v.ID); sub.Kind != engine.SubscriptionEvents || len(sub.Topics) != 1 {
		t.Fatalf("no filters: topics %v", sub.Topics)
	}

	overloaded := `[{"type":"event","name":"Moved","inputs":[{"name":"who","type":"address","indexed":true}]},
		{"type":"event","name":"Moved","inputs":[{"name":"n","type":"uint256","indexed":true}]},
		{"type":"function","name":"f","inputs":[],"outputs":[]}]`
	rec := e.req("POST", "/subscriptions", "/subscriptions", e.bobToken, `{"network":"dev","address":"`+tok+`","abi":`+overloaded+`,"event":"Moved"}`)
	wantError(t, rec, http.StatusBadRequest, engine.CodeInvalidArgument, "event")
	if !strings.Contains(rec.Body.String(), "Moved(address), Moved(uint256)") {
		t.Fatalf("the refusal does not list the signatures: %s", rec.Body.String())
	}
	v = e.create(e.bobToken, `{"network":"dev","address":"`+tok+`","abi":`+overloaded+`,"event":"Moved(uint256)","filters":{"n":"7"}}`)
	if v.Signature != "Moved(uint256)" || v.Event != "Moved" {
		t.Fatalf("overload by signature: %+v", v)
	}
	a, err := abicodec.ParseABI(e.stored(v.ID).ABI)
	if err != nil || len(a.Events) != 1 || a.Events["Moved"].Sig != "Moved(uint256)" {
		t.Fatalf("fragment of the overload: %v %v", a, err)
	}

	v = e.create(e.bobToken, `{"kind":"deposits","network":"dev","callbacks":["https://hooks.example.com/d"]}`)
	if v.Kind != "deposits" || v.Address != "" || v.ContractID != "" || v.Event != "Transfer" ||
		v.Signature != "Transfer(address,address,uint256)" || v.Confirmations != 5 || v.FromBlock != 21 {
		t.Fatalf("deposits: %+v", v)
	}
	if raw := e.req("GET", "/subscriptions/{id}", "/subscriptions/"+v.ID, e.bobToken, "").Body.String(); strings.Contains(raw, `"address"`) {
		t.Fatalf("a deposits subscription shows an address: %s", raw)
	}
	if sub := e.stored(v.ID); sub.Address != (common.Address{}) || sub.Topics[0][0] != engine.TransferTopic {
		t.Fatalf("deposits stored: %+v", sub)
	}
}

// subscriptionCount returns how many subscriptions the store holds,
// deleted included.
func (e *subEnv) subscriptionCount() int {
	e.t.Helper()
	return e.store.count(e.t, `SELECT COUNT(*) FROM subscriptions`)
}

// TestSubscriptionValidation: every bad input is its 4xx naming the field,
// and nothing is stored.
func TestSubscriptionValidation(t *testing.T) {
	e := newSubEnv(t)
	tok := e.aliceToken20.Address.Hex()
	direct := `"network":"dev","address":"` + tok + `","type":"erc20"`
	mine := `"contractId":"` + e.bobToken20.ID + `"`
	anon := `[{"type":"event","name":"Quiet","anonymous":true,"inputs":[{"name":"x","type":"uint256","indexed":true}]}]`
	many := make([]string, 11)
	for i := range many {
		many[i] = fmt.Sprintf(`"https://h%d.example.com/"`, i)
	}
	for _, tt := range []struct {
		body   string
		status int
		code   engine.Code
		field  string
	}{
		{`{`, 400, engine.CodeInvalidJSON, ""},
		{`[]`, 400, engine.CodeInvalidArgument, ""},
		{`{"topic":"x"}`, 400, engine.CodeInvalidArgument, "topic"},
		{`{}`, 400, engine.CodeInvalidArgument, "network"},
		{`{"kind":"blocks",` + direct + `,"event":"Transfer"}`, 400, engine.CodeInvalidArgument, "kind"},
		{`{` + mine + `,"network":"dev","event":"Transfer"}`, 400, engine.CodeInvalidArgument, "contractId"},
		{`{"contractId":"nope","event":"Transfer"}`, 404, engine.CodeNotFound, "contractId"},
		{`{"contractId":"` + e.aliceToken20.ID + `","event":"Transfer"}`, 404, engine.CodeNotFound, "contractId"},
		{`{"network":"moon","address":"` + tok + `","type":"erc20","event":"Transfer"}`, 400, engine.CodeInvalidArgument, "network"},
		{`{"network":"dev","type":"erc20","event":"Transfer"}`, 400, engine.CodeInvalidArgument, "address"},
		{`{"network":"dev","address":"0x12","type":"erc20","event":"Transfer"}`, 400, engine.CodeInvalidArgument, "address"},
		{`{"network":"dev","address":"` + tok + `","event":"Transfer"}`, 400, engine.CodeInvalidArgument, "abi"},
		{`{"network":"dev","address":"` + tok + `","type":"erc1155","event":"Transfer"}`, 400, engine.CodeInvalidArgument, "type"},
		{`{"network":"dev","address":"` + tok + `","abi":{"not":"a list"},"event":"Transfer"}`, 400, engine.CodeInvalidArgument, "abi"},
		{`{"network":"dev","address":"` + tok + `","abi":` + anon + `,"event":"Quiet"}`, 400, engine.CodeInvalidArgument, "event"},
		{`{` + mine + `}`, 400, engine.CodeInvalidArgument, "event"},
		{`{` + mine + `,"event":"Approval"}`, 400, engine.CodeInvalidArgument, "event"},
		{`{` + mine + `,"event":"` + strings.Repeat("x", engine.MaxMethodLen+1) + `"}`, 400, engine.CodeInvalidArgument, "event"},
		{`{` + mine + `,"event":"Transfer","filters":{"value":"1"}}`, 400, engine.CodeInvalidArgument, "filters.value"},
		{`{` + mine + `,"event":"Transfer","filters":{"nobody":"1"}}`, 400, engine.CodeInvalidArgument, "filters.nobody"},
		{`{` + mine + `,"event":"Transfer","filters":{"to":"not an address"}}`, 400, engine.CodeInvalidArgument, "filters.to"},
		{`{` + mine + `,"event":"Transfer","filters":{"to":[]}}`, 400, engine.CodeInvalidArgument, "filters.to"},
		{`{` + mine + `,"event":"Transfer","filters":"to"}`, 400, engine.CodeInvalidArgument, "filters"},
		{`{` + mine + `,"event":"Transfer","callbacks":["ftp://hooks.example.com/"]}`, 400, engine.CodeInvalidArgument, "callbacks"},
		{`{` + mine + `,"event":"Transfer","callbacks":["http://127.0.0.1:8080/hook"]}`, 400, engine.CodeInvalidArgument, "callbacks"},
		{`{` + mine + `,"event":"Transfer","callbacks":["https://localhost/hook"]}`, 400, engine.CodeInvalidArgument, "callbacks"},
		{`{` + mine + `,"event":"Transfer","callbacks":[` + strings.Join(many, ",") + `]}`, 400, engine.CodeInvalidArgument, "callbacks"},
		{`{` + mine + `,"event":"Transfer","confirmations":-1}`, 400, engine.CodeInvalidArgument, "confirmations"},
		{`{` + mine + `,"event":"Transfer","confirmations":1001}`, 400, engine.CodeInvalidArgument, "confirmations"},
		{`{` + mine + `,"event":"Transfer","confirmations":1.5}`, 400, engine.CodeInvalidArgument, "confirmations"},
		{`{` + mine + `,"event":"Transfer","fromBlock":"soon"}`, 400, engine.CodeInvalidArgument, "fromBlock"},
		{`{` + mine + `,"event":"Transfer","fromBlock":-1}`, 400, engine.CodeInvalidArgument, "fromBlock"},
		{`{` + mine + `,"event":"Transfer","fromBlock":1.5}`, 400, engine.CodeInvalidArgument, "fromBlock"},
		{`{` + mine + `,"event":"Transfer","fromBlock":1e3}`, 400, engine.CodeInvalidArgument, "fromBlock"},
		{`{` + mine + `,"event":"Transfer","fromBlock":"0x10"}`, 400, engine.CodeInvalidArgument, "fromBlock"},
		{`{` + mine + `,"event":"Transfer","fromBlock":true}`, 400, engine.CodeInvalidArgument, "fromBlock"},
		{`{` + mine + `,"event":"Transfer","fromBlock":"99999999999999999999"}`, 400, engine.CodeInvalidArgument, "fromBlock"},
		{`{"kind":"deposits"}`, 400, engine.CodeInvalidArgument, "network"},
		{`{"kind":"deposits","network":"moon"}`, 400, engine.CodeInvalidArgument, "network"},
		{`{"kind":"deposits","network":"dev","event":"Transfer"}`, 400, engine.CodeInvalidArgument, "event"},
		{`{"kind":"deposits",` + mine + `}`, 400, engine.CodeInvalidArgument, "contractId"},
		{`{"kind":"deposits","network":"dev","address":"` + tok + `"}`, 400, engine.CodeInvalidArgument, "address"},
		{`{"kind":"deposits","network":"dev","type":"erc20"}`, 400, engine.CodeInvalidArgument, "type"},
		{`{"kind":"deposits","network":"dev","abi":[]}`, 400, engine.CodeInvalidArgument, "abi"},
		{`{"kind":"deposits","network":"dev","filters":{}}`, 400, engine.CodeInvalidArgument, "filters"},
		{`{"kind":"deposits","network":"dev","callbacks":["http://10.0.0.1/"]}`, 400, engine.CodeInvalidArgument, "callbacks"},
	} {
		before := e.store.rows(t)
		rec := e.req("POST", "/subscriptions", "/subscriptions", e.bobToken, tt.body)
		wantError(t, rec, tt.status, tt.code, tt.field)
		if t.Failed() {
			t.Fatalf("body %s", tt.body)
		}
		if n := e.subscriptionCount(); n != 0 || e.store.rows(t) != before {
			t.Fatalf("%s stored something (%d subscriptions)", tt.body, n)
		}
	}
}

// TestSubscriptionNodeFailure: fromBlock latest needs the head: a node that
// fails is 503 and nothing is stored; a number needs no node.
func TestSubscriptionNodeFailure(t *testing.T) {
	e := newSubEnv(t)
	e.server.networks["dev"].Chain = e.chain
	e.chain.headErr = errors.New("dial tcp: connection refused")
	body := `{"contractId":"` + e.bobToken20.ID + `","event":"Transfer"}`
	wantError(t, e.req("POST", "/subscriptions", "/subscriptions", e.bobToken, body), http.StatusServiceUnavailable, engine.CodeUnavailable, "")
	if n := e.subscriptionCount(); n != 0 {
		t.Fatalf("stored %d subscriptions", n)
	}
	if v := e.create(e.bobToken, `{"contractId":"`+e.bobToken20.ID+`","event":"Transfer","fromBlock":0}`); v.FromBlock != 0 {
		t.Fatalf("fromBlock 0: %+v", v)
	}
	e.chain.headErr = nil
	if v := e.create(e.bobToken, body); v.FromBlock != 8 { // the fake chain's head is 7
		t.Fatalf("latest: %+v", v)
	}
}

// TestSubscriptionOwnership: another user's subscription is not found on
// every route, and stays; ids that are not UUIDs are not found.
func TestSubscriptionOwnership(t *testing.T) {
	e := newSubEnv(t)
	v := e.create(e.aliceToken, `{"contractId":"`+e.aliceToken20.ID+`","event":"Transfer"}`)
	for _, id := range []string{v.ID, "not-a-uuid", uuid.NewString()} {
		for _, r := range []struct{ method, template, path string }{
			{"GET", "/subscriptions/{id}", "/subscriptions/" + id},
			{"DELETE", "/subscriptions/{id}", "/subscriptions/" + id},
			{"GET", "/subscriptions/{id}/events", "/subscriptions/" + id + "/events"},
		} {
			wantError(t, e.req(r.method, r.template, r.path, e.bobToken, ""), http.StatusNotFound, engine.CodeNotFound, "")
		}
	}
	rec := e.req("GET", "/subscriptions", "/subscriptions", e.bobToken, "")
	var list []subscriptionView
	decodeData(t, rec, &list)
	if len(list) != 0 {
		t.Fatalf("bob lists alice's subscription: %s", rec.Body.String())
	}
	wantStatus(t, e.req("GET", "/subscriptions/{id}", "/subscriptions/"+strings.ToUpper(v.ID), e.aliceToken, ""), http.StatusOK)
	if sub := e.stored(v.ID); sub.Owner != e.alice.ID {
		t.Fatalf("owner %s", sub.Owner)
	}
}

// TestSubscriptionListPaging: pages of limit, oldest first, next while more
// rows exist; bad limits and cursors are 400.
func TestSubscriptionListPaging(t *testing.T) {
	e := newSubEnv(t)
	var ids []string
	for i := range 5 {
		ids = append(ids, e.create(e.bobToken, fmt.Sprintf(`{"contractId":"%s","event":"Transfer","fromBlock":%d}`, e.bobToken20.ID, i)).ID)
	}
	e.create(e.aliceToken, `{"contractId":"`+e.aliceToken20.ID+`","event":"Transfer"}`)
	var got []string
	path := "/subscriptions?limit=2"
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("paging does not end")
		}
		rec := e.req("GET", "/subscriptions", path, e.bobToken, "")
		wantStatus(t, rec, http.StatusOK)
		var page subscriptionListBody
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Data {
			got = append(got, v.ID)
		}
		if page.Next == "" {
			if len(page.Data) != 1 {
				t.Fatalf("last page holds %d", len(page.Data))
			}
			break
		}
		if len(page.Data) != 2 {
			t.Fatalf("a page with next holds %d", len(page.Data))
		}
		path = "/subscriptions?limit=2&cursor=" + page.Next
	}
	if !reflect.DeepEqual(got, ids) {
		t.Fatalf("paged %v, want %v (oldest first)", got, ids)
	}
	txCursor, err := encodeListCursor(engine.TxCursor{Created: testNow, Seq: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "cursor=zz", "cursor=" + txCursor} {
		field := strings.Split(q, "=")[0]
		wantError(t, e.req("GET", "/subscriptions", "/subscriptions?"+q, e.bobToken, ""), http.StatusBadRequest, engine.CodeInvalidArgument, field)
	}
}

// putEvents stores deliveries of sub as its processor does: n more, after
// its last, in block 30 onwards; the subscription's next block becomes 40.
func (e *subEnv) putEvents(sub *engine.Subscription, n int) []engine.SubscriptionEvent {
	e.t.Helper()
	evs := make([]engine.SubscriptionEvent, n)
	for i := range evs {
		seq := sub.LastSeq + int64(i) + 1
		ev := engine.SubscriptionEvent{
			ID: uuid.NewString(), SubscriptionID: sub.ID, Seq: seq, BlockNumber: 30 + uint64(seq),
			BlockHash: common.BigToHash(common.Big1), TxHash: common.BigToHash(common.Big2), LogIndex: uint(seq),
			Removed: seq == 3, Created: testNow,
		}
		body, err := json.Marshal(subscribe.DeliveryView{
			ID: ev.ID, SubscriptionID: sub.ID, Sequence: seq, Network: sub.Network, ContractID: sub.ContractID,
			Address: sub.Address.Hex(), Event: sub.Event, Signature: sub.Signature, BlockNumber: ev.BlockNumber,
			BlockHash: ev.BlockHash.Hex(), TransactionHash: ev.TxHash.Hex(), LogIndex: ev.LogIndex,
			ReturnValues: map[string]any{"from": e.aliceAcct.Address.Hex(), "to": e.bobAcct.Address.Hex(), "value": fmt.Sprint(seq)},
			Removed:      ev.Removed,
		})
		if err != nil {
			e.t.Fatal(err)
		}
		ev.Body = body
		evs[i] = ev
	}
	err := e.store.SaveSubscriptionStep(context.Background(), engine.NetworkFence{}, engine.SubscriptionStep{
		Network: sub.Network, Events: evs, Next: map[string]uint64{sub.ID: 40},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

// TestSubscriptionEventsPull: the deliveries in sequence order, their
// stored bodies, paged by limit and cursor; next is always present and
// stays put when nothing is new.
func TestSubscriptionEventsPull(t *testing.T) {
	e := newSubEnv(t)
	v := e.create(e.bobToken, `{"contractId":"`+e.bobToken20.ID+`","event":"Transfer"}`)
	events := func(query string) subscriptionEventsBody {
		t.Helper()
		rec := e.req("GET", "/subscriptions/{id}/events", "/subscriptions/"+v.ID+"/events"+query, e.bobToken, "")
		wantStatus(t, rec, http.StatusOK)
		var b subscriptionEventsBody
		if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || b.Next == "" {
			t.Fatalf("body %s: %v", rec.Body.String(), err)
		}
		return b
	}
	empty := events("")
	if len(empty.Data) != 0 {
		t.Fatalf("events before any: %+v", empty)
	}
	if again := events("?cursor=" + empty.Next); len(again.Data) != 0 || again.Next != empty.Next {
		t.Fatalf("nothing new moved next: %+v", again)
	}

	stored := e.putEvents(e.stored(v.ID), 3)
	if sub := e.stored(v.ID); sub.LastSeq != 3 || sub.Next != 40 {
		t.Fatalf("after the step: %+v", sub)
	}
	var got subscriptionView
	decodeData(t, e.req("GET", "/subscriptions/{id}", "/subscriptions/"+v.ID, e.bobToken, ""), &got)
	if got.NextBlock != 40 || got.FromBlock != 21 {
		t.Fatalf("progress not shown: %+v", got)
	}

	first := events("?cursor=" + empty.Next + "&limit=2")
	if len(first.Data) != 2 {
		t.Fatalf("first page: %d", len(first.Data))
	}
	for i, raw := range first.Data {
		if string(raw) != string(stored[i].Body) {
			t.Fatalf("item %d\n got %s\nwant %s", i, raw, stored[i].Body)
		}
	}
	second := events("?cursor=" + first.Next + "&limit=2")
	if len(second.Data) != 1 || string(second.Data[0]) != string(stored[2].Body) || !strings.Contains(string(second.Data[0]), `"removed":true`) {
		t.Fatalf("second page: %+v", second)
	}
	if all := events(""); len(all.Data) != 3 || all.Next != second.Next {
		t.Fatalf("one page of all: %d items, next %q vs %q", len(all.Data), all.Next, second.Next)
	}
	if last := events("?cursor=" + second.Next); len(last.Data) != 0 || last.Next != second.Next {
		t.Fatalf("after the end: %+v", last)
	}
	more := e.putEvents(e.stored(v.ID), 1)
	if next := events("?cursor=" + second.Next); len(next.Data) != 1 || string(next.Data[0]) != string(more[0].Body) {
		t.Fatalf("a poller misses the new delivery: %+v", next)
	}
	for _, q := range []string{"limit=0", "limit=1001", "cursor=zz", "cursor=" + encodeEventCursor(engine.EventCursor{Block: 1, Span: 1})} {
		field := strings.Split(q, "=")[0]
		wantError(t, e.req("GET", "/subscriptions/{id}/events", "/subscriptions/"+v.ID+"/events?"+q, e.bobToken, ""),
			http.StatusBadRequest, engine.CodeInvalidArgument, field)
	}
}

// TestSubscriptionQuota: a tree's subscriptions are capped (the users a
// user creates count on its root), refusals store nothing, deleted ones no
// longer count, operators are exempt.
func TestSubscriptionQuota(t *testing.T) {
	e := newSubEnv(t)
	e.server.cfg.Quotas.MaxSubscriptions = 2
	rec := e.req("POST", "/users", "/users", e.bobToken, `{"auth":true}`)
	wantStatus(t, rec, http.StatusCreated)
	var carol userView
	decodeData(t, rec, &carol)

	body := `{"kind":"deposits","network":"dev"}`
	first := e.create(e.bobToken, body)
	e.create(carol.Token, body)
	before := e.store.rows(t)
	for _, token := range []string{e.bobToken, carol.Token} {
		rec = e.req("POST", "/subscriptions", "/subscriptions", token, body)
		wantError(t, rec, http.StatusForbidden, engine.CodeForbidden, "")
		if !strings.Contains(rec.Body.String(), "quota exceeded: at most 2 subscriptions") {
			t.Fatalf("refusal: %s", rec.Body.String())
		}
	}
	if n := e.subscriptionCount(); n != 2 || e.store.rows(t) != before {
		t.Fatalf("refusals stored something: %d subscriptions", n)
	}
	wantStatus(t, e.req("DELETE", "/subscriptions/{id}", "/subscriptions/"+first.ID, e.bobToken, ""), http.StatusOK)
	e.create(e.bobToken, body)
	for range 3 {
		e.create(e.aliceToken, body)
	}
}

// TestSubscriptionIdempotent: the same key and body answer the first
// response again and store one subscription; another body is 409.
func TestSubscriptionIdempotent(t *testing.T) {
	e := newSubEnv(t)
	body := `{"contractId":"` + e.bobToken20.ID + `","event":"Transfer"}`
	first := e.do("POST", "/subscriptions", e.bobToken, body, "Idempotency-Key", "sub-1")
	wantStatus(t, first, http.StatusCreated)
	again := e.do("POST", "/subscriptions", e.bobToken, body, "Idempotency-Key", "sub-1")
	wantStatus(t, again, http.StatusCreated)
	if again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay:\n%s\n%s", first.Body.String(), again.Body.String())
	}
	if n := e.subscriptionCount(); n != 1 {
		t.Fatalf("%d subscriptions stored", n)
	}
	wantError(t, e.do("POST", "/subscriptions", e.bobToken, `{"kind":"deposits","network":"dev"}`, "Idempotency-Key", "sub-1"),
		http.StatusConflict, engine.CodeConflict, "Idempotency-Key")
	if n := e.subscriptionCount(); n != 1 {
		t.Fatalf("%d subscriptions stored", n)
	}
}
