package http

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// openAPIValidator checks real responses against openapi.json.
type openAPIValidator struct {
	doc *openapi3.T
}

// newOpenAPIValidator loads and validates the document.
func newOpenAPIValidator(t *testing.T) *openAPIValidator {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openAPIDocument)
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI 3 document: %v", err)
	}
	return &openAPIValidator{doc: doc}
}

// check validates rec, the response to req, against the operation method
// of the path template (e.g. "/contracts/{contractId}"): its status must be
// documented and its body must match the documented schema.
func (v *openAPIValidator) check(t testing.TB, method, template string, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	item := v.doc.Paths.Find(template)
	if item == nil {
		t.Fatalf("openapi.json has no path %s", template)
	}
	op := item.GetOperation(method)
	if op == nil {
		t.Fatalf("openapi.json has no %s %s", method, template)
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req,
			Route:   &routers.Route{Spec: v.doc, Path: template, PathItem: item, Method: method, Operation: op},
			Options: opts,
		},
		Status:  rec.Code,
		Header:  rec.Header(),
		Body:    io.NopCloser(bytes.NewReader(rec.Body.Bytes())),
		Options: opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s: response %d does not match openapi.json: %v\nbody: %s", method, req.URL.Path, rec.Code, err, rec.Body.String())
	}
}

// TestOpenAPIDocumentValid checks the document against the OpenAPI 3 rules.
func TestOpenAPIDocumentValid(t *testing.T) {
	newOpenAPIValidator(t)
}
