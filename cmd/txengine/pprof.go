//go:build pprof

// A profiling build: `go build -tags pprof ./cmd/txengine` registers
// net/http/pprof on a side listener named by TXENGINE_PPROF (for example
// 127.0.0.1:6060), apart from the API's router. Release builds have no such
// listener (noprofiling.go). Use it for profiles under load:
//
//	go tool pprof -top -cum http://127.0.0.1:6060/debug/pprof/profile?seconds=10
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"
)

// startProfiling serves net/http/pprof on the address in TXENGINE_PPROF
// (nothing when unset) until ctx ends or the returned function is called;
// that function returns once the listener has stopped.
func startProfiling(ctx context.Context, getenv func(string) string, stderr io.Writer) (stop func()) {
	addr := getenv("TXENGINE_PPROF")
	if addr == "" {
		return func() {}
	}
	// Contention profiles (mutex, block) are empty unless sampled: one
	// contention event in 5, blocking events of 10 µs and more.
	runtime.SetMutexProfileFraction(5)
	runtime.SetBlockProfileRate(10_000)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { // owned by stop: it ends when the server is closed
		defer close(done)
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "pprof listener %s: %v\n", addr, err)
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	go func() { // owned by stop: it ends with ctx
		<-ctx.Done()
		_ = srv.Close()
	}()
	return func() {
		cancel()
		<-done
	}
}
