package http

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// Event subscriptions (issue 19): POST /subscriptions stores a standing
// request for the logs of one event of one contract (kind events) or for the
// ERC-20 Transfer logs whose recipient is one of the caller's accounts (kind
// deposits). The network's subscription processor matches the logs and
// writes the deliveries; this file serves the subscriptions and the pull
// reading of their deliveries. Validation lives in subrequest.go.

// subscriptionView is the JSON form of a subscription.
type subscriptionView struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Network string `json:"network"`
	// ContractID is the registered contract an events subscription names.
	ContractID string `json:"contractId,omitempty"`
	// Address is the contract of an events subscription (none for deposits).
	Address   string                     `json:"address,omitempty"`
	Event     string                     `json:"event"`
	Signature string                     `json:"signature"`
	Filters   map[string]json.RawMessage `json:"filters,omitempty"`
	Callbacks []string                   `json:"callbacks"`
	// Confirmations is how many blocks must be on top of a block before its
	// logs are delivered.
	Confirmations uint64 `json:"confirmations"`
	FromBlock     uint64 `json:"fromBlock"`
	// NextBlock is the next block the processor reads: its progress.
	NextBlock uint64 `json:"nextBlock"`
	Created   string `json:"created"`
}

// viewSubscription returns the JSON form of sub.
func viewSubscription(sub *engine.Subscription) subscriptionView {
	v := subscriptionView{
		ID: sub.ID, Kind: sub.Kind, Network: sub.Network, ContractID: sub.ContractID,
		Event: sub.Event, Signature: sub.Signature, Filters: sub.Filters, Callbacks: sub.Callbacks,
		Confirmations: sub.Confirmations, FromBlock: sub.FromBlock, NextBlock: sub.Next,
		Created: engine.FormatTime(sub.Created),
	}
	if sub.Kind != engine.SubscriptionDeposits {
		v.Address = sub.Address.Hex()
	}
	if len(v.Filters) == 0 {
		v.Filters = nil
	}
	if v.Callbacks == nil {
		v.Callbacks = []string{}
	}
	return v
}

// createSubscription serves POST /subscriptions: it validates every field
// (nothing is stored on a refusal), checks the tree's cap and stores the
// subscription, processed from fromBlock (latest: the block after the
// network's head).
func (s *Server) createSubscription(c *gin.Context) {
	var req subscriptionRequest
	if err := s.decodeBody(c, &req, false); err != nil {
		s.fail(c, err)
		return
	}
	u := currentUser(c)
	sub, nw, err := s.subscriptionOf(c.Request.Context(), u, &req)
	if err != nil {
		s.fail(c, err)
		return
	}
	if sub.FromBlock, err = s.fromBlock(c.Request.Context(), nw, req.FromBlock); err != nil {
		s.fail(c, err)
		return
	}
	sub.ID, sub.Owner, sub.Next, sub.Created = engine.NewID(), u.ID, sub.FromBlock, s.clock.Now()

	unlock, err := s.checkSubscriptionCap(c.Request.Context(), u)
	if err != nil {
		s.fail(c, err)
		return
	}
	defer unlock()
	view := viewSubscription(sub)
	var idem *engine.IdempotencyRecord
	if !s.idempotency(c, http.StatusCreated, view, &idem) {
		return
	}
	if err := s.store.CreateSubscription(c.Request.Context(), sub, idem); err != nil {
		s.fail(c, fmt.Errorf("create subscription %s: %w", sub.ID, err))
		return
	}
	created(c, view)
}

// checkSubscriptionCap refuses a subscription of u over its tree's cap
// (QuotaConfig.MaxSubscriptions; operators are exempt) with 403 forbidden.
// The cap is counted, not enforced by the store: the creations of one tree
// are serialised in this process until the returned unlock, so concurrent
// requests to one node cannot pass it together (requests to several nodes
// of a cluster at the same instant can, by at most one each).
func (s *Server) checkSubscriptionCap(ctx context.Context, u *engine.User) (unlock func(), err error) {
	limit := s.cfg.Quotas.MaxSubscriptions
	if u.Operator || limit <= 0 {
		return func() {}, nil
	}
	root := rootOf(u, u.ID, false)
	unlock = s.subLocks.lock(root)
	n, err := s.store.CountSubscriptions(ctx, root)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("count subscriptions of %s: %w", root, err)
	}
	if n >= limit {
		unlock()
		return nil, engine.CapError("subscriptions", limit)
	}
	return unlock, nil
}

