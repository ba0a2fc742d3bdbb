package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// client calls the txengine API with one operator token over keep-alive
// connections. With several base URLs (the nodes of a cluster) it spreads
// its requests over them in turn.
type client struct {
	bases []string
	next  atomic.Uint64
	token string
	hc    *http.Client
}

// newClient returns a client whose transport keeps at least conns idle
// connections to each node of the service, so that every concurrent worker
// reuses its own connections.
func newClient(bases []string, token string, conns int, timeout time.Duration) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = (conns + 16) * len(bases)
	tr.MaxIdleConnsPerHost = conns + 16
	tr.MaxConnsPerHost = 0
	return &client{bases: bases, token: token, hc: &http.Client{Transport: tr, Timeout: timeout}}
}

// base returns the base URL of the next request.
func (c *client) base() string {
	if len(c.bases) == 1 {
		return c.bases[0]
	}
	return c.bases[(c.next.Add(1)-1)%uint64(len(c.bases))]
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

// do sends method path with body (nil: none; []byte: sent as is; anything
// else: marshalled) and decodes the "data" member of a 2xx answer into out
// (nil: ignored). Non-2xx answers are *apiError.
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base()+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return &apiError{Code: "transport", Message: err.Error()}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return &apiError{Code: "transport", Message: fmt.Sprintf("%s %s: read body: %v", method, path, err)}
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(raw, &e)
		if e.Error.Code == "" {
			e.Error.Code = fmt.Sprintf("http_%d", res.StatusCode)
		}
		return &apiError{Status: res.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
	}
	if out == nil {
		return nil
	}
	env := struct {
		Data any     `json:"data"`
		Next *string `json:"next"`
	}{Data: out}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// page fetches one page of a list and returns the "next" cursor ("" at the
// end).
func (c *client) page(ctx context.Context, path string, out any) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base()+path, nil)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := c.hc.Do(req)
	if err != nil {
		return "", &apiError{Code: "transport", Message: err.Error()}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return "", &apiError{Code: "transport", Message: err.Error()}
	}
	if res.StatusCode != http.StatusOK {
		return "", &apiError{Status: res.StatusCode, Code: fmt.Sprintf("http_%d", res.StatusCode), Message: string(raw)}
	}
	env := struct {
		Data any    `json:"data"`
		Next string `json:"next"`
	}{Data: out}
	if err := json.Unmarshal(raw, &env); err != nil {
		return "", fmt.Errorf("GET %s: decode answer: %w", path, err)
	}
	return env.Next, nil
}
