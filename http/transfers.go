package http

import (
	"bytes"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
)

// maxCallbackURLLen bounds one callback URL.
const maxCallbackURLLen = 2048

// transferRequest is the body of POST /tokens/{contractId}/transfers.
// Pointers tell an absent field from an empty one.
type transferRequest struct {
	To    *string `json:"to"`
	Value *string `json:"value"`
	// From is an address or an account id of one of the caller's accounts;
	// absent means the caller's default account.
	From      *string  `json:"from"`
	Callbacks []string `json:"callbacks"`
}

// createTransfer serves POST /tokens/{contractId}/transfers: it validates
// everything, builds the transfer(to, value) call and hands it to the
// engine, which stores it before this answers 202.
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
	callbacks, err := s.callbackURLs(req.Callbacks)
	if err != nil {
		s.fail(c, err)
		return
	}
	from, err := s.sender(c, req.From)
	if err != nil {
		s.fail(c, err)
		return
	}
	if _, err := s.network(ct.Network); err != nil {
		s.fail(c, err)
		return
	}
	data, err := packTransfer(ct, to, value)
	if err != nil {
		s.fail(c, err)
		return
	}

	u := currentUser(c)
	tx := &engine.Transaction{
		ID:              uuid.NewString(),
		Owner:           u.ID,
		AccountID:       from.ID,
		Network:         ct.Network,
		From:            from.Address,
		ContractID:      ct.ID,
		ContractAddress: ct.Address,
		ContractName:    ct.Name,
		ContractBWType:  ct.BWType,
		Method:          "transfer",
		Parameters:      []any{to.Hex(), value.String()},
		Data:            data,
		Value:           new(big.Int),
		Status:          engine.StatusNew,
		Created:         s.clock.Now(),
		Callbacks:       callbacks,
	}
	stored, err := s.engine.Submit(c.Request.Context(), tx)
	if err != nil {
		s.fail(c, fmt.Errorf("submit transfer %s: %w", tx.ID, err))
		return
	}
	respond(c, http.StatusAccepted, engine.ViewTransaction(stored))
}

// sender resolves the optional from field (an address or an account id) to
// one of the caller's accounts; absent means the default account.
func (s *Server) sender(c *gin.Context, from *string) (*engine.Account, error) {
	ctx := c.Request.Context()
	u := currentUser(c)
	if from == nil {
		a, err := s.callerDefaultAccount(c)
		if engine.IsNotFound(err) {
			return nil, notFound("from", "the current user has no default account: name one in from")
		}
		return a, err
	}
	if engine.IsAddressLike(*from) {
		addr, err := engine.ParseAddress("from", *from)
		if err != nil {
			return nil, err
		}
		a, err := s.store.AccountByAddress(ctx, addr)
		if engine.IsNotFound(err) || (err == nil && a.Owner != u.ID) {
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
	return s.ownAccountByID(ctx, u, id.String(), "from")
}

// callbackURLs validates callback URLs: absolute http(s), bounded in number
// and length, and (unless allowed by configuration) not aimed at loopback,
// private, link-local or unspecified addresses given literally.
func (s *Server) callbackURLs(urls []string) ([]string, error) {
	if len(urls) > s.cfg.MaxCallbacks {
		return nil, engine.Invalid("callbacks", "at most %d callbacks are allowed", s.cfg.MaxCallbacks)
	}
	for _, raw := range urls {
		if len(raw) > maxCallbackURLLen {
			return nil, engine.Invalid("callbacks", "a callback URL is longer than %d characters", maxCallbackURLLen)
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
			return nil, engine.Invalid("callbacks", "callback %q is not an absolute http(s) URL", raw)
		}
		if !s.cfg.AllowPrivateCallbacks && isPrivateHost(u.Hostname()) {
			return nil, engine.Invalid("callbacks", "callback %q points to a loopback, private or link-local address", raw)
		}
	}
	return urls, nil
}

// isPrivateHost reports whether host is "localhost" (or below it) or an IP
// literal that is not publicly routable. Names are not resolved here; the
// callback dispatcher must check the address it actually connects to.
func isPrivateHost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	if ip == nil {
		return false
	}
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast()
}

// packTransfer encodes transfer(to, value) with the contract's own ABI.
func packTransfer(ct *engine.Contract, to common.Address, value *big.Int) ([]byte, error) {
	parsed, err := abi.JSON(bytes.NewReader(ct.ABI))
	if err != nil {
		return nil, fmt.Errorf("contract %s: abi: %w", ct.ID, err)
	}
	data, err := parsed.Pack("transfer", to, value)
	if err != nil {
		return nil, fmt.Errorf("contract %s: pack transfer: %w", ct.ID, err)
	}
	return data, nil
}
