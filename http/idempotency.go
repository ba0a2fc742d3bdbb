package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// Idempotency (docs/api-decisions.md#conventions): a creating POST/PUT may carry an
// Idempotency-Key. The route's idempotent middleware looks the key up (per
// user): the same request (method, path and body, byte for byte) within 24 h
// gets the first response again, status and body, and creates nothing; a
// different request is 409 conflict. Otherwise the handler runs, and records
// its response with idempotency(), which puts the record on what it creates,
// so the store writes both in one database transaction. Requests with the
// same (user, key) are serialised in this process; across processes (the
// nodes of a cluster) the store's unique (user, key) makes the later write
// fail with a conflict, and the later request then answers as if it had
// come after the first: its response again if it is the same request, 409
// otherwise (replayAfterConflict).

// idempotencyHeader is the request header carrying the key.
const idempotencyHeader = "Idempotency-Key"

// maxIdempotencyKeyLen bounds a key.
const maxIdempotencyKeyLen = 255

// keyIdempotency is the gin context key of the request's *idemRequest.
const keyIdempotency = "txengine.idempotency"

// idemRequest is the idempotency state of one request with a key.
type idemRequest struct {
	key      string
	hash     string
	recorded bool
	// reread is set once the record was read again after a conflict.
	reread bool
}

// idempotent is the middleware of creating routes.
func (s *Server) idempotent(c *gin.Context) {
	key := c.GetHeader(idempotencyHeader)
	if key == "" {
		c.Next()
		return
	}
	if !saneIdempotencyKey(key) {
		s.fail(c, engine.Invalid(idempotencyHeader, "Idempotency-Key must be 1 to %d printable ASCII characters", maxIdempotencyKeyLen))
		return
	}
	raw, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.fail(c, tooLarge(tooBig.Limit))
			return
		}
		s.fail(c, engine.Errorf(engine.CodeInvalidJSON, "", "reading the request body failed"))
		return
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(raw))
	u := currentUser(c)
	unlock := s.idemLocks.lock(u.ID + "\x00" + key)
	defer unlock()

	req := &idemRequest{key: key, hash: engine.RequestHash(c.Request.Method, c.Request.URL.Path, raw)}
	if s.replay(c, u, req) {
		return
	}
	c.Set(keyIdempotency, req)
	c.Next()
	if st := c.Writer.Status(); st >= 200 && st < 300 && !req.recorded {
		s.log.ErrorContext(c.Request.Context(), "creating handler did not record its idempotency key",
			"request_id", requestID(c), "route", c.FullPath())
	}
}

// replay answers a request whose key is known: the first response again,
// or 409 for another request. It reports whether it answered.
func (s *Server) replay(c *gin.Context, u *engine.User, req *idemRequest) bool {
	rec, found, err := readOne(s.idemReads, idemKey{user: u.ID, key: req.key})
	if err == nil && (!found || rec.Expired(s.clock.Now())) {
		return false
	}
	if err != nil {
		s.fail(c, fmt.Errorf("idempotency key: %w", err))
		return true
	}
	if rec.RequestHash != req.hash {
		s.fail(c, engine.Errorf(engine.CodeConflict, idempotencyHeader,
			"Idempotency-Key was used with another request (method, path or body) in the last 24 hours"))
		return true
	}
	body, err := s.sealer.OpenIdempotency(u.ID, req.key, rec.Body)
	if err != nil {
		s.fail(c, fmt.Errorf("idempotency key: open stored response: %w", err))
		return true
	}
	c.Header("Idempotent-Replayed", "true")
	c.Data(rec.Status, "application/json; charset=utf-8", body)
	c.Abort()
	return true
}

// idemKey is an Idempotency-Key of a user.
type idemKey struct{ user, key string }

// readIdempotency reads the records of keys that exist (idemReads): one
// read per user among keys (a burst is usually one user's). keys holds no
// key twice: idemLocks serialises the requests of one key.
func (s *Server) readIdempotency(ctx context.Context, keys []idemKey) (map[idemKey]*engine.IdempotencyRecord, error) {
	byUser := make(map[string][]string)
	var users []string
	for _, k := range keys {
		if _, ok := byUser[k.user]; !ok {
			users = append(users, k.user)
		}
		byUser[k.user] = append(byUser[k.user], k.key)
	}
	out := make(map[idemKey]*engine.IdempotencyRecord, len(keys))
	for _, u := range users {
		recs, err := s.store.IdempotencyRecords(ctx, u, byUser[u])
		if err != nil {
			return nil, err
		}
		for key, r := range recs {
			out[idemKey{user: u, key: key}] = r
		}
	}
	return out, nil
}

// replayAfterConflict answers a request with an Idempotency-Key whose
// creating write failed with err, when err is a conflict because another
// process stored a record of the same (user, key) after replay looked: the
// record is read again and replayed (the first response, or 409 for
// another request). It reports whether it answered; without such a record
// the conflict was another one, and the caller reports err.
func (s *Server) replayAfterConflict(c *gin.Context, err error) bool {
	if !errors.Is(err, engine.ErrConflict) {
		return false
	}
	v, ok := c.Get(keyIdempotency)
	if !ok {
		return false
	}
	req := v.(*idemRequest)
	if req.reread {
		return false
	}
	req.reread = true
	return s.replay(c, currentUser(c), req)
}

// idempotency records the response (status and {"data": view}) of a
// creating request into *dst, for the store to write with what it creates.
// Without an Idempotency-Key it sets nothing. It answers the request with an
// error and returns false if the record cannot be built. The handler must
// then answer exactly with status and view.
func (s *Server) idempotency(c *gin.Context, status int, view any, dst **engine.IdempotencyRecord) bool {
	v, ok := c.Get(keyIdempotency)
	if !ok {
		return true
	}
	req := v.(*idemRequest)
	u := currentUser(c)
	body, err := json.Marshal(dataBody{Data: view})
	if err != nil {
		s.fail(c, fmt.Errorf("idempotency key: encode response: %w", err))
		return false
	}
	// The body is sealed: it may carry a one-time API token.
	sealed, err := s.sealer.SealIdempotency(u.ID, req.key, body)
	if err != nil {
		s.fail(c, fmt.Errorf("idempotency key: seal response: %w", err))
		return false
	}
	*dst = &engine.IdempotencyRecord{
		UserID: u.ID, Key: req.key, RequestHash: req.hash, Status: status, Body: sealed, Created: s.clock.Now(),
	}
	req.recorded = true
	return true
}

func saneIdempotencyKey(k string) bool {
	if len(k) > maxIdempotencyKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// keyedMutex serialises work per key; entries live while someone holds or
// waits for them.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

// lock locks key and returns its unlock.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
