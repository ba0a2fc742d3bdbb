package http

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/abicodec"
)

// sendRequest is the body of POST /contracts/{contractId}/send/{method}
// and, with abi or type, of POST
// /contracts/network/{network}/address/{address}/send/{method}. (The
// fields are flat, not embedded, so that decoding errors name the JSON
// field alone.)
type sendRequest struct {
	Arg json.RawMessage `json:"arg"`
	// Value is the wei sent with the call (payable methods only).
	Value        *string         `json:"value"`
	From         *string         `json:"from"`
	Callbacks    []string        `json:"callbacks"`
	WaitForAsset *string         `json:"waitForAsset"`
	WaitForValue *string         `json:"waitForValue"`
	DependsOn    []string        `json:"dependsOn"`
	WaitTimeout  *int64          `json:"waitTimeout"`
	ABI          json.RawMessage `json:"abi"`
	Type         *string         `json:"type"`
	Pool         *string         `json:"pool"`
	OrderingKey  *string         `json:"orderingKey"`
}

func (r *sendRequest) options() engine.SendOptions {
	return engine.SendOptions{From: r.From, Callbacks: r.Callbacks, WaitForAsset: r.WaitForAsset, WaitForValue: r.WaitForValue,
		DependsOn: r.DependsOn, WaitTimeout: r.WaitTimeout, Pool: r.Pool, OrderingKey: r.OrderingKey}
}

// refuseABI rejects abi and type in requests on a registered contract,
// whose ABI is known.
func refuseABI(rawABI json.RawMessage, typ *string) error {
	if rawABI != nil {
		return engine.Invalid("abi", "unknown field \"abi\": a registered contract has its ABI")
	}
	if typ != nil {
		return engine.Invalid("type", "unknown field \"type\": a registered contract has its ABI")
	}
	return nil
}

// txTarget is the contract a transaction or a call goes to.
type txTarget struct {
	network *engine.Network
	address common.Address
	abi     *abi.ABI
	// rawABI is stored on the transaction when contract is nil, so the
	// follower can decode its events.
	rawABI json.RawMessage
	bwtype string
	// contract is the registered contract; nil for direct use.
	contract *engine.Contract
}

// network returns the configured network name; a contract on a network that
// is no longer configured cannot be served: unavailable.
func (s *Server) network(name string) (*engine.Network, error) {
	nw, ok := s.networks[name]
	if !ok || nw.Chain == nil {
		return nil, unavailable("network %s is not configured", name)
	}
	return nw, nil
}

// contractTarget returns the target of a registered contract.
func (s *Server) contractTarget(ct *engine.Contract) (txTarget, error) {
	nw, err := s.network(ct.Network)
	if err != nil {
		return txTarget{}, err
	}
	parsed, err := s.contracts.of(ct)
	if err != nil {
		return txTarget{}, fmt.Errorf("contract %s: stored abi: %w", ct.ID, err)
	}
	return txTarget{network: nw, address: ct.Address, abi: parsed, bwtype: ct.BWType, contract: ct}, nil
}

// directTarget returns the target of the direct-use paths
// /contracts/network/{network}/address/{address}/...: an unknown network is
// not found, a bad address, abi or type invalid.
func (s *Server) directTarget(c *gin.Context, rawABI json.RawMessage, typ *string) (txTarget, error) {
	name := c.Param("network")
	nw, found := s.networks[name]
	if !found || nw.Chain == nil {
		return txTarget{}, notFound("network", "network %q is not configured", name)
	}
	return addressTarget(nw, c.Param("address"), rawABI, typ)
}

// addressTarget returns the contract at address (field address) on nw
// that abi or type describes.
func addressTarget(nw *engine.Network, address string, rawABI json.RawMessage, typ *string) (txTarget, error) {
	addr, err := engine.ParseAddress("address", address)
	if err != nil {
		return txTarget{}, err
	}
	parsed, raw, bwtype, err := contractABI(rawABI, typ)
	if err != nil {
		return txTarget{}, err
	}
	return txTarget{network: nw, address: addr, abi: parsed, rawABI: raw, bwtype: bwtype}, nil
}

// transferRequest is the body of POST /tokens/{contractId}/transfers.
// Pointers tell an absent field from an empty one.
type transferRequest struct {
	To           *string  `json:"to"`
	Value        *string  `json:"value"`
	From         *string  `json:"from"`
	Callbacks    []string `json:"callbacks"`
	WaitForAsset *string  `json:"waitForAsset"`
	WaitForValue *string  `json:"waitForValue"`
	DependsOn    []string `json:"dependsOn"`
	WaitTimeout  *int64   `json:"waitTimeout"`
	Pool         *string  `json:"pool"`
	OrderingKey  *string  `json:"orderingKey"`
}

