package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// codeMethodNotAllowed is the one code the HTTP layer adds to the engine's
// catalogue: a known path asked with a method it does not serve. The
// response carries an Allow header.
const codeMethodNotAllowed engine.Code = "method_not_allowed"

// httpStatus is the one table from error codes to HTTP statuses.
func httpStatus(code engine.Code) int {
	switch code {
	case engine.CodeInvalidJSON, engine.CodeInvalidArgument:
		return http.StatusBadRequest
	case engine.CodeUnauthenticated:
		return http.StatusUnauthorized
	case engine.CodeForbidden:
		return http.StatusForbidden
	case engine.CodeNotFound:
		return http.StatusNotFound
	case codeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case engine.CodeConflict:
		return http.StatusConflict
	case engine.CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case engine.CodeRateLimited:
		return http.StatusTooManyRequests
	case engine.CodeUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// errorBody is the JSON error format: {"error": {"code", "message", "field"?}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    engine.Code `json:"code"`
	Message string      `json:"message"`
	Field   string      `json:"field,omitempty"`
}

// fail writes err as an error response and aborts the handler chain; a
// conflict of a request with an Idempotency-Key may instead replay the
// response of the request that won (replayAfterConflict). Errors
// that are not *engine.Error become 500 internal with a generic message; the
// real error is logged with the request id, never sent. Such an error of a
// request whose deadline (Config.RequestTimeout) passed is 503 unavailable
// instead: the request ran out of time.
func (s *Server) fail(c *gin.Context, err error) {
	if s.replayAfterConflict(c, err) {
		return
	}
	if engine.ErrorCode(err) == engine.CodeInternal && errors.Is(c.Request.Context().Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w: %w", timedOut(s.cfg.RequestTimeout), err)
	}
	detail := errorDetail{Code: engine.ErrorCode(err), Message: engine.ErrorMessage(err)}
	if e, ok := engine.AsError(err); ok {
		detail.Field = e.Field
	}
	status := httpStatus(detail.Code)
	if status >= 500 {
		s.log.ErrorContext(c.Request.Context(), "request failed",
			"method", c.Request.Method, "route", c.FullPath(),
			"code", detail.Code, "error", err.Error())
	}
	if detail.Code == engine.CodeUnauthenticated && c.Writer.Header().Get("WWW-Authenticate") == "" {
		c.Header("WWW-Authenticate", `Bearer realm="txengine"`)
	}
	c.AbortWithStatusJSON(status, errorBody{Error: detail})
}

func notFound(field, format string, args ...any) *engine.Error {
	return engine.Errorf(engine.CodeNotFound, field, format, args...)
}

func unavailable(format string, args ...any) *engine.Error {
	return engine.Errorf(engine.CodeUnavailable, "", format, args...)
}
