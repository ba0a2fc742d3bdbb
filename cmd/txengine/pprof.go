//go:build pprof

// A profiling build: `go build -tags pprof ./cmd/txengine` registers
// net/http/pprof on a side listener named by TXENGINE_PPROF (for example
// 127.0.0.1:6060), apart from the API's router. Release builds have no such
// listener. Use it for profiles under load:
//
//	go tool pprof -top -cum http://127.0.0.1:6060/debug/pprof/profile?seconds=10
package main

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
)

func init() {
	addr := os.Getenv("TXENGINE_PPROF")
	if addr == "" {
		return
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
	go func() { // lives as long as the process
		if err := http.ListenAndServe(addr, mux); err != nil {
			fmt.Fprintf(os.Stderr, "pprof listener %s: %v\n", addr, err)
		}
	}()
}
