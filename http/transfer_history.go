package http

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// Pagination bounds of listings (docs/api-decisions.md#conventions).
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// transferView is one item of GET /tokens/{contractId}/transfers.
type transferView struct {
	From            string `json:"from"`
	To              string `json:"to"`
	Value           string `json:"value"`
	TransactionHash string `json:"transactionHash"`
	BlockNumber     uint64 `json:"blockNumber"`
	LogIndex        uint   `json:"logIndex"`
}

// transferPage is the body of the transfer history: data plus next when
// more rows exist.
type transferPage struct {
	Data []transferView `json:"data"`
	Next string         `json:"next,omitempty"`
}

// listTransfers serves GET /tokens/{contractId}/transfers?from=&to=&address=
// &fromBlock=&toBlock=&limit=&cursor=: the token's transfers from the
// service's own index of Transfer logs, newest first.
func (s *Server) listTransfers(c *gin.Context) {
	ct, err := s.pathToken(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	f := engine.TransferFilter{Network: ct.Network, Token: ct.Address}
	for _, p := range []struct {
		name string
		dst  **common.Address
	}{{"from", &f.From}, {"to", &f.To}, {"address", &f.Address}} {
		if v, ok := c.GetQuery(p.name); ok {
			a, err := engine.ParseAddress(p.name, v)
			if err != nil {
				s.fail(c, err)
				return
			}
			*p.dst = &a
		}
	}
	if f.FromBlock, err = queryBlockNumber(c, "fromBlock", false); err != nil {
		s.fail(c, err)
		return
	}
	if f.ToBlock, err = queryBlockNumber(c, "toBlock", false); err != nil {
		s.fail(c, err)
		return
	}
	if f.Limit, err = queryLimit(c); err != nil {
		s.fail(c, err)
		return
	}
	if v, ok := c.GetQuery("cursor"); ok {
		if f.After, err = decodeTransferCursor(v); err != nil {
			s.fail(c, err)
			return
		}
	}
	rows, next, err := s.store.ListTransfers(c.Request.Context(), f)
	if err != nil {
		s.fail(c, fmt.Errorf("transfers of %s: %w", ct.ID, err))
		return
	}
	page := transferPage{Data: make([]transferView, 0, len(rows))}
	for _, t := range rows {
		page.Data = append(page.Data, transferView{
			From: t.From.Hex(), To: t.To.Hex(), Value: t.Value.String(),
			TransactionHash: t.TxHash.Hex(), BlockNumber: t.BlockNumber, LogIndex: t.LogIndex,
		})
	}
	if next != nil {
		page.Next = encodeTransferCursor(*next)
	}
	c.JSON(200, page)
}

// queryLimit reads ?limit= (1 to 1000, default 100).
func queryLimit(c *gin.Context) (int, error) { return queryLimitOf(c, defaultPageSize) }

// queryLimitOf reads ?limit= (1 to 1000, default def).
func queryLimitOf(c *gin.Context, def int) (int, error) {
	v, ok := c.GetQuery("limit")
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxPageSize {
		return 0, engine.Invalid("limit", "limit must be an integer from 1 to %d", maxPageSize)
	}
	return n, nil
}

// encodeTransferCursor makes the opaque cursor of a position.
func encodeTransferCursor(p engine.TransferCursor) string {
	return encodeLogCursor("t1", p.BlockNumber, p.LogIndex)
}

func decodeTransferCursor(s string) (*engine.TransferCursor, error) {
	block, idx, err := decodeLogCursor("t1", s)
	if err != nil {
		return nil, err
	}
	return &engine.TransferCursor{BlockNumber: block, LogIndex: idx}, nil
}

// encodeLogCursor makes an opaque cursor of a log's position (block and log
// index) for the listing whose cursors start with version.
func encodeLogCursor(version string, block uint64, index uint) string {
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s:%d:%d", version, block, index)))
}

// decodeLogCursor reads a cursor of encodeLogCursor with version; anything
// else is 400 invalid_argument on field cursor.
func decodeLogCursor(version, s string) (block uint64, index uint, err error) {
	bad := engine.Invalid("cursor", "cursor is not one this listing returned")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, 0, bad
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 3 || parts[0] != version {
		return 0, 0, bad
	}
	block, err1 := strconv.ParseUint(parts[1], 10, 63)
	idx, err2 := strconv.ParseUint(parts[2], 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, bad
	}
	return block, uint(idx), nil
}

// encodeSeqCursor makes the opaque cursor of GET /subscriptions/{id}/events
// after the delivery of sequence seq (0: from the first).
func encodeSeqCursor(seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("q1:" + strconv.FormatInt(seq, 10)))
}

// decodeSeqCursor reads a cursor of encodeSeqCursor; anything else is 400
// invalid_argument on field cursor.
func decodeSeqCursor(s string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, engine.Invalid("cursor", "cursor is not one this listing returned")
	}
	v, found := strings.CutPrefix(string(raw), "q1:")
	seq, err := strconv.ParseInt(v, 10, 64)
	if !found || err != nil || seq < 0 || strconv.FormatInt(seq, 10) != v {
		return 0, engine.Invalid("cursor", "cursor is not one this listing returned")
	}
	return seq, nil
}
