package rpcproxy

import (
	"encoding/json"
	"net/http"
)

// BatchRefusal is how a proxy answers a JSON-RPC batch it refuses
// (RefuseBatches), as nodes and hosted endpoints without batches do; single
// calls pass.
type BatchRefusal int

const (
	// BatchesPass forwards batches (the default).
	BatchesPass BatchRefusal = iota
	// BatchHTTP400 answers HTTP 400 with a JSON-RPC error object, as a
	// hosted endpoint on a plan without batches does.
	BatchHTTP400
	// BatchErrorObject answers 200 with one JSON-RPC error object (id
	// null) in place of the array.
	BatchErrorObject
	// BatchErrorArray answers 200 with an array holding one JSON-RPC error
	// (id null) and none of the answers.
	BatchErrorArray
)

// batchRefusedError is the error a refused batch is answered with.
var batchRefusedError = Error{Code: -32600, Message: "batch requests are not supported"}

// RefuseBatches answers every JSON-RPC batch from now on as how says
// (BatchesPass: forward them again). Refused batches are counted in
// Stats.Requests, Batches, BatchCalls and RefusedBatches.
func (p *Proxy) RefuseBatches(how BatchRefusal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batchRefusal = how
}

// writeBatchRefusal answers a refused batch as how says.
func writeBatchRefusal(w http.ResponseWriter, how BatchRefusal) {
	one := errorResponse(nil, &batchRefusedError)
	switch how {
	case BatchHTTP400:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(one)
	case BatchErrorObject:
		writeJSON(w, one)
	default:
		writeJSON(w, []json.RawMessage{one})
	}
}
