package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrPrivateAddress is returned (wrapped) for a callback host or address
// that callbacks may not reach: by CheckCallbackHost when a URL is
// validated, and by a delivery that would connect to such an address.
var ErrPrivateAddress = errors.New("callback address is not publicly routable (loopback, private, link-local, shared, reserved, documentation or multicast)")

// deniedPrefixes are the addresses callbacks may not reach, from the IANA
// IPv4 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv4-special-registry/) and the
// IANA IPv6 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv6-special-registry/), plus the
// multicast blocks (IANA multicast address space registries) and the
// deprecated IPv6 site-local block. Entries of those registries that are
// globally reachable services of their own (AS112, AMT) are left out;
// ones inside a listed block (PCP and TURN anycast in 192.0.0.0/24,
// ORCHIDv2 in 2001::/23) are refused with their block. Forms that embed an
// IPv4 address are not listed here: PrivateAddr judges them by the IPv4
// address they carry (see embeddedIPv4).
//
// The table is read only.
var deniedPrefixes = [...]netip.Prefix{
	// IPv4.
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network" (RFC 791), 0.0.0.0/32 "this host"
	netip.MustParsePrefix("10.0.0.0/8"),         // private use (RFC 1918)
	netip.MustParsePrefix("100.64.0.0/10"),      // shared address space, carrier-grade NAT (RFC 6598)
	netip.MustParsePrefix("127.0.0.0/8"),        // loopback (RFC 1122)
	netip.MustParsePrefix("169.254.0.0/16"),     // link local (RFC 3927), cloud metadata services
	netip.MustParsePrefix("172.16.0.0/12"),      // private use (RFC 1918)
	netip.MustParsePrefix("192.0.0.0/24"),       // IETF protocol assignments (RFC 6890): DS-Lite, NAT64 discovery, ...
	netip.MustParsePrefix("192.0.2.0/24"),       // documentation TEST-NET-1 (RFC 5737)
	netip.MustParsePrefix("192.88.99.0/24"),     // deprecated 6to4 relay anycast (RFC 7526)
	netip.MustParsePrefix("192.168.0.0/16"),     // private use (RFC 1918)
	netip.MustParsePrefix("198.18.0.0/15"),      // benchmarking (RFC 2544)
	netip.MustParsePrefix("198.51.100.0/24"),    // documentation TEST-NET-2 (RFC 5737)
	netip.MustParsePrefix("203.0.113.0/24"),     // documentation TEST-NET-3 (RFC 5737)
	netip.MustParsePrefix("224.0.0.0/4"),        // multicast (RFC 5771)
	netip.MustParsePrefix("240.0.0.0/4"),        // reserved (RFC 1112)
	netip.MustParsePrefix("255.255.255.255/32"), // limited broadcast (RFC 919), inside 240.0.0.0/4 already

	// IPv6.
	netip.MustParsePrefix("::/128"),         // unspecified (RFC 4291)
	netip.MustParsePrefix("::1/128"),        // loopback (RFC 4291)
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use IPv4/IPv6 translation (RFC 8215): where the IPv4 sits depends on the operator's prefix length
	netip.MustParsePrefix("100::/64"),       // discard-only (RFC 6666)
	netip.MustParsePrefix("100:0:0:1::/64"), // dummy IPv6 prefix
	netip.MustParsePrefix("2001::/23"),      // IETF protocol assignments (RFC 2928): Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID
	netip.MustParsePrefix("2001:db8::/32"),  // documentation (RFC 3849)
	netip.MustParsePrefix("3fff::/20"),      // documentation (RFC 9637)
	netip.MustParsePrefix("5f00::/16"),      // segment routing SIDs (RFC 9602)
	netip.MustParsePrefix("fc00::/7"),       // unique local (RFC 4193)
	netip.MustParsePrefix("fe80::/10"),      // link-local unicast (RFC 4291)
	netip.MustParsePrefix("fec0::/10"),      // site-local, deprecated (RFC 3879)
	netip.MustParsePrefix("ff00::/8"),       // multicast (RFC 4291)
}

