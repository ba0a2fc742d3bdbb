package evm

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// TestDialKeepsConnectionsAlive: concurrent calls over http reuse their
// connections instead of dialling one per call beyond the two idle ones the
// default transport keeps.
func TestDialKeepsConnectionsAlive(t *testing.T) {
	var dials atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x539"}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := Dial(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const conc, rounds = 16, 20
	for range rounds {
		var wg sync.WaitGroup
		for range conc {
			wg.Go(func() {
				// The id of every request is not 1, but the client matches
				// http responses to their request by the connection.
				if id, err := c.ChainID(context.Background()); err != nil || id.Int64() != 1337 {
					t.Errorf("chain id %v, %v", id, err)
				}
			})
		}
		wg.Wait()
	}
	if n := dials.Load(); n > 2*conc {
		t.Fatalf("%d connections for %d rounds of %d concurrent calls: keep-alive connections are not reused", n, rounds, conc)
	}
}