// createTransfer serves POST /tokens/{contractId}/transfers: a send of the
// token's method transfer(to, value), built and validated by the same code
// as POST /contracts/{contractId}/send/{method}.
func (s *Server) createTransfer(c *gin.Context) {
	ct, err := s.pathToken(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var req transferRequest
	if err := s.decodeBody(c, &req, false); err != nil {
		s.fail(c, err)
		return
	}
	if req.To == nil {
		s.fail(c, engine.Invalid("to", "to is required"))
		return
	}
	to, err := engine.ParseAddress("to", *req.To)
	if err != nil {
		s.fail(c, err)
		return
	}
	if req.Value == nil {
		s.fail(c, engine.Invalid("value", "value is required"))
		return
	}
	value, err := engine.ParseAmount("value", *req.Value)
	if err != nil {
		s.fail(c, err)
		return
	}
	tg, err := s.contractTarget(ct)
	if err != nil {
		s.fail(c, err)
		return
	}
	// to in lower case: PackCall need not verify a checksum it would compute.
	args := []json.RawMessage{jsonQuote("0x" + hex.EncodeToString(to[:])), jsonQuote(value.String())}
	tx, err := s.buildTx(c, tg, "transfer", args, new(big.Int), engine.SendOptions{
		From: req.From, Callbacks: req.Callbacks, WaitForAsset: req.WaitForAsset, WaitForValue: req.WaitForValue, DependsOn: req.DependsOn, WaitTimeout: req.WaitTimeout,
		Pool: req.Pool, OrderingKey: req.OrderingKey,
	}, value)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.submitTx(c, tx)
}

// jsonQuote returns s as a JSON string.
func jsonQuote(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// sendContract serves POST /contracts/{contractId}/send/{method}.
func (s *Server) sendContract(c *gin.Context) {
	var req sendRequest
	if tg, err := s.registeredTarget(c, &req, false); err != nil {
		s.fail(c, err)
	} else {
		s.send(c, tg, req)
	}
}

// sendDirect serves POST /contracts/network/{network}/address/{address}/send/{method}.
func (s *Server) sendDirect(c *gin.Context) {
	var req sendRequest
	if tg, err := s.directRequestTarget(c, &req); err != nil {
		s.fail(c, err)
	} else {
		s.send(c, tg, req)
	}
}

// abiAndType implements abiCarrier.
func (r *sendRequest) abiAndType() (json.RawMessage, *string) { return r.ABI, r.Type }

// abiCarrier is a request body that may name an ABI or a built-in type.
type abiCarrier interface {
	abiAndType() (json.RawMessage, *string)
}

// registeredTarget decodes the body of a request on the registered
// contract of the path into req (an empty body is allowed when optional)
// and returns the contract's target; abi and type are refused, since the
// contract has its ABI.
func (s *Server) registeredTarget(c *gin.Context, req abiCarrier, optional bool) (txTarget, error) {
	ct, err := s.pathContract(c)
	if err != nil {
		return txTarget{}, err
	}
	if err := s.decodeBody(c, req, optional); err != nil {
		return txTarget{}, err
	}
	if err := refuseABI(req.abiAndType()); err != nil {
		return txTarget{}, err
	}
	return s.contractTarget(ct)
}

// directRequestTarget decodes the body of a request on an unregistered
// contract (network and address in the path) into req and returns the
// target its abi or type describes.
func (s *Server) directRequestTarget(c *gin.Context, req abiCarrier) (txTarget, error) {
	if err := s.decodeBody(c, req, false); err != nil {
		return txTarget{}, err
	}
	abiJSON, typ := req.abiAndType()
	return s.directTarget(c, abiJSON, typ)
}

// send validates a send request on tg and submits it.
func (s *Server) send(c *gin.Context, tg txTarget, req sendRequest) {
	args, err := abicodec.NormalizeArgs(req.Arg)
	if err != nil {
		s.fail(c, err)
		return
	}
	value := new(big.Int)
	if req.Value != nil {
		if value, err = engine.ParseAmount("value", *req.Value); err != nil {
			s.fail(c, err)
			return
		}
	}
	tx, err := s.buildTx(c, tg, c.Param("method"), args, value, req.options(), nil)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.submitTx(c, tx)
}

// buildTx builds the transaction of the caller's call of method on tg
// (engine.Builder, with the caller's objects found through sendLookup).
// tokens is the amount of tg's token that a transfer moves (nil for other
// sends): what a send through a pool needs of its member.
func (s *Server) buildTx(c *gin.Context, tg txTarget, method string, args []json.RawMessage, value *big.Int, opts engine.SendOptions, tokens *big.Int) (*engine.Transaction, error) {
	b := engine.Builder{Lookup: sendLookup{s}, Clock: s.clock, MaxCallbacks: s.cfg.MaxCallbacks, AllowPrivateCallbacks: s.cfg.AllowPrivateCallbacks}
	r := engine.SendRequest{
		Owner:   currentUser(c).ID,
		Target:  engine.SendTarget{Network: tg.network.Name, Address: tg.address, ABI: tg.abi, RawABI: tg.rawABI, BWType: tg.bwtype, Contract: tg.contract},
		Method:  method,
		Args:    args,
		Value:   value,
		Options: opts,
	}
	if tokens != nil {
		r.Asset, r.AssetValue = tg.address.Hex(), tokens
	}
	return b.Build(c.Request.Context(), r)
}

// sendLookup finds the caller's objects that a send names, through the
// server's caches (engine.SendLookup).
type sendLookup struct{ s *Server }

func (l sendLookup) OwnContract(ctx context.Context, owner, id, field string) (*engine.Contract, error) {
	return l.s.ownContract(ctx, owner, id, field)
}

func (l sendLookup) TransactionByID(ctx context.Context, id string) (*engine.Transaction, error) {
	return l.s.store.TransactionByID(ctx, id)
}

func (l sendLookup) AccountByID(ctx context.Context, id string) (*engine.Account, error) {
	return l.s.store.AccountByID(ctx, id)
}

// OwnPool reads the pool through the pool cache: a burst of sends through
// one pool reads it once per poolCacheTTL.
func (l sendLookup) OwnPool(ctx context.Context, owner, id, field string) (*engine.Pool, error) {
	return l.s.ownPoolWith(ctx, owner, id, field, l.s.cachedPool)
}

func (l sendLookup) AssignPoolMember(ctx context.Context, p *engine.Pool, need engine.PoolNeed) (engine.PoolAssignment, error) {
	return l.s.engine.AssignPoolMember(ctx, p, need)
}

// Sender resolves the optional from field (an address or an account id) to
// one of owner's accounts; absent means the default account. The account
// comes from the account cache: id, owner and address only.
func (l sendLookup) Sender(ctx context.Context, owner string, from *string) (*engine.Account, error) {
	s := l.s
	if from == nil {
		a, err := s.accounts.defaultOf(ctx, owner, s.store.DefaultAccount)
		if engine.IsNotFound(err) {
			return nil, notFound("from", "the current user has no default account: name one in from")
		}
		if err != nil {
			return nil, fmt.Errorf("default account of %s: %w", owner, err)
		}
		return a, nil
	}
	if engine.IsAddressLike(*from) {
		addr, err := engine.ParseAddress("from", *from)
		if err != nil {
			return nil, err
		}
		a, err := s.accounts.byAddressForSend(ctx, addr, s.store.AccountByAddress)
		if engine.IsNotFound(err) || (err == nil && a.Owner != owner) {
			return nil, notFound("from", "no account of the current user has address %s", addr.Hex())
		}
		if err != nil {
			return nil, fmt.Errorf("account %s: %w", addr.Hex(), err)
		}
		return a, nil
	}
	id, err := uuid.Parse(*from)
	if err != nil || len(*from) != 36 {
		return nil, engine.Invalid("from", "from must be an address or an account id")
	}
	a, err := s.accounts.byIDForSend(ctx, id.String(), s.accountByIDMerged)
	if engine.IsNotFound(err) || (err == nil && a.Owner != owner) {
		return nil, notFound("from", "account %s not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", id, err)
	}
	return a, nil
}

// submitTx hands tx to the engine and answers 202 with the stored record.
func (s *Server) submitTx(c *gin.Context, tx *engine.Transaction) {
	if _, keyed := c.Get(keyIdempotency); keyed && !s.idempotency(c, http.StatusAccepted, engine.ViewTransaction(tx), &tx.Idempotency) {
		return
	}
	stored, err := s.engine.Submit(c.Request.Context(), tx)
	if err != nil {
		s.fail(c, fmt.Errorf("submit %s %s: %w", tx.Method, tx.ID, err))
		return
	}
	respond(c, http.StatusAccepted, engine.ViewTransaction(stored))
}
