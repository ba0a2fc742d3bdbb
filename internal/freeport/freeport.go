// Package freeport finds loopback TCP ports for the test harnesses that
// start servers (geth, etcd, Hardhat, cluster members, profilers).
package freeport

import (
	"net"
	"testing"
)

// Get returns a TCP port on 127.0.0.1 that was free a moment ago; it fails
// t when none can be had.
func Get(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
