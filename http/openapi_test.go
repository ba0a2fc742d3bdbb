package http

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// TestOpenAPIMatchesRoutes checks that the document describes exactly the
// registered routes, both ways.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	env := newTestEnv(t)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	registered := map[string]bool{}
	for _, r := range env.server.router.Routes() {
		registered[r.Method+" "+documentedPath(ginToOpenAPI(r.Path))] = true
	}
	for k := range registered {
		if !documented[k] {
			t.Errorf("route %s is not documented", k)
		}
	}
	for k := range documented {
		if !registered[k] {
			t.Errorf("documented %s is not a route", k)
		}
	}
}

// documentedPath is the document's name of a route's path: gin names a
// path position once for all routes, so /tokens/{network}/{address}/...
// is registered under the name of /tokens/{contractId}.
func documentedPath(path string) string {
	if rest, ok := strings.CutPrefix(path, "/tokens/{contractId}/{address}"); ok {
		return "/tokens/{network}/{address}" + rest
	}
	return path
}

// ginToOpenAPI converts /a/:b/c to /a/{b}/c.
func ginToOpenAPI(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ":") || strings.HasPrefix(p, "*") {
			parts[i] = "{" + p[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// TestOpenAPIReferences checks that every $ref of the document resolves and
// that every path parameter is declared.
func TestOpenAPIReferences(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "$ref" {
					ref, _ := x.(string)
					if !resolves(doc, ref) {
						t.Errorf("unresolved $ref %q", ref)
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
}

func resolves(doc map[string]any, ref string) bool {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	var cur any = doc
	for _, part := range strings.Split(p, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[part]; !ok {
			return false
		}
	}
	return true
}

// TestFullSurfaceRegisters registers, on a scratch router, the routes of
// this version together with the later ones of docs/api-decisions.md#tokens under the same
// parameter names, to show that gin accepts the whole set without a panic
// and dispatches the static segments first.
func TestFullSurfaceRegisters(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	var hit string
	h := func(c *gin.Context) {
		hit = c.FullPath()
		keys := make([]string, 0, len(c.Params))
		for _, p := range c.Params {
			keys = append(keys, p.Key+"="+p.Value)
		}
		slices.Sort(keys)
		hit += " " + strings.Join(keys, ",")
	}
	routes := []string{
		"GET /accounts", "POST /accounts", "GET /accounts/default", "PUT /accounts/default",
		"GET /accounts/:id", "GET /accounts/:id/balance", "GET /accounts/default/balance",
		"POST /users", "GET /users/me", "POST /users/:id/tokens", "PUT /users/:id/limits",
		"GET /tokens", "GET /tokens/:contractId", "GET /tokens/:contractId/balances/default",
		"GET /tokens/:contractId/balances/:address", "GET /tokens/:contractId/transfers",
		"POST /tokens/:contractId/transfers", "GET /tokens/:contractId/:address",
		"GET /tokens/:contractId/:address/supply", "GET /tokens/:contractId/:address/circulating",
		"GET /transactions", "GET /transactions/:id", "DELETE /transactions/:id",
		"PUT /contracts", "GET /contracts", "POST /contracts/call", "GET /contracts/:contractId",
		"POST /contracts/:contractId/send/:method", "POST /contracts/:contractId/call/:method",
		"GET /contracts/:contractId/events",
		"GET /contracts/network/:network/block/latest", "GET /contracts/network/:network/block/:number",
		"GET /contracts/network/:network/gas-price",
		"POST /contracts/network/:network/address/:address/call/:method",
		"POST /contracts/network/:network/address/:address/send/:method",
		"GET /networks", "GET /healthz", "GET /readyz", "GET /openapi.json", "GET /metrics",
	}
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt, " ")
		r.Handle(method, path, h)
	}
	for _, tt := range []struct{ method, path, want string }{
		{"GET", "/tokens/abc/transfers", "/tokens/:contractId/transfers contractId=abc"},
		{"GET", "/tokens/dev/0xabc", "/tokens/:contractId/:address address=0xabc,contractId=dev"},
		{"GET", "/tokens/dev/0xabc/supply", "/tokens/:contractId/:address/supply address=0xabc,contractId=dev"},
		{"GET", "/tokens/abc/balances/default", "/tokens/:contractId/balances/default contractId=abc"},
		{"GET", "/tokens/abc/balances/0x1", "/tokens/:contractId/balances/:address address=0x1,contractId=abc"},
		{"GET", "/accounts/default/balance", "/accounts/default/balance "},
		{"GET", "/contracts/network/dev/block/latest", "/contracts/network/:network/block/latest network=dev"},
		{"POST", "/contracts/call", "/contracts/call "},
		{"GET", "/contracts/call", "/contracts/:contractId contractId=call"},
	} {
		hit = ""
		req, rec := newRequest(tt.method, tt.path)
		r.ServeHTTP(rec, req)
		if hit != tt.want {
			t.Errorf("%s %s: hit %q, want %q", tt.method, tt.path, hit, tt.want)
		}
	}
}
