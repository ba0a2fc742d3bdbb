package http

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
)

// maxDependsOn bounds the dependencies of one transaction.
const maxDependsOn = 100

// assetETH is the waitForAsset value that names the network's native coin.
const assetETH = "ETH"

// txOptions are the optional fields of every request that creates a
// transaction (sends and token transfers).
type txOptions struct {
	// From is an address or an account id of one of the caller's accounts;
	// absent means the caller's default account.
	From      *string
	Callbacks []string
	// WaitForAsset ("ETH", a token contract id or a token address on the
	// same network) and WaitForValue (decimal, smallest unit) go together.
	WaitForAsset *string
	WaitForValue *string
	DependsOn    []string
	// WaitTimeout is how many seconds the conditions may take.
	WaitTimeout *int64
}

// maxWaitTimeout bounds waitTimeout: 30 days.
const maxWaitTimeout = 30 * 24 * 3600

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
}

func (r *sendRequest) options() txOptions {
	return txOptions{From: r.From, Callbacks: r.Callbacks, WaitForAsset: r.WaitForAsset, WaitForValue: r.WaitForValue, DependsOn: r.DependsOn, WaitTimeout: r.WaitTimeout}
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
	addr, err := engine.ParseAddress("address", c.Param("address"))
	if err != nil {
		return txTarget{}, err
	}
	parsed, raw, bwtype, err := contractABI(rawABI, typ)
	if err != nil {
		return txTarget{}, err
	}
	return txTarget{network: nw, address: addr, abi: parsed, rawABI: raw, bwtype: bwtype}, nil
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
	args, err := engine.NormalizeArgs(req.Arg)
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
	tx, err := s.buildTx(c, tg, c.Param("method"), args, value, req.options())
	if err != nil {
		s.fail(c, err)
		return
	}
	s.submitTx(c, tx)
}

