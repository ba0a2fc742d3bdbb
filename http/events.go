package http

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// eventsPage is the body of GET /contracts/{contractId}/events: data plus
// next while later events may exist.
type eventsPage struct {
	Data []engine.EventView `json:"data"`
	Next string             `json:"next,omitempty"`
}

// contractEvents serves GET /contracts/{contractId}/events?fromBlock=
// &toBlock=&event=&limit=&cursor=: the contract's logs decoded with its ABI
// (engine.ContractEvents), oldest first (block, then log index), from
// fromBlock (default 0: "all events of a contract", those emitted before
// its registration too) to toBlock (default latest, clamped to the head),
// limit per page (default and most 1,000) with next while more may exist.
// A client that reads one page of a contract with at most 1,000 events
// has them all.
func (s *Server) contractEvents(c *gin.Context) {
	ct, err := s.pathContract(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	tg, err := s.contractTarget(ct)
	if err != nil {
		s.fail(c, err)
		return
	}
	q, err := eventQuery(c, tg.abi)
	if err != nil {
		s.fail(c, err)
		return
	}
	chain, canFilter := tg.network.Chain.(engine.IndexChain)
	if !canFilter {
		s.fail(c, unavailable("network %s cannot read logs", tg.network.Name))
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.ChainTimeout)
	defer cancel()
	page, err := engine.ContractEvents(ctx, chain, ct.Address, tg.abi, q)
	if err != nil {
		if _, coded := engine.AsError(err); !coded {
			err = networkFailure(tg.network.Name, err)
		}
		s.fail(c, err)
		return
	}
	res := eventsPage{Data: page.Events}
	if page.Next != nil {
		res.Next = encodeEventCursor(*page.Next)
	}
	c.JSON(200, res)
}

// eventQuery reads the query of GET /contracts/{contractId}/events for a
// contract described by a.
func eventQuery(c *gin.Context, a *abi.ABI) (engine.EventQuery, error) {
	var q engine.EventQuery
	name, err := boundedQuery(c, "event")
	if err != nil {
		return q, err
	}
	if name != "" {
		if q.Topics, err = engine.EventTopics(a, "event", name); err != nil {
			return q, err
		}
	}
	if q.From, err = queryBlockNumber(c, "fromBlock", false); err != nil {
		return q, err
	}
	if q.To, err = queryBlockNumber(c, "toBlock", true); err != nil {
		return q, err
	}
	if q.Limit, err = queryLimitOf(c, engine.MaxEventsPage); err != nil {
		return q, err
	}
	if v, set := c.GetQuery("cursor"); set {
		if q.At, err = decodeEventCursor(v); err != nil {
			return q, err
		}
	}
	return q, nil
}

// eventCursorVersion starts the cursors of the events listing ("e1" were
// the newest-first listing's: refused).
const eventCursorVersion = "e2"

// encodeEventCursor makes the opaque cursor of a position and scan pace.
func encodeEventCursor(p engine.EventCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s:%d:%d:%d:%d",
		eventCursorVersion, p.Block, p.Index, p.Span, p.Ceiling)))
}

// decodeEventCursor reads a cursor of encodeEventCursor; anything else is
// 400 invalid_argument on field cursor.
func decodeEventCursor(s string) (*engine.EventCursor, error) {
	bad := engine.Invalid("cursor", "cursor is not one this listing returned")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 5 || parts[0] != eventCursorVersion {
		return nil, bad
	}
	var n [4]uint64
	for i, bits := range []int{63, 32, 63, 63} {
		if n[i], err = strconv.ParseUint(parts[i+1], 10, bits); err != nil {
			return nil, bad
		}
	}
	if n[2] == 0 {
		return nil, bad // a span is at least one block
	}
	return &engine.EventCursor{Block: n[0], Index: uint(n[1]), Span: n[2], Ceiling: n[3]}, nil
}
