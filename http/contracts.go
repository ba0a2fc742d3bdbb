package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/contracts"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/abicodec"
)

// builtinVersion is the bwver of contracts registered with a built-in type:
// the version of the ABI the contracts package ships for that type.
const builtinVersion = "1"

// maxContractName bounds the name of a registered contract (characters).
const maxContractName = 200

// builtinABI returns the committed ABI of a built-in contract type.
func builtinABI(typ string) (json.RawMessage, bool) {
	var art contracts.Artifact
	switch typ {
	case engine.TypeERC20:
		art = contracts.ERC20()
	case engine.TypeERC20Security:
		art = contracts.SecurityToken()
	case engine.TypeERC721:
		art = contracts.SystemNFT()
	default:
		return nil, false
	}
	return compactJSON(art.ABI), true
}

// compactJSON removes insignificant whitespace from valid JSON.
func compactJSON(raw []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return json.RawMessage(raw)
	}
	return buf.Bytes()
}

// contractABI is the ABI of a request: exactly one of abi (a JSON ABI) and
// type (a built-in type). It returns the parsed ABI, its JSON and the
// built-in type ("" for a raw ABI).
func contractABI(rawABI json.RawMessage, typ *string) (*abi.ABI, json.RawMessage, string, error) {
	hasABI := len(bytes.TrimSpace(rawABI)) > 0 && string(bytes.TrimSpace(rawABI)) != "null"
	switch {
	case hasABI && typ != nil:
		return nil, nil, "", engine.Invalid("abi", "give either abi or type, not both")
	case !hasABI && typ == nil:
		return nil, nil, "", engine.Invalid("abi", "abi or type is required")
	case typ != nil:
		raw, ok := builtinABI(*typ)
		if !ok {
			return nil, nil, "", engine.Invalid("type", "type must be one of %s, %s, %s", engine.TypeERC20, engine.TypeERC20Security, engine.TypeERC721)
		}
		parsed, err := abicodec.ParseABI(raw)
		if err != nil {
			return nil, nil, "", fmt.Errorf("built-in type %s: %w", *typ, err)
		}
		return parsed, raw, *typ, nil
	}
	parsed, err := abicodec.ParseABI(rawABI)
	if err != nil {
		return nil, nil, "", err
	}
	return parsed, compactJSON(rawABI), "", nil
}

// contractView is the JSON form of a registered contract.
type contractView struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Network string          `json:"network"`
	Address string          `json:"address"`
	ABI     json.RawMessage `json:"abi"`
	BWType  string          `json:"bwtype,omitempty"`
	BWVer   string          `json:"bwver,omitempty"`
	Created string          `json:"created"`
}

func viewContract(c *engine.Contract) contractView {
	a := c.ABI
	if len(a) == 0 {
		a = json.RawMessage("[]")
	}
	return contractView{
		ID: c.ID, Name: c.Name, Network: c.Network, Address: c.Address.Hex(), ABI: a,
		BWType: c.BWType, BWVer: c.BWVer, Created: engine.FormatTime(c.Created),
	}
}

// createContractRequest is the body of PUT /contracts.
type createContractRequest struct {
	Name    *string         `json:"name"`
	Network *string         `json:"network"`
	Address *string         `json:"address"`
	ABI     json.RawMessage `json:"abi"`
	Type    *string         `json:"type"`
}

// createContract serves PUT /contracts: it registers a contract of the
// caller, with its registration block (the head when registered).
func (s *Server) createContract(c *gin.Context) {
	var req createContractRequest
	if err := s.decodeBody(c, &req, false); err != nil {
		s.fail(c, err)
		return
	}
	if req.Name == nil || strings.TrimSpace(*req.Name) == "" {
		s.fail(c, engine.Invalid("name", "name is required"))
		return
	}
	if utf8.RuneCountInString(*req.Name) > maxContractName {
		s.fail(c, engine.Invalid("name", "name is longer than %d characters", maxContractName))
		return
	}
	if req.Network == nil || *req.Network == "" {
		s.fail(c, engine.Invalid("network", "network is required"))
		return
	}
	nw, okNet := s.networks[*req.Network]
	if !okNet || nw.Chain == nil {
		s.fail(c, engine.Invalid("network", "network %q is not configured", *req.Network))
		return
	}
	if req.Address == nil {
		s.fail(c, engine.Invalid("address", "address is required"))
		return
	}
	addr, err := engine.ParseAddress("address", *req.Address)
	if err != nil {
		s.fail(c, err)
		return
	}
	_, rawABI, typ, err := contractABI(req.ABI, req.Type)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.ChainTimeout)
	head, err := chainOf(nw).HeaderByNumber(ctx, nil)
	cancel()
	if err != nil {
		s.fail(c, networkFailure(nw.Name, err))
		return
	}
	ct := &engine.Contract{
		ID: engine.NewID(), Owner: currentUser(c).ID, Name: *req.Name, Network: nw.Name, Address: addr,
		ABI: rawABI, Block: head.Number.Uint64(), Created: s.clock.Now(),
	}
	if typ != "" {
		ct.BWType, ct.BWVer = typ, builtinVersion
	}
	if !s.idempotency(c, http.StatusCreated, viewContract(ct), &ct.Idempotency) {
		return
	}
	if err := s.store.CreateContract(c.Request.Context(), ct); err != nil {
		s.fail(c, fmt.Errorf("create contract %s: %w", ct.ID, err))
		return
	}
	created(c, viewContract(ct))
}

// listContracts serves GET /contracts?text=&network=: the caller's
// contracts, oldest first.
func (s *Server) listContracts(c *gin.Context) {
	u := currentUser(c)
	q, err := boundedQueries(c, "network", "text")
	if err != nil {
		s.fail(c, err)
		return
	}
	list, err := s.store.ListContracts(c.Request.Context(), engine.ContractFilter{
		Owner: u.ID, Network: q[0], Text: q[1],
	})
	if err != nil {
		s.fail(c, fmt.Errorf("list contracts of %s: %w", u.ID, err))
		return
	}
	out := make([]contractView, 0, len(list))
	for _, ct := range list {
		out = append(out, viewContract(ct))
	}
	ok(c, out)
}

// getContract serves GET /contracts/{contractId}.
func (s *Server) getContract(c *gin.Context) {
	ct, err := s.pathContract(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, viewContract(ct))
}

// pathContract returns the caller's contract named by the path parameter
// contractId; contracts of other users are not found.
func (s *Server) pathContract(c *gin.Context) (*engine.Contract, error) {
	id, err := pathID(c, "contractId", "contract")
	if err != nil {
		return nil, err
	}
	return s.ownContract(c.Request.Context(), currentUser(c).ID, id, "")
}

// ownContract returns the contract id of user owner, or not_found on field.
func (s *Server) ownContract(ctx context.Context, owner, id, field string) (*engine.Contract, error) {
	ct, err := s.contracts.contract(ctx, id, s.store.ContractByID)
	if engine.IsNotFound(err) || (err == nil && ct.Owner != owner) {
		return nil, notFound(field, "contract %s not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("contract %s: %w", id, err)
	}
	return ct, nil
}

// networkFailure turns a failed node call on network into 503 unavailable
// (the log gets the node's reason, without its URL).
func networkFailure(network string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %s", unavailable("network %s did not answer in time", network), nodeReason(err))
	}
	return fmt.Errorf("%w: %s", unavailable("network %s is unavailable", network), nodeReason(err))
}
