//go:build !pprof

package main

import (
	"context"
	"io"
)

// startProfiling does nothing in a release build; a build with -tags pprof
// serves net/http/pprof beside the API (pprof.go).
func startProfiling(context.Context, func(string) string, io.Writer) (stop func()) {
	return func() {}
}
