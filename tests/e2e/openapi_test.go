package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// contract checks every response of the end-to-end tests against the
// OpenAPI document the running service serves at GET /openapi.json: the
// status must be documented for the operation and the body must match its
// schema. Responses to paths or methods the document does not have (the
// tests' deliberate 404s and 405s) are not checked.
type contract struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

// load fetches and parses the served document once.
func (c *contract) load(base string) error {
	c.once.Do(func() {
		res, err := http.Get(base + "/openapi.json")
		if err != nil {
			c.err = err
			return
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		if err != nil {
			c.err = err
			return
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(raw)
		if err != nil {
			c.err = err
			return
		}
		if err := doc.Validate(loader.Context); err != nil {
			c.err = err
			return
		}
		// Route requests to this service whatever servers the document names.
		doc.Servers = openapi3.Servers{{URL: base}}
		c.doc = doc
		c.router, c.err = gorillamux.NewRouter(doc)
	})
	return c.err
}

// check validates one response; it reports mismatches with t.Errorf.
func (c *contract) check(t *testing.T, base string, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if err := c.load(base); err != nil {
		t.Errorf("served openapi.json: %v", err)
		return
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return // not a documented route: nothing to check
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s: response %d does not match the served openapi.json: %v\nbody: %.500s", req.Method, req.URL.Path, status, err, body)
	}
}
