package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txengine/txengine/cmd/txload/internal/check"
)

// fakePools is the part of the API txload's pool mode calls: POST /pools
// and POST /tokens/{id}/transfers with "pool"; it records the bodies.
type fakePools struct {
	mu        sync.Mutex
	pools     []map[string]any
	transfers []map[string]any
}

func (f *fakePools) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.Header.Get("Authorization") != "Bearer tok" {
		http.Error(w, `{"error":{"code":"invalid_argument","message":"bad"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/pools":
		f.pools = append(f.pools, body)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"data":{"id":"p1","size":2,"members":[{"slot":0,"account":"a0","address":"0xAa00000000000000000000000000000000000000"},{"slot":1,"account":"a1","address":"0xBb00000000000000000000000000000000000000"}]}}`)
	case r.Method == http.MethodPost && r.URL.Path == "/tokens/t1/transfers":
		f.transfers = append(f.transfers, body)
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"data":{"id":"tx%d","from":"0xAa00000000000000000000000000000000000000","status":"new","nonce":null}}`, len(f.transfers))
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"not_found","message":"no"}}`)
	}
}

// The pool mode creates a pool whose treasury is the default account and
// sends with "pool" (and the ordering key), never "from"; each key's
// transfers are sent one after the other, in request order.
func TestPoolSends(t *testing.T) {
	f := &fakePools{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c, err := newClient([]string{srv.URL}, "tok", 4, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{opt: options{N: 12, Conc: 4, PoolSize: 2, OrderingKeys: 3, Value: 1}, c: c, prog: newProgress(progressNone, nil)}
	tk := token{ID: "t1", Network: "dev"}
	p, err := r.setupPool(context.Background(), tk, account{ID: "treasury-id"})
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "p1" || len(p.Members) != 2 || len(f.pools) != 1 ||
		f.pools[0]["treasury"] != "treasury-id" || f.pools[0]["size"] != float64(2) || f.pools[0]["network"] != "dev" {
		t.Fatalf("pool %+v from POST /pools %v", p, f.pools)
	}
	errs := map[string]int{}
	sent, keys, _, _, _ := r.load(context.Background(), tk, nil, p, []string{"0x01", "0x02"}, errs)
	if len(sent) != 12 || len(keys) != 12 || len(errs) != 0 {
		t.Fatalf("%d sent, %d keys, errors %v", len(sent), len(keys), errs)
	}
	byKey := map[string][]string{}
	for _, b := range f.transfers {
		if b["pool"] != "p1" || b["from"] != nil || b["orderingKey"] == nil {
			t.Fatalf("transfer body %v: want pool p1, an orderingKey, no from", b)
		}
		byKey[b["orderingKey"].(string)] = append(byKey[b["orderingKey"].(string)], b["to"].(string))
	}
	if len(byKey) != 3 {
		t.Fatalf("keys %v, want 3", byKey)
	}
	for i, s := range sent {
		if keys[i] != orderingKey(i, 3) || s.From == "" || s.Sender != "" {
			t.Fatalf("sent[%d] = %+v key %q", i, s, keys[i])
		}
	}
}

func u64(n uint64) *uint64 { return &n }

func TestCheckPool(t *testing.T) {
	p := &pool{ID: "p1", Members: []poolMember{{Address: "0xAA"}, {Address: "0xbb"}}}
	sent := []check.Sent{
		{ID: "1", From: "0xaa", To: "r", Value: big.NewInt(1)},
		{ID: "2", From: "0xaa", To: "r", Value: big.NewInt(1)},
		{ID: "3", From: "0xBB", To: "r", Value: big.NewInt(1)},
		{ID: "4", From: "0xaa", To: "r", Value: big.NewInt(1)},
	}
	keys := []string{"k", "k", "k", "j"}
	obs := map[string]check.Observed{
		"1": {Status: "completed", From: "0xaa", Nonce: u64(0), BlockNumber: u64(5)},
		"2": {Status: "completed", From: "0xaa", Nonce: u64(1), BlockNumber: u64(5)},
		// Another member, a later block: the key moved once 1 and 2 ended.
		"3": {Status: "completed", From: "0xBB", Nonce: u64(0), BlockNumber: u64(7)},
		"4": {Status: "completed", From: "0xaa", Nonce: u64(2), BlockNumber: u64(6)},
	}
	v := check.Run(sent, obs, nil)
	checkPool(&v, p, sent, keys, obs)
	if !v.OK || v.PoolOutsiders != 0 || v.OrderViolations != 0 {
		t.Fatalf("a run in order: %+v", v)
	}

	// Out of order on one member (nonces), across members (blocks), and a
	// sender outside the pool.
	obs["2"] = check.Observed{Status: "completed", From: "0xaa", Nonce: u64(1), BlockNumber: u64(5)}
	obs["1"] = check.Observed{Status: "completed", From: "0xaa", Nonce: u64(3), BlockNumber: u64(6)}
	obs["3"] = check.Observed{Status: "completed", From: "0xBB", Nonce: u64(0), BlockNumber: u64(5)}
	sent[3].From = "0xcc"
	obs["4"] = check.Observed{Status: "completed", From: "0xcc", Nonce: u64(2), BlockNumber: u64(6)}
	v = check.Run(sent, obs, nil)
	checkPool(&v, p, sent, keys, obs)
	if v.OK || v.PoolOutsiders != 1 || v.OrderViolations != 2 {
		t.Fatalf("outsiders %d, order violations %d, OK %v; want 1, 2, false (%v)", v.PoolOutsiders, v.OrderViolations, v.OK, v.Problems)
	}
	if !strings.Contains(strings.Join(v.Problems, "\n"), "not a member of pool p1") {
		t.Fatalf("problems %v", v.Problems)
	}
}
