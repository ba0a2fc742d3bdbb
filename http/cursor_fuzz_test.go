package http

import (
	"encoding/base64"
	"net/url"
	"testing"

	"github.com/txengine/txengine/engine"
)

// fuzzCursorSeeds are cursors the cursor targets start from: valid ones of
// both listings, and broken variants.
var fuzzCursorSeeds = []string{
	"", "x", "=", "%", "\x00", "t1:1:2",
	base64.RawURLEncoding.EncodeToString([]byte(`{"c":1700000000000,"s":3}`)),
	base64.RawURLEncoding.EncodeToString([]byte(`{"c":1700000000000,"s":3,"a":true}`)),
	base64.RawURLEncoding.EncodeToString([]byte(`{"c":-9223372036854775808,"s":9223372036854775807}`)),
	base64.RawURLEncoding.EncodeToString([]byte(`{"c":1e30,"s":1}`)),
	base64.RawURLEncoding.EncodeToString([]byte(`{"s":0}`)),
	base64.RawURLEncoding.EncodeToString([]byte(`[]`)),
	base64.StdEncoding.EncodeToString([]byte(`{"c":1,"s":1}`)),
	encodeTransferCursor(engine.TransferCursor{BlockNumber: 12, LogIndex: 3}),
	encodeTransferCursor(engine.TransferCursor{BlockNumber: 1<<63 - 1, LogIndex: 1<<32 - 1}),
	base64.RawURLEncoding.EncodeToString([]byte("t1:18446744073709551615:1")),
	base64.RawURLEncoding.EncodeToString([]byte("t1:-1:1")),
	base64.RawURLEncoding.EncodeToString([]byte("t1:1:2:3")),
	base64.RawURLEncoding.EncodeToString([]byte("t2:1:2")),
}

// fuzzCheckCursor fails unless rec is 200, or 400 invalid_argument on field
// cursor.
func fuzzCheckCursor(t *testing.T, env *testEnv, path, cursor string) {
	t.Helper()
	rec := fuzzServe(env, "GET", path+"?"+url.Values{"cursor": {cursor}}.Encode(), "")
	status, e := fuzzCheckEnvelope(t, rec, "GET "+path+" cursor "+cursor)
	if status == 200 {
		return
	}
	if status != 400 || e.Code != engine.CodeInvalidArgument || e.Field != "cursor" {
		t.Fatalf("GET %s cursor %q: status %d %s, want 200 or 400 invalid_argument on cursor", path, cursor, status, rec.Body.String())
	}
}

// FuzzTransactionsCursor: GET /transactions?cursor= answers 200 or 400
// invalid_argument on field cursor for any cursor, in either sort order.
func FuzzTransactionsCursor(f *testing.F) {
	for _, s := range fuzzCursorSeeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	env := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, cursor string, asc bool) {
		fuzzReset(env)
		path := "/transactions"
		if asc {
			rec := fuzzServe(env, "GET", path+"?"+url.Values{"cursor": {cursor}, "sort": {"created"}}.Encode(), "")
			status, e := fuzzCheckEnvelope(t, rec, "GET /transactions?sort=created cursor "+cursor)
			if status != 200 && (status != 400 || e.Code != engine.CodeInvalidArgument || e.Field != "cursor") {
				t.Fatalf("GET /transactions?sort=created cursor %q: status %d %s", cursor, status, rec.Body.String())
			}
			return
		}
		fuzzCheckCursor(t, env, path, cursor)
	})
}

// FuzzTransfersCursor: decodeTransferCursor never panics, accepts only what
// encodeTransferCursor writes (its output re-encodes to a cursor that decodes
// to the same position), and GET /tokens/{id}/transfers?cursor= answers 200
// or 400 invalid_argument on field cursor.
func FuzzTransfersCursor(f *testing.F) {
	for _, s := range fuzzCursorSeeds {
		f.Add(s)
	}
	env := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, cursor string) {
		p, err := decodeTransferCursor(cursor)
		if err != nil {
			if e, ok := engine.AsError(err); !ok || e.Code != engine.CodeInvalidArgument || e.Field != "cursor" {
				t.Fatalf("decodeTransferCursor(%q): %v is not invalid_argument on cursor", cursor, err)
			}
		} else {
			q, err := decodeTransferCursor(encodeTransferCursor(*p))
			if err != nil || *q != *p {
				t.Fatalf("decodeTransferCursor(%q) = %+v does not round-trip: %+v, %v", cursor, *p, q, err)
			}
		}
		fuzzReset(env)
		fuzzCheckCursor(t, env, "/tokens/"+env.aliceToken20.ID+"/transfers", cursor)
	})
}

// FuzzEventsCursor: decodeEventCursor never panics, accepts only what
// encodeEventCursor writes, and GET /contracts/{id}/events?cursor= answers
// a cursor it refuses with 400 invalid_argument on field cursor (the fuzz
// environment's chain reads no logs: an accepted cursor ends in 503 there,
// TestEventsPagedExactlyOnce walks accepted ones).
func FuzzEventsCursor(f *testing.F) {
	for _, s := range fuzzCursorSeeds {
		f.Add(s)
	}
	f.Add(encodeEventCursor(engine.EventCursor{Block: 12, Index: 3, Span: 100, Ceiling: 1000}))
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("e2:9223372036854775808:1:1:0")))
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("e2:1:1:0:0")))
	env := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, cursor string) {
		p, err := decodeEventCursor(cursor)
		if err != nil {
			if e, ok := engine.AsError(err); !ok || e.Code != engine.CodeInvalidArgument || e.Field != "cursor" {
				t.Fatalf("decodeEventCursor(%q): %v is not invalid_argument on cursor", cursor, err)
			}
			fuzzReset(env)
			path := "/contracts/" + env.aliceToken20.ID + "/events"
			rec := fuzzServe(env, "GET", path+"?"+url.Values{"cursor": {cursor}}.Encode(), "")
			if status, e := fuzzCheckEnvelope(t, rec, "GET "+path+" cursor "+cursor); status != 400 || e.Code != engine.CodeInvalidArgument || e.Field != "cursor" {
				t.Fatalf("GET %s cursor %q: status %d %s, want 400 invalid_argument on cursor", path, cursor, status, rec.Body.String())
			}
			return
		}
		q, err := decodeEventCursor(encodeEventCursor(*p))
		if err != nil || *q != *p {
			t.Fatalf("decodeEventCursor(%q) = %+v does not round-trip: %+v, %v", cursor, *p, q, err)
		}
	})
}
