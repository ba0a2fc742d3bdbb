package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestGetGivesAListenablePort: the port can be listened on at once.
func TestGetGivesAListenablePort(t *testing.T) {
	p := Get(t)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("port %d: %v", p, err)
	}
	l.Close()
}
