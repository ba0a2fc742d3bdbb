package http

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// Metrics is what the HTTP layer reports. It is declared here and
// implemented by engine/prom; nil in Deps discards the measurements.
type Metrics interface {
	// ObserveHTTP counts one request by method, route template ("(unmatched)"
	// when no route matched), status and duration.
	ObserveHTTP(method, route string, status int, d time.Duration)
	// RateLimited counts one request refused with 429 because window
	// ("second" or "hour") was exhausted.
	RateLimited(window string)
	// RateLimitFallback counts one request whose limits were counted in
	// this node's memory because the rate counter store failed.
	RateLimitFallback()
}

// nopMetrics discards measurements.
type nopMetrics struct{}

func (nopMetrics) ObserveHTTP(string, string, int, time.Duration) {}
func (nopMetrics) RateLimited(string)                             {}
func (nopMetrics) RateLimitFallback()                             {}

// unmatchedRoute is the route label of requests that matched no route, so
// that scanners probing random paths cannot create series.
const unmatchedRoute = "(unmatched)"

// observe reports every request to Metrics, by route template.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = unmatchedRoute
	}
	s.metrics.ObserveHTTP(c.Request.Method, route, c.Writer.Status(), time.Since(start))
}

// serveMetrics serves GET /metrics with Deps.MetricsHandler, unauthenticated
// like /healthz. Without a handler (metrics off, or served on their own
// listen address: metrics.listen) it answers 404 not_found.
func (s *Server) serveMetrics(c *gin.Context) {
	if s.metricsHandler == nil {
		s.fail(c, engine.Errorf(engine.CodeNotFound, "", "metrics are not served on this address"))
		return
	}
	s.metricsHandler.ServeHTTP(c.Writer, c.Request)
}

// MetricsOnly returns a handler that serves only GET /metrics with h, for a
// separate metrics listen address; everything else is 404.
func MetricsOnly(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	return mux
}

// MetricsAuth returns h guarded by a bearer token (metrics.tokenFile): a
// request without `Authorization: Bearer <token>` gets 401
// unauthenticated in the API's error format. The token is not an API
// token: it opens /metrics only, for a Prometheus scrape configured with
// it. An empty token returns h unguarded.
func MetricsAuth(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(errorBody{Error: errorDetail{Code: engine.CodeUnauthenticated,
				Message: "GET /metrics needs the metrics bearer token (metrics.tokenFile)"}})
			return
		}
		h.ServeHTTP(w, r)
	})
}
