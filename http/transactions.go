package http

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
)

// getTransaction serves GET /transactions/{id}. Transactions of other users
// are reported as not found.
func (s *Server) getTransaction(c *gin.Context) {
	id, err := pathID(c, "id", "transaction")
	if err != nil {
		s.fail(c, err)
		return
	}
	tx, err := s.store.TransactionByID(c.Request.Context(), id)
	if engine.IsNotFound(err) || (err == nil && tx.Owner != currentUser(c).ID) {
		s.fail(c, notFound("", "transaction %s not found", id))
		return
	}
	if err != nil {
		s.fail(c, fmt.Errorf("transaction %s: %w", id, err))
		return
	}
	views := []engine.TransactionView{engine.ViewTransaction(tx)}
	s.withWaitReasons(c.Request.Context(), []*engine.Transaction{tx}, views)
	ok(c, views[0])
}

// Defaults and bounds of GET /transactions.
const (
	defaultTxLimit = 100
	maxTxLimit     = 1000
)

// txListCursor is the content of the opaque cursor of GET /transactions
// and GET /subscriptions: the keyset of the last row and the sort it
// belongs to.
type txListCursor struct {
	Created int64 `json:"c"`
	Seq     int64 `json:"s"`
	Asc     bool  `json:"a,omitempty"`
}

// txListBody is the answer of GET /transactions.
type txListBody struct {
	Data []engine.TransactionView `json:"data"`
	Next string                   `json:"next,omitempty"`
}

// listTransactions serves GET /transactions: the caller's transactions,
// filtered by status (comma-separated list), contractId, pool, method,
// from, network, since (inclusive) and until (exclusive), sorted by created
// (sort=created or -created, the default), paginated by limit and cursor.
func (s *Server) listTransactions(c *gin.Context) {
	f, err := txFilterOf(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	f.Owner = currentUser(c).ID
	txs, next, err := s.store.ListTransactions(c.Request.Context(), f)
	if err != nil {
		s.fail(c, fmt.Errorf("list transactions of %s: %w", f.Owner, err))
		return
	}
	body := txListBody{Data: make([]engine.TransactionView, 0, len(txs))}
	for _, tx := range txs {
		body.Data = append(body.Data, engine.ViewTransaction(tx))
	}
	s.withWaitReasons(c.Request.Context(), txs, body.Data)
	if next != nil {
		if body.Next, err = encodeListCursor(*next, f.Ascending); err != nil {
			s.fail(c, err)
			return
		}
	}
	c.JSON(http.StatusOK, body)
}

// txFilterOf reads the query parameters of GET /transactions; a bad value
// is invalid_argument naming the parameter.
func txFilterOf(c *gin.Context) (engine.TxFilter, error) {
	f := engine.TxFilter{Limit: defaultTxLimit}
	if v := c.Query("status"); v != "" {
		for _, st := range strings.Split(v, ",") {
			switch status := engine.TxStatus(strings.TrimSpace(st)); status {
			case engine.StatusNew, engine.StatusWaiting, engine.StatusSubmitted, engine.StatusCompleted, engine.StatusFailed:
				f.Statuses = append(f.Statuses, status)
			default:
				return f, engine.Invalid("status", "status %q is not one of new, waiting, submitted, completed, failed", st)
			}
		}
	}
	if v := c.Query("contractId"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil || len(v) != 36 {
			return f, engine.Invalid("contractId", "contractId must be a contract id (UUID)")
		}
		f.ContractID = id.String()
	}
	if v := c.Query("pool"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil || len(v) != 36 {
			return f, engine.Invalid("pool", "pool must be a pool id (UUID)")
		}
		f.Pool = id.String()
	}
	q, err := boundedQueries(c, "method", "network")
	if err != nil {
		return f, err
	}
	f.Method = q[0]
	if v := c.Query("from"); v != "" {
		addr, err := engine.ParseAddress("from", v)
		if err != nil {
			return f, err
		}
		f.From = &addr
	}
	f.Network = q[1]
	for _, p := range []struct {
		name string
		dst  **time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := c.Query(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return f, engine.Invalid(p.name, "%s must be an ISO 8601 timestamp such as 2026-11-21T23:25:31.123Z", p.name)
			}
			*p.dst = &t
		}
	}
	switch c.DefaultQuery("sort", "-created") {
	case "-created":
	case "created":
		f.Ascending = true
	default:
		return f, engine.Invalid("sort", "sort must be created or -created")
	}
	if v, set := c.GetQuery("limit"); set {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxTxLimit {
			return f, engine.Invalid("limit", "limit must be an integer from 1 to %d", maxTxLimit)
		}
		f.Limit = n
	}
	if v := c.Query("cursor"); v != "" {
		if f.After, err = decodeListCursor(v, f.Ascending); err != nil {
			return f, err
		}
	}
	return f, nil
}

