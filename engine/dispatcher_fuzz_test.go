package engine

import (
	"errors"
	"net"
	"net/netip"
	"testing"
)

// FuzzRefusePrivate: the dispatcher's dial check never panics on any
// network address, and lets through only host:port whose host is an IP
// literal that PrivateAddr does not flag and that CheckCallbackHost
// accepts (one rule at validation and at connect time); PrivateAddr never
// panics on an address made of a byte slice of any length.
func FuzzRefusePrivate(f *testing.F) {
	for _, s := range []string{
		"", ":", "1.2.3.4:80", "127.0.0.1:443", "10.0.0.1:80", "[::1]:80", "[fe80::1%eth0]:80", "[::ffff:127.0.0.1]:80",
		"[::ffff:8.8.8.8]:80", "0.0.0.0:0", "224.0.0.1:80", "[ff01::1]:80", "169.254.169.254:80", "example.com:80",
		"8.8.8.8", "[2001:4860:4860::8888]:443", "[64:ff9b::7f00:1]:80", "100.64.0.1:80", "[fc00::1]:80",
		"[2002:a9fe:a9fe::1]:80", "[64:ff9b::808:808]:443", "192.0.0.9:80", "198.18.0.1:80", "240.0.0.1:80", "[2001::1]:80",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, address string) {
		if addr, ok := netip.AddrFromSlice([]byte(address)); ok {
			_ = PrivateAddr(addr)
		}
		if err := refusePrivate("tcp", address, nil); err != nil {
			if host, _, splitErr := net.SplitHostPort(address); splitErr == nil && !errors.Is(err, ErrPrivateAddress) {
				t.Fatalf("refusePrivate(%q) refused host %q with an error that is not ErrPrivateAddress: %v", address, host, err)
			}
			return
		}
		host, _, splitErr := net.SplitHostPort(address)
		if splitErr != nil {
			t.Fatalf("refusePrivate(%q) let through an address that is not host:port", address)
		}
		addr, err := netip.ParseAddr(host)
		if err != nil || PrivateAddr(addr) {
			t.Fatalf("refusePrivate(%q) let through %q, not a public IP literal", address, host)
		}
		if err := CheckCallbackHost(host); err != nil {
			t.Fatalf("refusePrivate(%q) let through %q, which CheckCallbackHost refuses: %v", address, host, err)
		}
	})
}
