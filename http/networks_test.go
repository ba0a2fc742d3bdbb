package http

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestListNetworks(t *testing.T) {
	env := newTestEnv(t)
	rec := env.do("GET", "/networks", env.aliceToken, "")
	wantStatus(t, rec, http.StatusOK)
	var body struct {
		Data []networkView `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Data) != 1 {
		t.Fatalf("networks = %+v", body.Data)
	}
	n := body.Data[0]
	if n.Name != "dev" || n.ChainID != "1337" || !n.Healthy || n.LatestBlock == nil || n.Error != "" {
		t.Fatalf("dev network = %+v", n)
	}
	wantStatus(t, env.do("GET", "/networks", "", ""), http.StatusUnauthorized)

	// A node that does not answer: listed as unhealthy with the reason, 200.
	env.chain.mu.Lock()
	env.chain.headErr = &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 8545}, Err: errors.New("connect: connection refused")}
	env.chain.mu.Unlock()
	rec = env.do("GET", "/networks", env.aliceToken, "")
	wantStatus(t, rec, http.StatusOK)
	body.Data = nil
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if n := body.Data[0]; n.Healthy || n.Error == "" || n.LatestBlock != nil || strings.Contains(n.Error, "10.0.0.1") {
		t.Fatalf("network with a dead node = %+v (the reason must not show the node's address)", n)
	}
}