// encodeListCursor makes the opaque cursor of a listing by creation time
// (GET /transactions, GET /subscriptions) after the row at cur, sorted
// ascending or not.
func encodeListCursor(cur engine.TxCursor, ascending bool) (string, error) {
	raw, err := json.Marshal(txListCursor{Created: cur.Created.UnixMilli(), Seq: cur.Seq, Asc: ascending})
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// decodeListCursor reads a cursor of encodeListCursor made for the sort
// order ascending; anything else is invalid_argument on cursor.
func decodeListCursor(v string, ascending bool) (*engine.TxCursor, error) {
	var cur txListCursor
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || json.Unmarshal(raw, &cur) != nil || cur.Seq <= 0 {
		return nil, engine.Invalid("cursor", "cursor is not a cursor this service returned")
	}
	if cur.Asc != ascending {
		return nil, engine.Invalid("cursor", "cursor belongs to another sort order")
	}
	return &engine.TxCursor{Created: time.UnixMilli(cur.Created).UTC(), Seq: cur.Seq}, nil
}

// cancelTransaction serves DELETE /transactions/{id}: a transaction still
// new or waiting becomes failed with error code cancelled; any other state
// is 409 conflict.
func (s *Server) cancelTransaction(c *gin.Context) {
	id, err := pathID(c, "id", "transaction")
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	tx, err := s.store.TransactionByID(ctx, id)
	if engine.IsNotFound(err) || (err == nil && tx.Owner != currentUser(c).ID) {
		s.fail(c, notFound("", "transaction %s not found", id))
		return
	}
	if err != nil {
		s.fail(c, fmt.Errorf("transaction %s: %w", id, err))
		return
	}
	cancelled, err := s.store.CancelTransaction(ctx, id,
		&engine.TxError{Code: engine.TxCancelled, Message: "cancelled by the user"}, s.clock.Now())
	if errors.Is(err, engine.ErrConflict) {
		current, rerr := s.store.TransactionByID(ctx, id)
		status := tx.Status
		if rerr == nil {
			status = current.Status
		}
		s.fail(c, engine.Errorf(engine.CodeConflict, "", "transaction %s is %s: only new or waiting transactions can be cancelled", id, status))
		return
	}
	if err != nil {
		s.fail(c, fmt.Errorf("cancel transaction %s: %w", id, err))
		return
	}
	s.engine.Settled(ctx, []string{cancelled.ID})
	ok(c, engine.ViewTransaction(cancelled))
}

// abandonTransaction serves POST /transactions/{id}/abandon: operators
// only (403 otherwise), any user's transaction. One still new or waiting
// fails at once with error code abandoned (200); one submitted gets that
// error noted and its nonce is filled by a 0-value transfer of the account
// to itself, so later nonces proceed: 202, and the transaction fails
// abandoned when the filler is mined (or completes, if one of its own
// versions is mined first). A transaction that has ended is 409.
func (s *Server) abandonTransaction(c *gin.Context) {
	if !currentUser(c).Operator {
		s.fail(c, engine.Errorf(engine.CodeForbidden, "", "only an operator may abandon a transaction"))
		return
	}
	id, err := pathID(c, "id", "transaction")
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	tx, ended, err := engine.Abandon(ctx, s.store, id, s.clock.Now())
	if engine.IsNotFound(err) {
		s.fail(c, notFound("", "transaction %s not found", id))
		return
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	if ended {
		s.engine.Settled(ctx, []string{tx.ID})
		ok(c, engine.ViewTransaction(tx))
		return
	}
	s.engine.CheckInFlight(tx.AccountID, tx.Network)
	respond(c, http.StatusAccepted, engine.ViewTransaction(tx))
}
