package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/abicodec"
)

// maxBatchCalls bounds the calls of one POST /contracts/call.
const maxBatchCalls = 100

// callRequest is the body of POST /contracts/{contractId}/call/{method}
// and, with abi or type, of POST
// /contracts/network/{network}/address/{address}/call/{method}.
type callRequest struct {
	Arg json.RawMessage `json:"arg"`
	// From is the msg.sender of the call: any address, or an account id of
	// the caller; absent means the caller's default account (the zero
	// address when the caller has none).
	From *string         `json:"from"`
	ABI  json.RawMessage `json:"abi"`
	Type *string         `json:"type"`
}

// preparedCall is a validated eth_call.
type preparedCall struct {
	target txTarget
	method *abi.Method
	req    engine.CallRequest
}

// callContract serves POST /contracts/{contractId}/call/{method}.
func (s *Server) callContract(c *gin.Context) {
	var req callRequest
	if tg, err := s.registeredTarget(c, &req, true); err != nil {
		s.fail(c, err)
	} else {
		s.call(c, tg, req)
	}
}

// callDirect serves POST /contracts/network/{network}/address/{address}/call/{method}.
func (s *Server) callDirect(c *gin.Context) {
	var req callRequest
	if tg, err := s.directRequestTarget(c, &req); err != nil {
		s.fail(c, err)
	} else {
		s.call(c, tg, req)
	}
}

// abiAndType implements abiCarrier.
func (r *callRequest) abiAndType() (json.RawMessage, *string) { return r.ABI, r.Type }

// call performs one read-only call and answers its decoded result.
func (s *Server) call(c *gin.Context, tg txTarget, req callRequest) {
	pc, err := s.prepareCall(c, tg, c.Param("method"), req)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.ChainTimeout)
	defer cancel()
	to := pc.req.To
	out, err := chainOf(tg.network).CallContract(ctx, ethereum.CallMsg{From: pc.req.From, To: &to, Data: pc.req.Data}, nil)
	result, err := callOutcome(pc, out, err)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, result)
}

// prepareCall resolves the method, encodes the arguments and the sender.
func (s *Server) prepareCall(c *gin.Context, tg txTarget, method string, req callRequest) (preparedCall, error) {
	if err := engine.CheckMethodName(method); err != nil {
		return preparedCall{}, err
	}
	m, err := abicodec.FindMethod(tg.abi, method)
	if err != nil {
		return preparedCall{}, err
	}
	args, err := abicodec.NormalizeArgs(req.Arg)
	if err != nil {
		return preparedCall{}, err
	}
	data, _, err := abicodec.PackCall(m, args)
	if err != nil {
		return preparedCall{}, err
	}
	from, err := s.callFrom(c, req.From)
	if err != nil {
		return preparedCall{}, err
	}
	return preparedCall{target: tg, method: m, req: engine.CallRequest{From: from, To: tg.address, Data: data}}, nil
}

// callFrom resolves the from of a read-only call.
func (s *Server) callFrom(c *gin.Context, from *string) (common.Address, error) {
	if from == nil {
		a, err := s.store.DefaultAccount(c.Request.Context(), currentUser(c).ID)
		if engine.IsNotFound(err) {
			return common.Address{}, nil
		}
		if err != nil {
			return common.Address{}, fmt.Errorf("default account: %w", err)
		}
		return a.Address, nil
	}
	if engine.IsAddressLike(*from) {
		return engine.ParseAddress("from", *from)
	}
	id, err := uuid.Parse(*from)
	if err != nil || len(*from) != 36 {
		return common.Address{}, engine.Invalid("from", "from must be an address or an account id")
	}
	a, err := s.ownAccountByID(c.Request.Context(), currentUser(c), id.String(), "from")
	if err != nil {
		return common.Address{}, err
	}
	return a.Address, nil
}

// callOutcome decodes the answer of an eth_call: a revert is the caller's
// input problem (400 invalid_argument on arg, with the decoded reason),
// any other node error is 503.
func callOutcome(pc preparedCall, out []byte, err error) (any, error) {
	if err != nil {
		if engine.IsRevert(err) {
			return nil, engine.Invalid("arg", "%s: %s", pc.method.Sig, engine.RevertMessage(pc.target.abi, err))
		}
		return nil, networkFailure(pc.target.network.Name, err)
	}
	result, err := abicodec.UnpackResult(pc.method, out)
	return result, err
}

// batchCallRequest is the body of POST /contracts/call. Each call is
// decoded on its own, so that a malformed call fails alone.
type batchCallRequest struct {
	Calls []json.RawMessage `json:"calls"`
}

// batchCallItem is one call of POST /contracts/call: a registered contract
// (contractId) or a direct one (network, address, abi or type).
type batchCallItem struct {
	ContractID *string         `json:"contractId"`
	Network    *string         `json:"network"`
	Address    *string         `json:"address"`
	ABI        json.RawMessage `json:"abi"`
	Type       *string         `json:"type"`
	Method     *string         `json:"method"`
	Arg        json.RawMessage `json:"arg"`
	From       *string         `json:"from"`
}

// batchResult is one item of the answer: {"result"} or {"error"}.
type batchResult struct {
	Result any `json:"result"`
}

type batchError struct {
	Error errorDetail `json:"error"`
}

