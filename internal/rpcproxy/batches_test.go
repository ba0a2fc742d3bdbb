package rpcproxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/ethereum/go-ethereum/rpc"
)

// TestRefuseBatches: each BatchRefusal answers a batch as go-ethereum's
// client then reports it (an HTTPError 400, an object where the array
// goes, an array without the answers), the batch never reaches the node,
// single calls still pass, and BatchesPass forwards batches again.
func TestRefuseBatches(t *testing.T) {
	svc, up := upstream(t)
	p := Start(t, up.URL)
	c := dial(t, p.URL())
	batch := func() ([]rpc.BatchElem, error) {
		var a, b int
		elems := []rpc.BatchElem{
			{Method: "test_add", Args: []any{1, 2}, Result: &a},
			{Method: "test_add", Args: []any{3, 4}, Result: &b},
		}
		return elems, c.BatchCallContext(ctx(t), elems)
	}
	for _, tc := range []struct {
		how   BatchRefusal
		check func(error, []rpc.BatchElem) bool
	}{
		{BatchHTTP400, func(err error, _ []rpc.BatchElem) bool {
			var he rpc.HTTPError
			return errors.As(err, &he) && he.StatusCode == http.StatusBadRequest
		}},
		{BatchErrorObject, func(err error, _ []rpc.BatchElem) bool {
			var te *json.UnmarshalTypeError
			return errors.As(err, &te)
		}},
		{BatchErrorArray, func(err error, elems []rpc.BatchElem) bool {
			return err == nil && errors.Is(elems[0].Error, rpc.ErrMissingBatchResponse) && errors.Is(elems[1].Error, rpc.ErrMissingBatchResponse)
		}},
	} {
		p.RefuseBatches(tc.how)
		p.ResetStats()
		elems, err := batch()
		if !tc.check(err, elems) {
			t.Fatalf("refusal %d: batch = %v, elements %v, %v", tc.how, err, elems[0].Error, elems[1].Error)
		}
		var sum int
		if err := c.CallContext(ctx(t), &sum, "test_add", 2, 2); err != nil || sum != 4 {
			t.Fatalf("refusal %d: single call = %d, %v", tc.how, sum, err)
		}
		if s := p.Stats(); s.Requests != 2 || s.Batches != 1 || s.RefusedBatches != 1 || s.Calls["test_add"] != 3 {
			t.Fatalf("refusal %d: stats %+v", tc.how, s)
		}
	}
	if n := svc.adds.Load(); n != 3 {
		t.Fatalf("the node got %d calls, want the 3 single ones", n)
	}
	p.RefuseBatches(BatchesPass)
	if elems, err := batch(); err != nil || elems[0].Error != nil || *elems[1].Result.(*int) != 7 {
		t.Fatalf("batches pass again: %v, %v", err, elems[0].Error)
	}
}
