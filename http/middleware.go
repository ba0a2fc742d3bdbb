package http

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

// Keys of the values the middleware puts in the gin context.
const (
	keyRequestID = "txengine.requestID"
	keyUser      = "txengine.user"
	// keyTokenHash is the hash of the request's bearer token (which
	// token is "current" for GET and DELETE /users/{id}/tokens).
	keyTokenHash = "txengine.tokenHash"
)

// maxRequestIDLen bounds an X-Request-Id that is echoed back.
const maxRequestIDLen = 128

// maxTokenLen bounds a bearer token before it is hashed and looked up.
const maxTokenLen = 512

// commonHeaders sets X-API-Version, X-Request-Id and the uncounted
// X-RateLimit-* headers before anything else runs, so that every response
// carries them, errors and 404s included. A
// sane incoming X-Request-Id (1 to 128 of [A-Za-z0-9._-]) is echoed; any
// other is replaced by a new UUID.
func (s *Server) commonHeaders(c *gin.Context) {
	id := c.GetHeader("X-Request-Id")
	if !saneRequestID(id) {
		id = uuid.NewString()
	}
	c.Set(keyRequestID, id)
	c.Request = c.Request.WithContext(withRequestID(c.Request.Context(), id))
	h := c.Writer.Header()
	h.Set("X-Request-Id", id)
	h.Set("X-API-Version", s.cfg.Version)
	// docs/api-decisions.md#authentication-and-users: the rate-limit headers are on every response. Requests that
	// no user is counted for keep these (the default limit, unconsumed);
	// rateLimit replaces them for an authenticated user.
	setLimitHeaders(h, s.limiter.exempt())
	c.Next()
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '.', b == '_', b == '-':
		default:
			return false
		}
	}
	return true
}

func requestID(c *gin.Context) string { return c.GetString(keyRequestID) }

// accessLog writes one line per request: method, route template (never the
// raw path with ids or the Authorization header), status, duration, request id.
func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	if !s.log.Enabled(c.Request.Context(), slog.LevelInfo) {
		return // spare building the record
	}
	route := c.FullPath()
	if route == "" {
		route = "(unmatched)"
	}
	attrs := []any{
		"method", c.Request.Method,
		"route", route,
		"status", c.Writer.Status(),
		"duration", time.Since(start),
	}
	if u := currentUser(c); u != nil {
		attrs = append(attrs, "user", u.ID)
	}
	s.log.InfoContext(c.Request.Context(), "http request", attrs...)
}

// recovery turns a panic of a handler into 500 internal in the error format.
// The panic value and stack are logged, never sent.
func (s *Server) recovery(c *gin.Context) {
	defer func() {
		rec := recover()
		if rec == nil {
			return
		}
		if rec == http.ErrAbortHandler {
			panic(rec)
		}
		s.log.ErrorContext(c.Request.Context(), "panic serving request",
			"method", c.Request.Method, "route", c.FullPath(),
			"panic", fmt.Sprint(rec), "stack", string(debug.Stack()))
		if c.Writer.Written() {
			c.Abort()
			return
		}
		c.AbortWithStatusJSON(http.StatusInternalServerError, errorBody{Error: errorDetail{
			Code: engine.CodeInternal, Message: "internal error",
		}})
	}()
	c.Next()
}

// limitBody bounds the request body to MaxBodyBytes. A declared length over
// the limit is refused at once; otherwise reading past it fails with
// *http.MaxBytesError, which decoding reports as 413.
func (s *Server) limitBody(c *gin.Context) {
	if c.Request.ContentLength > s.cfg.MaxBodyBytes {
		s.fail(c, tooLarge(s.cfg.MaxBodyBytes))
		return
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, s.cfg.MaxBodyBytes)
	c.Next()
}

func tooLarge(limit int64) *engine.Error {
	return engine.Errorf(engine.CodePayloadTooLarge, "", "request body exceeds %d bytes", limit)
}

// refuseWhenDraining answers 503 once Drain was called, with Connection:
// close so that clients stop reusing their connections. These expected
// refusals are not logged as errors (the access log still has them).
func (s *Server) refuseWhenDraining(c *gin.Context) {
	if s.draining.Load() {
		c.Header("Connection", "close")
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, errorBody{Error: errorDetail{
			Code: engine.CodeUnavailable, Message: "the service is shutting down",
		}})
		return
	}
	c.Next()
}

// authenticate resolves "Authorization: Bearer <token>" to the current user.
// Missing, malformed and unknown tokens get 401 unauthenticated with a
// WWW-Authenticate challenge (RFC 6750) and count against the client
// address's limit of failed authentications; an address over that limit
// gets 429 rate_limited before its token is looked up. The token is never
// logged.
func (s *Server) authenticate(c *gin.Context) {
	addr := c.ClientIP()
	if d := s.limiter.authFailures(addr); !d.allowed {
		s.refuse(c, d, "too many requests with a missing or bad token from this address")
		return
	}
	u, hash, err := s.tokenUser(c)
	if engine.ErrorCode(err) == engine.CodeUnauthenticated {
		s.limiter.authFailed(addr)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Set(keyUser, u)
	c.Set(keyTokenHash, hash)
	c.Next()
}

// tokenUser returns the user of the request's bearer token and the token's
// hash, or an unauthenticated error (with its WWW-Authenticate challenge
// set).
func (s *Server) tokenUser(c *gin.Context) (*engine.User, []byte, error) {
	header := c.GetHeader("Authorization")
	if header == "" {
		return nil, nil, engine.Errorf(engine.CodeUnauthenticated, "", "missing Authorization header: send Authorization: Bearer <token>")
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || !saneToken(token) {
		c.Header("WWW-Authenticate", `Bearer realm="txengine", error="invalid_request"`)
		return nil, nil, engine.Errorf(engine.CodeUnauthenticated, "", "malformed Authorization header: expected Bearer <token>")
	}
	hash := keystore.HashToken(token)
	u, err := s.users.get(c.Request.Context(), s.clock.Now(), hash, s.revocations == nil || s.revocations.MembershipSettled(), s.store.UserByTokenHash)
	if engine.IsNotFound(err) {
		c.Header("WWW-Authenticate", `Bearer realm="txengine", error="invalid_token"`)
		return nil, nil, engine.Errorf(engine.CodeUnauthenticated, "", "unknown or revoked token")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("authenticate: %w", err)
	}
	return u, hash, nil
}

// saneToken accepts the token68 characters of RFC 7235, within a length bound.
func saneToken(t string) bool {
	if t == "" || len(t) > maxTokenLen {
		return false
	}
	for i := 0; i < len(t); i++ {
		b := t[i]
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		case strings.IndexByte("-._~+/=", b) >= 0:
		default:
			return false
		}
	}
	return true
}

// currentUser returns the authenticated user, or nil on public routes.
func currentUser(c *gin.Context) *engine.User {
	v, ok := c.Get(keyUser)
	if !ok {
		return nil
	}
	u, _ := v.(*engine.User)
	return u
}

func (s *Server) noRoute(c *gin.Context) {
	path := c.Request.URL.Path
	if len(path) > 200 {
		path = path[:200] + "..."
	}
	s.fail(c, notFound("", "no route for %s %q", c.Request.Method, path))
}

func (s *Server) noMethod(c *gin.Context) {
	s.fail(c, engine.Errorf(codeMethodNotAllowed, "", "method %s is not allowed here (allowed: %s)",
		c.Request.Method, c.Writer.Header().Get("Allow")))
}
