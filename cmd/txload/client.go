package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	api "github.com/txengine/txengine/client"
)

// client calls the txengine API through the generated Go client (package
// client, from the served OpenAPI document) with one operator token over
// keep-alive connections. With several base URLs (the nodes of a cluster)
// it spreads its requests over them in turn.
type client struct {
	bases []string
	apis  []*api.Client
	next  atomic.Uint64
	hc    *http.Client
	token string
}

// newClient returns a client whose transport keeps at least conns idle
// connections to each node of the service, so that every concurrent worker
// reuses its own connections.
func newClient(bases []string, token string, conns int, timeout time.Duration) (*client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = (conns + 16) * len(bases)
	tr.MaxIdleConnsPerHost = conns + 16
	tr.MaxConnsPerHost = 0
	c := &client{bases: bases, hc: &http.Client{Transport: tr, Timeout: timeout}, token: token}
	auth := api.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
	for _, base := range bases {
		a, err := api.NewClient(base, api.WithHTTPClient(c.hc), auth)
		if err != nil {
			return nil, fmt.Errorf("client of %s: %w", base, err)
		}
		c.apis = append(c.apis, a)
	}
	return c, nil
}

// api returns the generated client of the next request's node.
func (c *client) api() *api.Client {
	if len(c.apis) == 1 {
		return c.apis[0]
	}
	return c.apis[(c.next.Add(1)-1)%uint64(len(c.apis))]
}

// apiError is an error answer of the API, or a transport failure
// (Status 0, Code "transport").
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string {
	if e.Status == 0 {
		return "transport: " + e.Message
	}
	return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

// errorCode is the API error code of err ("transport" for network errors,
// "other" for anything else).
func errorCode(err error) string {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return "other"
}

// page is a success body of the API: the data, and the cursor of the next
// page of a list ("" or absent at the end).
type page[T any] struct {
	Data T       `json:"data"`
	Next *string `json:"next"`
}

// answer reads the answer to one call of the generated client, res and err
// as it returned them: a failed call is a transport *apiError; an answer of
// another status than want is an *apiError with the API's error code;
// otherwise the body is decoded into a page of T.
func answer[T any](op string, res *http.Response, err error, want int) (page[T], error) {
	var p page[T]
	if err != nil {
		return p, &apiError{Code: "transport", Message: fmt.Sprintf("%s: %v", op, err)}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return p, &apiError{Code: "transport", Message: fmt.Sprintf("%s: read body: %v", op, err)}
	}
	if res.StatusCode != want {
		var e api.ErrorResponse
		_ = json.Unmarshal(raw, &e)
		code := string(e.Error.Code)
		if code == "" {
			code = fmt.Sprintf("http_%d", res.StatusCode)
		}
		return p, &apiError{Status: res.StatusCode, Code: code, Message: e.Error.Message}
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, fmt.Errorf("%s: decode answer: %w", op, err)
	}
	return p, nil
}
