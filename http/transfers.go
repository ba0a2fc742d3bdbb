package http

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
)

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
	})
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

// Sender resolves the optional from field (an address or an account id) to
// one of owner's accounts; absent means the default account. The account
// comes from the account cache: id, owner and address only.
func (l sendLookup) Sender(ctx context.Context, owner string, from *string) (*engine.Account, error) {
	s := l.s
	if from == nil {
		a, err := s.defaultAccountOf(ctx, owner)
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
	a, err := s.accounts.byIDForSend(ctx, id.String(), s.store.AccountByID)
	if engine.IsNotFound(err) || (err == nil && a.Owner != owner) {
		return nil, notFound("from", "account %s not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", id, err)
	}
	return a, nil
}
