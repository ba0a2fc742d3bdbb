package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the embedded store's driver
)

// chunked is a request body sent without a Content-Length (chunked), so
// that the server learns its size only by reading it.
type chunked string

// request sends one request with the given Authorization header value
// (empty: none) and extra headers (name, value pairs); body is nil (none),
// a string (sent as is) or a chunked. The response is checked against the
// served OpenAPI document, as with call. It also returns the documented
// route the request matched ("" when none).
func (s *service) request(method, path, authorization string, body any, headers ...string) (response, string) {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case chunked:
		rd = io.MultiReader(strings.NewReader(string(b)))
	default:
		s.t.Fatalf("request body of type %T", body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	s.contract.check(s.t, s.URL, req, res.StatusCode, res.Header, raw)
	r := response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	_ = json.Unmarshal(raw, &r.Body)
	route := ""
	if s.contract.router != nil {
		if rt, _, err := s.contract.router.FindRoute(req); err == nil {
			route = rt.Method + " " + rt.Path
		}
	}
	return r, route
}

// tableCounts returns the row count of each table of the embedded store in
// dataDir, read through a read-only connection (the service may be
// running: the store is in WAL mode).
func tableCounts(t *testing.T, dataDir string) map[string]int {
	t.Helper()
	db := openStoreReadOnly(t, dataDir)
	defer db.Close()
	counts := map[string]int{}
	for _, table := range storeTables(t, db) {
		var n int
		if err := db.QueryRow(fmt.Sprintf(`SELECT count(*) FROM %q`, table)).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		counts[table] = n
	}
	return counts
}

// openStoreReadOnly opens <dataDir>/txengine.db read-only.
func openStoreReadOnly(t *testing.T, dataDir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "txengine.db")+"?mode=ro")
	if err != nil {
		t.Fatalf("open store read-only: %v", err)
	}
	return db
}

// storeTables lists the tables of the store (not SQLite's own).
func storeTables(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatalf("list tables: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		out = append(out, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("the store has no tables")
	}
	return out
}

// listLen returns the number of items of a list endpoint's data.
func (s *service) listLen(path, token string) int {
	s.t.Helper()
	items, ok := s.must(200, "GET", path, token, nil).([]any)
	if !ok {
		s.t.Fatalf("GET %s: data is not a list", path)
	}
	return len(items)
}
