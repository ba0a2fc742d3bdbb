package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	nethttp "net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine/prom"
	apihttp "github.com/txengine/txengine/http"
)

// newMetrics creates the service's registry (never the global one) with
// the Go and process collectors and txengine's own metrics.
func newMetrics(cfg config.Config) (*prometheus.Registry, *prom.Metrics, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, nil, fmt.Errorf("register Go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, nil, fmt.Errorf("register process collector: %w", err)
	}
	maxAccounts := cfg.Metrics.MaxAccounts
	if maxAccounts == 0 {
		maxAccounts = -1 // prom: negative means none; zero its default
	}
	m, err := prom.New(reg, prom.Config{MaxAccounts: maxAccounts})
	if err != nil {
		return nil, nil, err
	}
	return reg, m, nil
}

// metricsServer serves GET /metrics on its own listen address
// (metrics.listen) until shut down.
type metricsServer struct {
	srv  *nethttp.Server
	done chan struct{}
}

// startMetricsServer listens on addr and serves h there.
func startMetricsServer(addr string, h nethttp.Handler, log *slog.Logger) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen %s: %w", addr, err)
	}
	m := &metricsServer{
		srv:  &nethttp.Server{Handler: apihttp.MetricsOnly(h), ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, nethttp.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	log.Info("serving metrics", "addr", ln.Addr().String())
	return m, nil
}

// Shutdown stops the metrics server and waits for its goroutine.
func (m *metricsServer) Shutdown(ctx context.Context) {
	_ = m.srv.Shutdown(ctx)
	<-m.done
}

// drainGrace is how long the API keeps answering 503 unavailable after a
// shutdown signal before its listener closes, so that clients and load
// balancers see the refusal rather than a closed port.
func drainGrace(timeout time.Duration) time.Duration { return min(timeout/10, 500*time.Millisecond) }

// startWatchdog exits the process with status 1 if the shutdown is not
// over within timeout: a shutdown never hangs. Stop the timer when done.
func startWatchdog(timeout time.Duration, log *slog.Logger) *time.Timer {
	return time.AfterFunc(timeout, func() {
		log.Error("shutdown did not finish in time; exiting", "shutdown_timeout", timeout)
		os.Exit(1)
	})
}
