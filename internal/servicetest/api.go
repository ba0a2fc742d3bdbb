package servicetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Request is one request to the API.
type Request struct {
	Method, Path string
	// Token is sent as the bearer token (none when empty).
	Token string
	// Body is the JSON body: nil sends none, a string or []byte is sent as
	// is (malformed bodies included), anything else is encoded.
	Body any
	// Header holds extra request headers (Idempotency-Key, ...).
	Header map[string]string
}

// Response is an answer of the API, with its JSON body decoded when it is
// an object.
type Response struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// Data returns the object of the answer's data (nil when it is not one).
func (r Response) Data() map[string]any {
	d, _ := r.Body["data"].(map[string]any)
	return d
}

// Decode decodes the answer's data into out; an answer that is not 2xx is
// an error carrying its body.
func (r Response) Decode(out any) error {
	if r.Status < 200 || r.Status >= 300 {
		return fmt.Errorf("status %d: %s", r.Status, r.Raw)
	}
	env := struct {
		Data any `json:"data"`
	}{out}
	if err := json.Unmarshal(r.Raw, &env); err != nil {
		return fmt.Errorf("decode the data: %w", err)
	}
	return nil
}

// Call sends r to the API at base with hc (http.DefaultClient when nil)
// and reads the whole answer. It returns the request it sent (for a
// contract check) and only transport errors: an error status is an
// answer.
func Call(hc *http.Client, base string, r Request) (Response, *http.Request, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	var rd io.Reader
	switch b := r.Body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return Response{}, nil, fmt.Errorf("%s %s: encode the body: %w", r.Method, r.Path, err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(r.Method, base+r.Path, rd)
	if err != nil {
		return Response{}, nil, fmt.Errorf("%s %s: %w", r.Method, r.Path, err)
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	res, err := hc.Do(req)
	if err != nil {
		return Response{}, req, fmt.Errorf("%s %s: %w", r.Method, r.Path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return Response{}, req, fmt.Errorf("%s %s: read the body: %w", r.Method, r.Path, err)
	}
	out := Response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	_ = json.Unmarshal(raw, &out.Body)
	return out, req, nil
}