// batchCall serves POST /contracts/call: every valid call of a network goes
// to the node in one JSON-RPC batch; the answer lists, in order, each
// call's result or error.
func (s *Server) batchCall(c *gin.Context) {
	var req batchCallRequest
	if err := s.decodeBody(c, &req, false); err != nil {
		s.fail(c, err)
		return
	}
	if req.Calls == nil {
		s.fail(c, engine.Invalid("calls", "calls is required"))
		return
	}
	if len(req.Calls) > maxBatchCalls {
		s.fail(c, engine.Invalid("calls", "at most %d calls are allowed in one batch, got %d", maxBatchCalls, len(req.Calls)))
		return
	}
	out := make([]any, len(req.Calls))
	prepared := make([]*preparedCall, len(req.Calls))
	for i, raw := range req.Calls {
		pc, err := s.prepareBatchItem(c, raw)
		if err != nil {
			out[i] = s.batchFailure(c, err)
			continue
		}
		prepared[i] = &pc
	}
	// One batch per network, in first-appearance order.
	var order []string
	groups := map[string][]int{}
	for i, pc := range prepared {
		if pc == nil {
			continue
		}
		name := pc.target.network.Name
		if _, seen := groups[name]; !seen {
			order = append(order, name)
		}
		groups[name] = append(groups[name], i)
	}
	for _, name := range order {
		idx := groups[name]
		reqs := make([]engine.CallRequest, len(idx))
		for j, i := range idx {
			reqs[j] = prepared[i].req
		}
		ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.ChainTimeout)
		results, err := engine.BatchCall(ctx, prepared[idx[0]].target.network.Chain, reqs)
		cancel()
		if err == nil && len(results) != len(reqs) {
			err = fmt.Errorf("batch of %d calls answered %d results", len(reqs), len(results))
		}
		for j, i := range idx {
			if err != nil {
				out[i] = s.batchFailure(c, networkFailure(name, err))
				continue
			}
			result, cerr := callOutcome(*prepared[i], results[j].Data, results[j].Err)
			if cerr != nil {
				out[i] = s.batchFailure(c, cerr)
				continue
			}
			out[i] = batchResult{Result: result}
		}
	}
	ok(c, out)
}

// prepareBatchItem decodes and validates one call of a batch.
func (s *Server) prepareBatchItem(c *gin.Context, raw json.RawMessage) (preparedCall, error) {
	var item batchCallItem
	if err := decodeStrict(raw, &item); err != nil {
		return preparedCall{}, err
	}
	if item.Method == nil || *item.Method == "" {
		return preparedCall{}, engine.Invalid("method", "method is required")
	}
	var tg txTarget
	direct := item.Network != nil || item.Address != nil || item.ABI != nil || item.Type != nil
	switch {
	case item.ContractID != nil && direct:
		return preparedCall{}, engine.Invalid("contractId", "give either contractId, or network, address and abi or type")
	case item.ContractID != nil:
		id, err := uuid.Parse(*item.ContractID)
		if err != nil || len(*item.ContractID) != 36 {
			return preparedCall{}, notFound("contractId", "contract %s not found", *item.ContractID)
		}
		ct, err := s.ownContract(c.Request.Context(), currentUser(c).ID, id.String(), "contractId")
		if err != nil {
			return preparedCall{}, err
		}
		if tg, err = s.contractTarget(ct); err != nil {
			return preparedCall{}, err
		}
	default:
		var err error
		if tg, err = s.bodyTarget(item.Network, item.Address, item.ABI, item.Type); err != nil {
			return preparedCall{}, err
		}
	}
	return s.prepareCall(c, tg, *item.Method, callRequest{Arg: item.Arg, From: item.From})
}

// batchFailure is the error item of a failed call; internal errors are
// logged and reported without detail.
func (s *Server) batchFailure(c *gin.Context, err error) batchError {
	d := errorDetail{Code: engine.ErrorCode(err), Message: engine.ErrorMessage(err)}
	if e, isEngine := engine.AsError(err); isEngine {
		d.Field = e.Field
	}
	if httpStatus(d.Code) >= 500 {
		s.log.ErrorContext(c.Request.Context(), "batch call failed", "request_id", requestID(c), "code", d.Code, "error", err.Error())
	}
	return batchError{Error: d}
}

// decodeStrict decodes one JSON object into dst as decodeBody does: unknown
// fields and wrong types are invalid_argument naming the field.
func decodeStrict(raw json.RawMessage, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return engine.Invalid("", "a call must be a JSON object")
	}
	if !json.Valid(raw) {
		return engine.Invalid("", "malformed call")
	}
	if err := checkFieldNames(raw, dst); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return engine.Invalid(typeErr.Field, "wrong JSON type for %s: expected %s, got %s", fieldLabel(typeErr.Field), describeType(typeErr.Type), typeErr.Value)
		}
		if name, found := strings.CutPrefix(err.Error(), "json: unknown field "); found {
			name = strings.Trim(name, `"`)
			return engine.Invalid(name, "unknown field %q", name)
		}
		if errors.Is(err, io.EOF) {
			return engine.Invalid("", "a call must be a JSON object")
		}
		return engine.Invalid("", "malformed call: %s", jsonErrorText(err))
	}
	return nil
}