// buildTx is the one builder of transactions: it resolves method on tg,
// encodes args, checks value against the method's payability, validates
// the options and returns the transaction, ready for Engine.Submit.
// Nothing is stored.
func (s *Server) buildTx(c *gin.Context, tg txTarget, method string, args []json.RawMessage, value *big.Int, opts txOptions) (*engine.Transaction, error) {
	if err := checkMethodName(method); err != nil {
		return nil, err
	}
	m, err := engine.FindMethod(tg.abi, method)
	if err != nil {
		return nil, err
	}
	data, params, err := engine.PackCall(m, args)
	if err != nil {
		return nil, err
	}
	if value.Sign() > 0 && !m.IsPayable() {
		return nil, engine.Invalid("value", "%s is not payable: value must be 0 or absent", m.Sig)
	}
	callbacks, err := s.callbackURLs(opts.Callbacks)
	if err != nil {
		return nil, err
	}
	asset, assetValue, err := s.waitFor(c, tg.network.Name, opts.WaitForAsset, opts.WaitForValue)
	if err != nil {
		return nil, err
	}
	deps, err := s.dependencies(c, opts.DependsOn)
	if err != nil {
		return nil, err
	}
	if opts.WaitTimeout != nil && (*opts.WaitTimeout < 1 || *opts.WaitTimeout > maxWaitTimeout) {
		return nil, engine.Invalid("waitTimeout", "waitTimeout must be a whole number of seconds from 1 to %d", maxWaitTimeout)
	}
	from, err := s.sender(c, opts.From)
	if err != nil {
		return nil, err
	}
	tx := &engine.Transaction{
		ID:              uuid.NewString(),
		Owner:           currentUser(c).ID,
		AccountID:       from.ID,
		Network:         tg.network.Name,
		From:            from.Address,
		ContractAddress: tg.address,
		ContractBWType:  tg.bwtype,
		Method:          m.RawName,
		Parameters:      params,
		Data:            data,
		Value:           value,
		Status:          engine.StatusNew,
		Created:         s.clock.Now(),
		Callbacks:       callbacks,
		DependsOn:       deps,
		WaitForAsset:    asset,
		WaitForValue:    assetValue,
	}
	if opts.WaitTimeout != nil {
		until := tx.Created.Add(time.Duration(*opts.WaitTimeout) * time.Second)
		tx.WaitUntil = &until
	}
	if tg.contract != nil {
		tx.ContractID, tx.ContractName = tg.contract.ID, tg.contract.Name
	} else {
		tx.ABI = tg.rawABI
	}
	return tx, nil
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

// waitFor validates waitForAsset and waitForValue, which go together. The
// asset is stored normalized: "ETH" or the token's EIP-55 address.
func (s *Server) waitFor(c *gin.Context, network string, asset, value *string) (string, *big.Int, error) {
	switch {
	case asset == nil && value == nil:
		return "", nil, nil
	case asset == nil:
		return "", nil, engine.Invalid("waitForAsset", "waitForAsset is required with waitForValue")
	case value == nil:
		return "", nil, engine.Invalid("waitForValue", "waitForValue is required with waitForAsset")
	}
	amount, err := engine.ParseAmount("waitForValue", *value)
	if err != nil {
		return "", nil, err
	}
	a := strings.TrimSpace(*asset)
	switch {
	case strings.EqualFold(a, assetETH):
		return assetETH, amount, nil
	case engine.IsAddressLike(a):
		addr, err := engine.ParseAddress("waitForAsset", a)
		if err != nil {
			return "", nil, err
		}
		return addr.Hex(), amount, nil
	}
	id, err := uuid.Parse(a)
	if err != nil || len(a) != 36 {
		return "", nil, engine.Invalid("waitForAsset", `waitForAsset must be "ETH", a token contract id or a token address`)
	}
	ct, err := s.ownContract(c.Request.Context(), currentUser(c), id.String(), "waitForAsset")
	if err != nil {
		return "", nil, err
	}
	if !ct.IsToken() {
		return "", nil, engine.Invalid("waitForAsset", "contract %s is not a token", ct.ID)
	}
	if ct.Network != network {
		return "", nil, engine.Invalid("waitForAsset", "token %s is on network %s, the transaction on %s", ct.ID, ct.Network, network)
	}
	return ct.Address.Hex(), amount, nil
}

// dependencies validates dependsOn: ids of transactions of the caller
// (requested by the caller or sent from one of the caller's accounts).
// Duplicates are dropped; unknown and foreign ids are not found.
func (s *Server) dependencies(c *gin.Context, ids []string) ([]string, error) {
	if ids == nil {
		return nil, nil
	}
	if len(ids) > maxDependsOn {
		return nil, engine.Invalid("dependsOn", "at most %d dependencies are allowed", maxDependsOn)
	}
	ctx := c.Request.Context()
	u := currentUser(c)
	seen := map[string]bool{}
	out := make([]string, 0, len(ids))
	for _, raw := range ids {
		id, err := uuid.Parse(raw)
		if err != nil || len(raw) != 36 {
			return nil, engine.Invalid("dependsOn", "dependsOn must list transaction ids; %q is not one", raw)
		}
		key := id.String()
		if seen[key] {
			continue
		}
		seen[key] = true
		dep, err := s.store.TransactionByID(ctx, key)
		if engine.IsNotFound(err) {
			return nil, notFound("dependsOn", "transaction %s not found", key)
		}
		if err != nil {
			return nil, fmt.Errorf("dependency %s: %w", key, err)
		}
		if dep.Owner != u.ID {
			a, err := s.store.AccountByID(ctx, dep.AccountID)
			if err != nil && !engine.IsNotFound(err) {
				return nil, fmt.Errorf("dependency %s: account: %w", key, err)
			}
			if err != nil || a.Owner != u.ID {
				return nil, notFound("dependsOn", "transaction %s not found", key)
			}
		}
		out = append(out, key)
	}
	return out, nil
}
