package http

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// openAPIDocument is the OpenAPI 3 description of exactly the routes
// registered in routes(); TestOpenAPIMatchesRoutes keeps them in step.
//
//go:embed openapi.json
var openAPIDocument []byte

// healthz serves GET /healthz: the process is alive.
func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// openAPI serves GET /openapi.json.
func (s *Server) openAPI(c *gin.Context) {
	c.Data(http.StatusOK, "application/json; charset=utf-8", openAPIDocument)
}

// readyBody is the answer of /readyz; Error is set when not ready.
type readyBody struct {
	Status string            `json:"status,omitempty"`
	Error  *errorDetail      `json:"error,omitempty"`
	Checks map[string]string `json:"checks"`
}

// readyz serves GET /readyz: 200 when the database and every configured
// network answer, 503 unavailable otherwise, with the result of each check.
func (s *Server) readyz(c *gin.Context) {
	checks := s.Ready(c.Request.Context())
	var failed []string
	for name, result := range checks {
		if result != "ok" {
			failed = append(failed, name+": "+result)
		}
	}
	if s.draining.Load() {
		failed = append(failed, "shutting down")
	}
	if len(failed) == 0 {
		c.JSON(http.StatusOK, readyBody{Status: "ready", Checks: checks})
		return
	}
	sort.Strings(failed)
	c.JSON(http.StatusServiceUnavailable, readyBody{
		Error: &errorDetail{
			Code:    engine.CodeUnavailable,
			Message: "not ready: " + strings.Join(failed, "; "),
		},
		Checks: checks,
	})
}

// Ready checks the database ("database") and each configured network
// ("network:<name>": the node serves the configured chain id and its latest
// header, not too old), in parallel, each within ReadyTimeout. Each result
// is "ok" or the reason of the failure: what the node answered (never its
// URL, which may hold an API key).
func (s *Server) Ready(ctx context.Context) map[string]string {
	type check struct {
		name string
		run  func(context.Context) error
	}
	checks := []check{{"database", s.store.Ping}}
	for name, nw := range s.networks {
		checks = append(checks, check{"network:" + name, func(ctx context.Context) error {
			if nw.Chain == nil {
				return errors.New("no client")
			}
			id, err := chainOf(nw).ChainID(ctx)
			if err != nil {
				return nodeCallError{method: "eth_chainId", err: err}
			}
			if nw.ChainID != nil && id.Cmp(nw.ChainID) != 0 {
				return errWrongChain{got: id, want: nw.ChainID}
			}
			head, err := chainOf(nw).HeaderByNumber(ctx, nil)
			if err != nil {
				return nodeCallError{method: "eth_getBlockByNumber", err: err}
			}
			return s.checkHeadAge(head.Time)
		}})
	}
	results := make(map[string]string, len(checks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ch := range checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, s.cfg.ReadyTimeout)
			defer cancel()
			result := "ok"
			if err := ch.run(ctx); err != nil {
				what := "node"
				if ch.name == "database" {
					what = "database"
				}
				result = s.readyReason(ctx, what, err)
				s.log.WarnContext(ctx, "readiness check failed", "check", ch.name, "reason", result)
			}
			mu.Lock()
			results[ch.name] = result
			mu.Unlock()
		})
	}
	wg.Wait()
	return results
}

// errStaleHead is the reason of a network whose latest block is too old.
type errStaleHead struct{ age, max time.Duration }

func (e errStaleHead) Error() string {
	return fmt.Sprintf("latest block is %s old (more than %s): the node is not following the chain", e.age, e.max)
}

// checkHeadAge fails when MaxHeadAge is set and the head's timestamp
// (Unix seconds) is older than that.
func (s *Server) checkHeadAge(headTime uint64) error {
	if s.cfg.MaxHeadAge <= 0 {
		return nil
	}
	age := s.clock.Now().Sub(time.Unix(int64(headTime), 0)).Truncate(time.Second)
	if age > s.cfg.MaxHeadAge {
		return errStaleHead{age: age, max: s.cfg.MaxHeadAge}
	}
	return nil
}

// errWrongChain is the reason of a network whose node serves another chain.
type errWrongChain struct{ got, want *big.Int }

func (e errWrongChain) Error() string {
	return fmt.Sprintf("the node serves chain id %s, not the configured %s", e.got, e.want)
}

// nodeCallError is a readiness call to the node that failed.
type nodeCallError struct {
	method string
	err    error
}

func (e nodeCallError) Error() string { return e.method + ": " + e.err.Error() }
func (e nodeCallError) Unwrap() error { return e.err }

// maxReasonLen bounds a reason taken from the node's answer (an HTTP error
// status can come with a whole HTML page).
const maxReasonLen = 300

// readyReason is a short reason for a failed check of what ("node",
// "database"), without its address.
func (s *Server) readyReason(ctx context.Context, what string, err error) string {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", s.cfg.ReadyTimeout)
	}
	var stale errStaleHead
	if errors.As(err, &stale) {
		return stale.Error()
	}
	var wrong errWrongChain
	if errors.As(err, &wrong) {
		return wrong.Error()
	}
	var call nodeCallError
	if !errors.As(err, &call) {
		return unreachableReason(what, err)
	}
	// A JSON-RPC error is the node refusing the call: say so, with its
	// message and code, so that an operator sees what the node wants.
	var refused interface{ ErrorCode() int }
	reason := unreachableReason(what, call.err)
	if errors.As(call.err, &refused) {
		reason = fmt.Sprintf("node refused %s: %s (code %d)", call.method, reason, refused.ErrorCode())
	}
	if r := []rune(reason); len(r) > maxReasonLen {
		reason = string(r[:maxReasonLen]) + "..."
	}
	return reason
}
