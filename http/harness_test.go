package http

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/engine/prom"
)

// testEnv is a server on fakes with two users: alice (an operator with a
// newTestServer is NewServer, closed when the test ends.
func newTestServer(tb testing.TB, cfg Config, deps Deps) *Server {
	s := NewServer(cfg, deps)
	tb.Cleanup(s.Close)
	return s
}

// default account and a registered token) and bob (with a default account).
type testEnv struct {
	t      testing.TB
	store  *testStore
	engine *fakeEngine
	chain  *fakeChain
	server *Server
	logs   *bytes.Buffer
	now    time.Time
	// registry holds the Prometheus metrics the server reports to.
	registry *prometheus.Registry

	alice, bob               *engine.User
	aliceToken, bobToken     string
	aliceAcct, bobAcct       *engine.Account
	aliceToken20, bobToken20 *engine.Contract
	aliceNFT                 *engine.Contract
}

var testNow = time.Date(2026, 11, 21, 23, 25, 31, 120_000_000, time.UTC)

func newTestEnv(t testing.TB) *testEnv {
	t.Helper()
	ctx := context.Background()
	store := newTestStore(t)
	sealer, err := keystore.NewKeySealer(bytes.Repeat([]byte{7}, keystore.MasterKeySize))
	if err != nil {
		t.Fatal(err)
	}
	env := &testEnv{t: t, store: store, engine: &fakeEngine{store: store}, logs: &bytes.Buffer{}, now: testNow}

	mkUser := func(operator bool) (*engine.User, string, *engine.Account) {
		u := &engine.User{ID: uuid.NewString(), Operator: operator, Created: testNow}
		secret, err := sealer.SealCallbackSecret(u.ID, "s")
		if err != nil {
			t.Fatal(err)
		}
		u.CallbackSecret = secret
		token, hash, err := keystore.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		a, err := engine.NewLocalAccount(sealer)
		if err != nil {
			t.Fatal(err)
		}
		a.ID, a.Owner, a.Default, a.Created = uuid.NewString(), u.ID, true, testNow
		if err := store.CreateUser(ctx, u, hash, a); err != nil {
			t.Fatal(err)
		}
		return u, token, a
	}
	env.alice, env.aliceToken, env.aliceAcct = mkUser(true)
	env.bob, env.bobToken, env.bobAcct = mkUser(false)

	mkContract := func(owner, name, bwtype string, addr common.Address) *engine.Contract {
		c := &engine.Contract{
			ID: uuid.NewString(), Owner: owner, Name: name, Network: "dev", Address: addr,
			ABI: json.RawMessage(testERC20ABI), BWType: bwtype, Created: testNow,
		}
		if err := store.CreateContract(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	tokenAddr := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	env.aliceToken20 = mkContract(env.alice.ID, "Demo Token", engine.TypeERC20, tokenAddr)
	env.bobToken20 = mkContract(env.bob.ID, "Bob Token", engine.TypeERC20, tokenAddr)
	env.aliceNFT = mkContract(env.alice.ID, "Badge", engine.TypeERC721, common.HexToAddress("0x00000000000000000000000000000000000000bb"))

	env.chain = &fakeChain{
		token: tokenAddr, name: "Demo", symbol: "DEMO", decimals: 18,
		supply:   new(big.Int).Exp(big.NewInt(10), big.NewInt(24), nil),
		balances: map[common.Address]*big.Int{env.aliceAcct.Address: big.NewInt(12345)},
	}
	logger := slog.New(slog.NewTextHandler(env.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	env.registry = prometheus.NewRegistry()
	metrics, err := prom.New(env.registry, prom.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Generous limits: the tests send many requests at one fixed instant;
	// the rate-limit tests install their own limiter (withLimiter).
	env.server = newTestServer(t, Config{RateLimit: RateLimitConfig{PerSecond: 1 << 30, PerHour: 1 << 30,
		AuthFailuresPerSecond: 1 << 30, AuthFailuresPerHour: 1 << 30}}, Deps{
		Store:    store,
		Sealer:   sealer,
		Networks: map[string]*engine.Network{"dev": {Name: "dev", ChainID: big.NewInt(1337), Chain: env.chain}},
		Engine:   env.engine,
		Clock:    fixedClock{testNow},
		Logger:   logger,
		Metrics:  metrics, MetricsHandler: prom.Handler(env.registry),
	})
	return env
}

// do sends a request; token "" sends no Authorization header.
func (env *testEnv) do(method, path, token, body string, headers ...string) *httptest.ResponseRecorder {
	env.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	env.server.Handler().ServeHTTP(rec, req)
	return rec
}

// data decodes {"data": ...} of a success response into v.
func decodeData(t *testing.T, rec *httptest.ResponseRecorder, v any) {
	t.Helper()
	var body struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", rec.Body.String(), err)
	}
	if body.Data == nil {
		t.Fatalf("no data in %s", rec.Body.String())
	}
	if err := json.Unmarshal(body.Data, v); err != nil {
		t.Fatalf("data %s: %v", body.Data, err)
	}
}

// wantStatus fails unless rec has the status.
func wantStatus(t *testing.T, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body.String())
	}
}

// wantError checks status, the error format, code and field.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, code engine.Code, field string) {
	t.Helper()
	wantStatus(t, rec, status)
	var body map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body %q: %v", rec.Body.String(), err)
	}
	if len(body) != 1 || body["error"] == nil {
		t.Fatalf("error body has keys other than error: %s", rec.Body.String())
	}
	var e struct {
		Code    engine.Code `json:"code"`
		Message string      `json:"message"`
		Field   *string     `json:"field"`
	}
	if err := json.Unmarshal(body["error"], &e); err != nil {
		t.Fatal(err)
	}
	if e.Code != code {
		t.Errorf("code = %q, want %q (%s)", e.Code, code, rec.Body.String())
	}
	if e.Message == "" {
		t.Errorf("empty message: %s", rec.Body.String())
	}
	got := ""
	if e.Field != nil {
		got = *e.Field
		if got == "" {
			t.Errorf("field present but empty: %s", rec.Body.String())
		}
	}
	if got != field {
		t.Errorf("field = %q, want %q (%s)", got, field, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q", ct)
	}
	if rec.Header().Get("X-API-Version") != "1.2.1" || rec.Header().Get("X-Request-Id") == "" {
		t.Errorf("missing common headers: %v", rec.Header())
	}
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newChunkedRequest returns a request whose body length is not declared.
func newChunkedRequest(method, path, body string) *http.Request {
	req := httptest.NewRequest(method, path, struct{ io.Reader }{strings.NewReader(body)})
	req.ContentLength = -1
	return req
}

func serve(env *testEnv, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	env.server.Handler().ServeHTTP(rec, req)
	return rec
}

func newRequest(method, path string) (*http.Request, *httptest.ResponseRecorder) {
	return httptest.NewRequest(method, path, nil), httptest.NewRecorder()
}