// Prefixes of IPv6 forms that carry an IPv4 address at a fixed place.
var (
	// ipv4Compatible is ::a.b.c.d (RFC 4291 §2.5.5.1, deprecated); :: and
	// ::1 are in deniedPrefixes and checked first.
	ipv4Compatible = netip.MustParsePrefix("::/96")
	// nat64 is the well-known NAT64 prefix 64:ff9b::/96 (RFC 6052): the
	// IPv4 address is the last 32 bits.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// sixToFour is 6to4 2002::/16 (RFC 3056): the IPv4 address of the
	// site's router is bits 16 to 48.
	sixToFour = netip.MustParsePrefix("2002::/16")
	// globalUnicast is 2000::/3, the one IPv6 block IANA allocates for
	// global unicast (IANA IPv6 Address Space registry): the rest is
	// reserved, special-purpose or multicast.
	globalUnicast = netip.MustParsePrefix("2000::/3")
)

// embeddedIPv4 returns the IPv4 address that addr (IPv6, unmapped) carries
// when it is IPv4-compatible, in the well-known NAT64 prefix or a 6to4
// address; ok is false for every other address.
func embeddedIPv4(addr netip.Addr) (v4 netip.Addr, ok bool) {
	b := addr.As16()
	switch {
	case ipv4Compatible.Contains(addr), nat64.Contains(addr):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// PrivateAddr reports whether callbacks may not reach addr: an address in
// deniedPrefixes, an IPv6 address outside global unicast 2000::/3, an
// address with a zone (it names a local interface), or the invalid
// address. An IPv6 address that embeds an IPv4 address is judged by that
// IPv4 address: IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible
// (::a.b.c.d), well-known NAT64 (64:ff9b::a.b.c.d, what DNS64 answers for
// an IPv4-only receiver, so a public one stays reachable from an
// IPv6-only deployment) and 6to4 (2002:AABB:CCDD::/48, whose packets go
// to that IPv4 router). Local-use NAT64 (64:ff9b:1::/48) and Teredo
// (2001::/32) are refused whole: the first has no fixed place for the
// IPv4 address, the second is in the refused 2001::/23.
func PrivateAddr(addr netip.Addr) bool {
	if !addr.IsValid() || addr.Zone() != "" {
		return true
	}
	addr = addr.Unmap()
	for _, p := range deniedPrefixes {
		if p.Contains(addr) {
			return true
		}
	}
	if addr.Is4() {
		return false
	}
	if v4, ok := embeddedIPv4(addr); ok {
		return PrivateAddr(v4)
	}
	return !globalUnicast.Contains(addr)
}

// CheckCallbackHost returns an error wrapping ErrPrivateAddress when host,
// the host of a callback URL (url.URL.Hostname, or with its IPv6 brackets),
// names an address callbacks may not reach: "localhost" or a name under
// ".localhost" (RFC 6761), an IP literal for which PrivateAddr holds, a
// host with a zone ("fe80::1%eth0"), or a name ending in a number that is
// not a dotted-quad IPv4 address (127.1, 2130706433, 0x7f000001,
// 0177.0.0.1), which resolvers read as IPv4 in ways that differ. Other
// names are not resolved here: the dispatcher checks the address it
// connects to with PrivateAddr.
func CheckCallbackHost(host string) error {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return fmt.Errorf("%w: %s is a loopback name", ErrPrivateAddress, host)
	}
	// A zone ("fe80::1%25eth0" in a URL, "fe80::1%eth0" once decoded)
	// names a local interface: refused on any host, IP literal or not.
	if strings.ContainsRune(h, '%') {
		return fmt.Errorf("%w: %s names a network interface", ErrPrivateAddress, host)
	}
	if addr, err := netip.ParseAddr(h); err == nil {
		if PrivateAddr(addr) {
			return fmt.Errorf("%w: %s", ErrPrivateAddress, host)
		}
		return nil
	}
	if endsInNumber(h) {
		return fmt.Errorf("%w: %s is not a dotted-quad IPv4 address but may be read as one", ErrPrivateAddress, host)
	}
	return nil
}

// endsInNumber reports whether the last label of host is a decimal, octal
// or hexadecimal number (the WHATWG URL standard's "ends in a number"): no
// top-level domain is, and resolvers read such names as IPv4 addresses.
func endsInNumber(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.Trim(last, "0123456789") == "" {
		return true
	}
	hex, ok := strings.CutPrefix(last, "0x")
	return ok && strings.Trim(hex, "0123456789abcdef") == ""
}
