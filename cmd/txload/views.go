package main

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	api "github.com/txengine/txengine/client"
)

// options are the command-line settings of one run.
type options struct {
	URL, Token, TokenID string
	// RPC, when set, is the node's JSON-RPC URL: the check then reads every
	// completed transfer's transaction and receipt from it.
	RPC string
	// Callback, when set, is the callback URL of every transfer.
	Callback            string
	N, Accounts, Conc   int
	Recipients          int
	Rate                float64
	Value               int64
	Wait, Check, JSON   bool
	Timeout, ReqTimeout time.Duration
	// PoolSize > 0 sends through a new pool of that many members (the
	// default account its treasury); PoolID through an existing pool.
	// OrderingKeys > 0 gives the transfers that many ordering keys.
	PoolSize     int
	PoolID       string
	OrderingKeys int
}

// pooled reports whether the transfers go through a pool.
func (o options) pooled() bool { return o.PoolSize > 0 || o.PoolID != "" }

// account is a sender or the operator's default account.
type account struct {
	ID      string
	Address string
}

// accountOf is the part of a (generated client's) account the tool uses.
func accountOf(a api.Account) account {
	return account{ID: a.Id.String(), Address: a.Address}
}

// token is the token contract the transfers move.
type token struct {
	ID      string
	uuid    uuid.UUID
	Network string
	Address string
}

// tokenOf is the part of a (generated client's) token the tool uses.
func tokenOf(t api.Token) token {
	return token{ID: t.Id.String(), uuid: t.Id, Network: t.Network, Address: t.Address}
}

// txView is the part of a transaction the tool reads.
type txView struct {
	ID              string
	From            string
	Status          string
	Created         string
	Ended           string
	Nonce           *uint64
	GasUsed         *uint64
	BlockNumber     *uint64
	TransactionHash string
	Error           *struct{ Code, Message string }
	// Events carry the block hash (the transaction itself has only the
	// block number).
	Events []struct{ BlockHash string }
}

// txOf is the part of a (generated client's) transaction the tool reads;
// times are in RFC 3339 with the fraction the service gave.
func txOf(t api.Transaction) txView {
	v := txView{
		ID: t.Id.String(), From: t.From, Status: string(t.Status),
		Created: t.Created.UTC().Format(time.RFC3339Nano),
		Nonce:   uint64Of(t.Nonce), GasUsed: uint64Of(t.GasUsed), BlockNumber: uint64Of(t.BlockNumber),
	}
	if t.Ended != nil {
		v.Ended = t.Ended.UTC().Format(time.RFC3339Nano)
	}
	if t.TransactionHash != nil {
		v.TransactionHash = *t.TransactionHash
	}
	if t.Error != nil {
		v.Error = &struct{ Code, Message string }{Code: string(t.Error.Code), Message: t.Error.Message}
	}
	if t.Events != nil {
		for _, e := range *t.Events {
			v.Events = append(v.Events, struct{ BlockHash string }{BlockHash: e.BlockHash})
		}
	}
	return v
}

// uint64Of converts the generated client's optional non-negative integers.
func uint64Of(n *int) *uint64 {
	if n == nil || *n < 0 {
		return nil
	}
	u := uint64(*n)
	return &u
}

// transfer requests one token transfer (POST /tokens/{contractId}/transfers).
func (r *runner) transfer(ctx context.Context, tk token, body api.TransferRequest) (txView, error) {
	res, err := r.c.api().CreateTransfer(ctx, tk.uuid, nil, body)
	t, err := answer[api.Transaction]("POST /tokens/{contractId}/transfers", res, err, http.StatusAccepted)
	if err != nil {
		return txView{}, err
	}
	return txOf(t.Data), nil
}

// blockHash is the block hash the service reports in the transaction's
// events ("" without events).
func (t txView) blockHash() string {
	for _, e := range t.Events {
		if e.BlockHash != "" {
			return e.BlockHash
		}
	}
	return ""
}

func (t txView) terminal() bool { return t.Status == "completed" || t.Status == "failed" }