// subscriptionListBody is the answer of GET /subscriptions.
type subscriptionListBody struct {
	Data []subscriptionView `json:"data"`
	Next string             `json:"next,omitempty"`
}

// listSubscriptions serves GET /subscriptions?limit=&cursor=: the caller's
// subscriptions, oldest first.
func (s *Server) listSubscriptions(c *gin.Context) {
	limit, err := queryLimit(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var after *engine.SubscriptionCursor
	if v, set := c.GetQuery("cursor"); set {
		if after, err = decodeListCursor(v, true); err != nil {
			s.fail(c, err)
			return
		}
	}
	u := currentUser(c)
	// One row more than the page tells whether another page exists.
	subs, err := s.store.ListSubscriptions(c.Request.Context(), u.ID, after, limit+1)
	if err != nil {
		s.fail(c, fmt.Errorf("list subscriptions of %s: %w", u.ID, err))
		return
	}
	body := subscriptionListBody{Data: make([]subscriptionView, 0, min(len(subs), limit))}
	for i, sub := range subs {
		if i == limit {
			last := subs[limit-1]
			if body.Next, err = encodeListCursor(engine.TxCursor{Created: last.Created, Seq: last.Seq}, true); err != nil {
				s.fail(c, err)
				return
			}
			break
		}
		body.Data = append(body.Data, viewSubscription(sub))
	}
	c.JSON(http.StatusOK, body)
}

// getSubscription serves GET /subscriptions/{id}.
func (s *Server) getSubscription(c *gin.Context) {
	sub, err := s.pathSubscription(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, viewSubscription(sub))
}

// deleteSubscription serves DELETE /subscriptions/{id}: the subscription is
// no longer processed, listed or read, its pending deliveries are abandoned,
// and the answer is 200 with the subscription as it was (as DELETE
// /transactions/{id} answers the cancelled transaction).
func (s *Server) deleteSubscription(c *gin.Context) {
	sub, err := s.pathSubscription(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	err = s.store.DeleteSubscription(c.Request.Context(), sub.Owner, sub.ID)
	if engine.IsNotFound(err) {
		// Deleted by a concurrent request meanwhile.
		s.fail(c, notFound("", "subscription %s not found", sub.ID))
		return
	}
	if err != nil {
		s.fail(c, fmt.Errorf("delete subscription %s: %w", sub.ID, err))
		return
	}
	ok(c, viewSubscription(sub))
}

// pathSubscription returns the caller's subscription named by the path's
// {id}; another user's, a deleted one and an id that is not a UUID are not
// found.
func (s *Server) pathSubscription(c *gin.Context) (*engine.Subscription, error) {
	id, err := pathID(c, "id", "subscription")
	if err != nil {
		return nil, err
	}
	sub, err := s.store.SubscriptionByID(c.Request.Context(), id)
	if engine.IsNotFound(err) || (err == nil && sub.Owner != currentUser(c).ID) {
		return nil, notFound("", "subscription %s not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("subscription %s: %w", id, err)
	}
	return sub, nil
}

// subscriptionEventsBody is the answer of GET /subscriptions/{id}/events:
// Next is always present, the position to continue from.
type subscriptionEventsBody struct {
	Data []json.RawMessage `json:"data"`
	Next string            `json:"next"`
}

// subscriptionEvents serves GET /subscriptions/{id}/events?cursor=&limit=:
// the deliveries of the subscription in sequence order (the bodies its
// callbacks carry under "event"), after the cursor. next is the cursor
// after the last row returned, or the given one when no row is new, so a
// poller always continues from it.
func (s *Server) subscriptionEvents(c *gin.Context) {
	sub, err := s.pathSubscription(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	limit, err := queryLimit(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var after int64
	if v, set := c.GetQuery("cursor"); set {
		if after, err = decodeSeqCursor(v); err != nil {
			s.fail(c, err)
			return
		}
	}
	events, err := s.store.SubscriptionEvents(c.Request.Context(), sub.ID, after, limit)
	if err != nil {
		s.fail(c, fmt.Errorf("events of subscription %s: %w", sub.ID, err))
		return
	}
	body := subscriptionEventsBody{Data: make([]json.RawMessage, 0, len(events))}
	for _, ev := range events {
		if !json.Valid(ev.Body) {
			s.fail(c, fmt.Errorf("event %s of subscription %s: stored body is not JSON", ev.ID, sub.ID))
			return
		}
		body.Data = append(body.Data, ev.Body)
		after = ev.Seq
	}
	body.Next = encodeSeqCursor(after)
	c.JSON(http.StatusOK, body)
}
