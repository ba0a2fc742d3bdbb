package rpcproxy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// TCP is a TCP proxy with faults, Shopify's toxiproxy run in process: it
// forwards every connection to its upstream and applies the toxics added
// (latency, a stall, a reset) to the connections open and to come. Unlike
// Proxy it knows nothing of JSON-RPC, so it also carries WebSocket
// subscriptions, and its faults hit in the middle of a request or answer.
// Its methods fail the test on error: call them from the test's goroutine.
type TCP struct {
	t     testing.TB
	proxy *toxiproxy.Proxy
}

// StartTCP starts a proxy on a free loopback port in front of upstream
// (host:port). It stops at the end of the test.
func StartTCP(t testing.TB, upstream string) *TCP {
	t.Helper()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	proxy := toxiproxy.NewProxy(server, "rpcproxy", "127.0.0.1:0", upstream)
	if err := proxy.Start(); err != nil {
		t.Fatalf("rpcproxy: start toxiproxy in front of %s: %v", upstream, err)
	}
	t.Cleanup(proxy.Stop)
	return &TCP{t: t, proxy: proxy}
}

// Addr returns the proxy's host:port.
func (p *TCP) Addr() string { return p.proxy.Listen }

// URL returns scheme://host:port of the proxy, e.g. URL("http") or
// URL("ws") for a node's endpoints.
func (p *TCP) URL(scheme string) string { return scheme + "://" + p.proxy.Listen }

// Latency delays the data the upstream sends back by latency ± jitter.
func (p *TCP) Latency(latency, jitter time.Duration) {
	p.t.Helper()
	p.add("latency", "downstream", map[string]any{"latency": latency.Milliseconds(), "jitter": jitter.Milliseconds()})
}

// Stall drops everything the client sends and closes each connection after
// d (0: never): a node that hangs, which only the client's timeout ends.
func (p *TCP) Stall(d time.Duration) {
	p.t.Helper()
	p.add("timeout", "upstream", map[string]any{"timeout": d.Milliseconds()})
}

// ResetPeer resets (TCP RST) each connection after it has sent data and d
// has passed: requests in flight lose their answer.
func (p *TCP) ResetPeer(d time.Duration) {
	p.t.Helper()
	p.add("reset_peer", "upstream", map[string]any{"timeout": d.Milliseconds()})
}

// Clear removes every toxic: data flows again.
func (p *TCP) Clear() {
	p.proxy.Toxics.ResetToxics(context.Background())
}

func (p *TCP) add(kind, stream string, attrs map[string]any) {
	p.t.Helper()
	b, err := json.Marshal(map[string]any{"name": kind + "_" + stream, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(string(b))); err != nil {
		p.t.Fatalf("rpcproxy: add toxiproxy toxic %s: %v", kind, err)
	}
}
