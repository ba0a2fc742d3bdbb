package http

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
)

// dataBody is the envelope of every successful response.
type dataBody struct {
	Data any `json:"data"`
}

func respond(c *gin.Context, status int, data any) {
	c.JSON(status, dataBody{Data: data})
}

// accountView is the JSON form of an account. The key is never part of it.
type accountView struct {
	ID             string `json:"id"`
	Address        string `json:"address"`
	Owner          string `json:"owner"`
	DefaultAccount bool   `json:"defaultAccount"`
	Created        string `json:"created"`
	// Custody says where the account's key lives.
	Custody custodyView `json:"custody"`
	// Faucet is present only in the 201 response of a creation, when a
	// network has a faucet: what each faucet does for the new account.
	Faucet []faucetView `json:"faucet,omitempty"`
	// Nonces is present only in GET /accounts/{id}: the account's nonce
	// health on every network (nonces.go).
	Nonces []nonceView `json:"nonces,omitempty"`
}

func viewAccount(a *engine.Account) accountView {
	return accountView{
		ID:             a.ID,
		Address:        a.Address.Hex(),
		Owner:          a.Owner,
		DefaultAccount: a.Default,
		Created:        engine.FormatTime(a.Created),
		Custody:        viewCustody(a),
	}
}

// Custody types of an account's key.
const (
	custodyLocal = "local"
	custodyKMS   = "kms"
)

// custodyView says where an account's key lives: "local" (generated and
// sealed by the service) or "kms" (in AWS KMS, KeyID its ARN).
type custodyView struct {
	Type  string `json:"type"`
	KeyID string `json:"keyId,omitempty"`
}

func viewCustody(a *engine.Account) custodyView {
	if a.KMSKeyID != "" {
		return custodyView{Type: custodyKMS, KeyID: a.KMSKeyID}
	}
	return custodyView{Type: custodyLocal}
}

// userView is the JSON form of a new user. Owner is null for ownerless
// users; Token and Account are present only when asked for at creation.
type userView struct {
	ID      string       `json:"id"`
	Owner   *string      `json:"owner"`
	Created string       `json:"created"`
	Token   string       `json:"token,omitempty"`
	Account *accountView `json:"account,omitempty"`
}

// tokenView is the JSON form of a registered token contract.
type tokenView struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Network    string          `json:"network"`
	Address    string          `json:"address"`
	Type       string          `json:"type"`
	Parameters tokenParameters `json:"parameters"`
}

type tokenParameters struct {
	Symbol   string `json:"symbol"`
	Decimals int    `json:"decimals"`
	Supply   string `json:"supply"`
}

func viewToken(c *engine.Contract, info engine.TokenInfo) tokenView {
	supply := "0"
	if info.TotalSupply != nil {
		supply = info.TotalSupply.String()
	}
	return tokenView{
		ID:      c.ID,
		Name:    c.Name,
		Network: c.Network,
		Address: c.Address.Hex(),
		Type:    c.BWType,
		Parameters: tokenParameters{
			Symbol:   info.Symbol,
			Decimals: int(info.Decimals),
			Supply:   supply,
		},
	}
}

// pathID returns the path parameter name as a canonical (lower-case,
// hyphenated) UUID. Anything else cannot name an object: 404 not_found.
func pathID(c *gin.Context, name, what string) (string, error) {
	raw := c.Param(name)
	if len(raw) != 36 {
		return "", notFound("", "%s not found", what)
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return "", notFound("", "%s not found", what)
	}
	return id.String(), nil
}

// created answers 201 with data.
func created(c *gin.Context, data any) { respond(c, http.StatusCreated, data) }

// ok answers 200 with data.
func ok(c *gin.Context, data any) { respond(c, http.StatusOK, data) }
