package http

import (
	"context"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/prom"
)

// acceptAll is an Engine whose Submit stores nothing and answers at once:
// the benchmark measures the HTTP layer alone.
type acceptAll struct{ fakeEngine }

func (*acceptAll) Submit(_ context.Context, tx *engine.Transaction) (*engine.Transaction, error) {
	return tx, nil
}

// BenchmarkCreateTransfer is one POST /tokens/{id}/transfers through the
// whole router, as txload sends it (an operator's token, "from" an
// account id), on fakes, with the access log at warn as `make bench` runs
// the service: the CPU and allocations of the HTTP layer per accept.
//
//	go test -run '^$' -bench CreateTransfer -benchmem ./http/
func BenchmarkCreateTransfer(b *testing.B) {
	env := newTestEnv(b)
	metrics, err := prom.New(prometheus.NewRegistry(), prom.Config{})
	if err != nil {
		b.Fatal(err)
	}
	srv := newTestServer(b, Config{}, Deps{
		Store:    env.store,
		Networks: map[string]*engine.Network{"dev": {Name: "dev", ChainID: big.NewInt(1337), Chain: env.chain}},
		Engine:   &acceptAll{},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Metrics:  metrics,
	})
	h := srv.Handler()
	path := "/tokens/" + env.aliceToken20.ID + "/transfers"
	body := `{"to":"0x6d3a4e1c5f6e2d2d6c2b9f0ab3f0c1a9e8b7c6d5","value":"1","from":"` + env.aliceAcct.ID + `"}`
	for b.Loop() {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+env.aliceToken)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusAccepted {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
