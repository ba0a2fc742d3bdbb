package http

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// Bounds of request inputs that are not bounded elsewhere. The body as a
// whole is bounded by Config.MaxBodyBytes; contract names (maxContractName),
// Idempotency-Key (maxIdempotencyKeyLen), callback URLs (engine.MaxCallbackURLLen,
// Config.MaxCallbacks), dependsOn (engine.MaxDependsOn), method names
// (engine.MaxMethodLen), batch calls
// (maxBatchCalls) and page sizes (maxTxLimit, maxPageSize) have their own.
const (
	// maxQueryLen bounds free-text query parameters (text, name, symbol,
	// method, network, event).
	maxQueryLen = 256
)

// boundedQuery returns the query parameter name, refusing one longer than
// maxQueryLen characters as invalid_argument on that field.
func boundedQuery(c *gin.Context, name string) (string, error) {
	v := c.Query(name)
	if utf8.RuneCountInString(v) > maxQueryLen {
		return "", engine.Invalid(name, "%s is longer than %d characters", name, maxQueryLen)
	}
	return v, nil
}

// boundedQueries returns the named query parameters in order, or the
// error of the first one over maxQueryLen.
func boundedQueries(c *gin.Context, names ...string) ([]string, error) {
	out := make([]string, len(names))
	for i, n := range names {
		v, err := boundedQuery(c, n)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// limitTime gives every request a deadline of Config.RequestTimeout: the
// handler's store and node calls see it through the request context. A
// request that runs out of time gets 503 unavailable (see fail), also when
// its handler returned without answering.
func (s *Server) limitTime(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.RequestTimeout)
	defer cancel()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
	if !c.Writer.Written() && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		s.fail(c, timedOut(s.cfg.RequestTimeout))
	}
}

// timedOut is the error of a request that exceeded the request timeout.
func timedOut(limit time.Duration) *engine.Error {
	return unavailable("the request did not complete within the server's limit of %s; retry later", limit)
}
