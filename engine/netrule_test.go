package engine_test

import (
	"errors"
	"net/netip"
	"net/url"
	"testing"

	"github.com/txengine/txengine/engine"
)

// TestPrivateAddr: every refused range has an address inside refused and,
// where the neighbour is a public address, one just outside accepted.
func TestPrivateAddr(t *testing.T) {
	tests := []struct {
		name    string
		in, out []string // refused; accepted
	}{
		// IPv4.
		{"this network 0.0.0.0/8", []string{"0.0.0.0", "0.0.0.1", "0.255.255.255"}, []string{"1.0.0.0"}},
		{"private 10/8", []string{"10.0.0.0", "10.1.2.3", "10.255.255.255"}, []string{"9.255.255.255", "11.0.0.0"}},
		{"shared 100.64.0.0/10", []string{"100.64.0.0", "100.64.0.1", "100.100.100.200", "100.127.255.255"}, []string{"100.63.255.255", "100.128.0.0"}},
		{"loopback 127/8", []string{"127.0.0.1", "127.0.0.0", "127.255.255.255"}, []string{"126.255.255.255", "128.0.0.0"}},
		{"link local 169.254/16", []string{"169.254.0.0", "169.254.169.254", "169.254.255.255"}, []string{"169.253.255.255", "169.255.0.0"}},
		{"private 172.16/12", []string{"172.16.0.0", "172.20.1.1", "172.31.255.255"}, []string{"172.15.255.255", "172.32.0.0"}},
		{"IETF 192.0.0.0/24", []string{"192.0.0.0", "192.0.0.1", "192.0.0.9", "192.0.0.170", "192.0.0.255"}, []string{"191.255.255.255", "192.0.1.0"}},
		{"TEST-NET-1 192.0.2.0/24", []string{"192.0.2.0", "192.0.2.1", "192.0.2.255"}, []string{"192.0.1.255", "192.0.3.0"}},
		{"6to4 relay 192.88.99.0/24", []string{"192.88.99.0", "192.88.99.1", "192.88.99.255"}, []string{"192.88.98.255", "192.88.100.0"}},
		{"private 192.168/16", []string{"192.168.0.0", "192.168.1.1", "192.168.255.255"}, []string{"192.167.255.255", "192.169.0.0"}},
		{"benchmarking 198.18.0.0/15", []string{"198.18.0.0", "198.18.0.1", "198.19.255.255"}, []string{"198.17.255.255", "198.20.0.0"}},
		{"TEST-NET-2 198.51.100.0/24", []string{"198.51.100.0", "198.51.100.7", "198.51.100.255"}, []string{"198.51.99.255", "198.51.101.0"}},
		{"TEST-NET-3 203.0.113.0/24", []string{"203.0.113.0", "203.0.113.9", "203.0.113.255"}, []string{"203.0.112.255", "203.0.114.0"}},
		{"multicast 224.0.0.0/4", []string{"224.0.0.0", "224.0.0.1", "239.255.255.255"}, []string{"223.255.255.255"}},
		{"reserved 240.0.0.0/4", []string{"240.0.0.0", "240.0.0.1", "254.255.255.255"}, nil},
		{"broadcast 255.255.255.255", []string{"255.255.255.255"}, nil},
		{"public IPv4", nil, []string{"8.8.8.8", "1.1.1.1", "93.184.215.14", "192.31.196.1", "192.52.193.1", "192.175.48.1"}},

		// IPv6.
		{"unspecified ::", []string{"::"}, nil},
		{"loopback ::1", []string{"::1"}, nil},
		{"IPv4-mapped", []string{"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:100.64.0.1", "::ffff:0.0.0.0", "::ffff:169.254.169.254", "::ffff:240.0.0.1"},
			[]string{"::ffff:8.8.8.8"}},
		{"IPv4-compatible", []string{"::127.0.0.1", "::0.0.0.2", "::10.1.2.3", "::169.254.169.254", "::100.64.0.1"}, []string{"::8.8.8.8"}},
		{"SIIT IPv4-translated ::ffff:0:0:0/96", []string{"::ffff:0:8.8.8.8", "::ffff:0:127.0.0.1"}, nil},
		{"NAT64 64:ff9b::/96", []string{"64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b::6440:1", "64:ff9b::", "64:ff9b::f000:1", "64:ff9b::c000:1"},
			[]string{"64:ff9b::808:808", "64:ff9b::101:101"}},
		{"NAT64 local use 64:ff9b:1::/48", []string{"64:ff9b:1::", "64:ff9b:1::808:808", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff"}, nil},
		{"outside NAT64 prefixes", []string{"64:ff9b:0:0:0:1::", "64:ff9b:2::808:808"}, nil},
		{"discard 100::/64", []string{"100::", "100::1", "100::ffff:ffff:ffff:ffff"}, nil},
		{"dummy 100:0:0:1::/64", []string{"100:0:0:1::1"}, nil},
		{"IETF 2001::/23", []string{"2001::", "2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:2::1", "2001:10::1", "2001:1ff:ffff::1"},
			[]string{"2001:200::1", "2000:ffff:ffff::1"}},
		{"documentation 2001:db8::/32", []string{"2001:db8::", "2001:db8::1", "2001:db8:ffff:ffff::1"}, []string{"2001:db7:ffff::1", "2001:db9::1"}},
		{"6to4 2002::/16, embedded IPv4 private", []string{"2002:a9fe:a9fe::1", "2002:7f00:1::1", "2002:a00:1::", "2002:6440:1::1", "2002::1", "2002:c058:6301::1"},
			[]string{"2002:808:808::1", "2002:101:101:1::1"}},
		{"documentation 3fff::/20", []string{"3fff::1", "3fff:fff:ffff::1"}, []string{"3fff:1000::1", "3ffe:ffff::1"}},
		{"SRv6 5f00::/16", []string{"5f00::1"}, nil},
		{"unique local fc00::/7", []string{"fc00::", "fd00::1", "fdff:ffff::1"}, nil},
		{"link-local fe80::/10", []string{"fe80::", "fe80::1", "febf:ffff::1"}, nil},
		{"site-local fec0::/10", []string{"fec0::", "fec0::1", "feff:ffff::1"}, nil},
		{"multicast ff00::/8", []string{"ff00::", "ff02::1", "ff05::2", "ff0e::1"}, nil},
		{"outside global unicast 2000::/3", []string{"4000::1", "1fff:ffff::1", "e000::1", "::2:0:0:1"}, nil},
		{"public IPv6", nil, []string{"2001:4860:4860::8888", "2606:4700:4700::1111", "2a00:1450:4001::1", "3ffe::1", "2001:200::1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range tt.in {
				if !engine.PrivateAddr(netip.MustParseAddr(s)) {
					t.Errorf("PrivateAddr(%s) = false, want refused", s)
				}
			}
			for _, s := range tt.out {
				if engine.PrivateAddr(netip.MustParseAddr(s)) {
					t.Errorf("PrivateAddr(%s) = true, want accepted", s)
				}
			}
		})
	}
	if !engine.PrivateAddr(netip.Addr{}) {
		t.Error("the invalid address is accepted")
	}
	if !engine.PrivateAddr(netip.MustParseAddr("2001:4860:4860::8888%eth0")) {
		t.Error("a public address with a zone is accepted")
	}
}

// TestCheckCallbackHost: hosts as url.URL.Hostname gives them (and with
// brackets), names and literals.
func TestCheckCallbackHost(t *testing.T) {
	refused := []string{
		"localhost", "LOCALHOST", "localhost.", "a.localhost", "x.y.LocalHost.",
		"127.0.0.1", "127.0.0.1.", "0.0.0.0", "100.64.0.1", "192.0.0.1", "198.18.0.1", "240.0.0.1", "255.255.255.255",
		"169.254.169.254", "::1", "[::1]", "::", "[::ffff:127.0.0.1]", "::ffff:127.0.0.1", "[64:ff9b::a9fe:a9fe]",
		"64:ff9b::a9fe:a9fe", "[2002:a9fe:a9fe::1]", "fe80::1%eth0", "[fe80::1%eth0]", "2001:4860:4860::8888%eth0",
		"127.0.0.1%eth0", "[FC00::1]", "[2001:db8::1]",
		// Names ending in a number: read as IPv4 by some resolvers.
		"127.1", "2130706433", "0177.0.0.1", "0x7f000001", "0x7f.1", "0X7F000001", "1.2.3", "8.8.8.8.8", "example.123", "example.0x1",
	}
	for _, h := range refused {
		if err := engine.CheckCallbackHost(h); !errors.Is(err, engine.ErrPrivateAddress) {
			t.Errorf("CheckCallbackHost(%q) = %v, want ErrPrivateAddress", h, err)
		}
	}
	accepted := []string{
		"example.com", "example.com.", "localhost.example.com", "notlocalhost", "a-localhost", "123.example.com", "0x7f.example",
		"8.8.8.8", "[2001:4860:4860::8888]", "2001:4860:4860::8888", "[64:ff9b::808:808]", "[2002:808:808::1]", "::ffff:8.8.8.8",
		"example.com1", "1x", "example.0xg",
	}
	for _, h := range accepted {
		if err := engine.CheckCallbackHost(h); err != nil {
			t.Errorf("CheckCallbackHost(%q) = %v, want accepted", h, err)
		}
	}
	// As the HTTP layer calls it: the host of a parsed URL.
	for raw, want := range map[string]bool{
		"http://[fe80::1%25eth0]:80/cb":     true,
		"http://127.0.0.1%25eth0/":          true,
		"https://[::ffff:7f00:1]/":          true,
		"https://user@100.64.0.1:8443/x":    true,
		"http://example.com@198.18.0.1/":    true,
		"https://example.com/cb":            false,
		"https://[2606:4700:4700::1111]/cb": false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("url.Parse(%q): %v", raw, err)
		}
		if err := engine.CheckCallbackHost(u.Hostname()); (err != nil) != want {
			t.Errorf("CheckCallbackHost(host of %q = %q) = %v, want refused %v", raw, u.Hostname(), err, want)
		}
	}
}
