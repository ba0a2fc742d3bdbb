package http

import (
	"fmt"

	"github.com/gin-gonic/gin"

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
	ok(c, engine.ViewTransaction(tx))
}
