package engine

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// FuzzCallbackURL: Builder.CallbackURLs never panics; a URL it accepts is an
// absolute http(s) URL with a host, and, unless private callbacks are
// allowed, its host is neither localhost nor an IP literal (zone or not)
// that the dispatcher would refuse to connect to (engine.PrivateAddr).
func FuzzCallbackURL(f *testing.F) {
	for _, s := range []string{
		"", "x", "http://", "http:///x", "https://example.com/cb", "http://example.com:8080/a?b=c#d", "ftp://example.com/",
		"//example.com/", "/relative", "HTTP://EXAMPLE.COM/", "http://localhost/", "http://LOCALHOST./", "http://a.localhost/",
		"http://127.0.0.1/", "http://127.0.0.1.:80/", "http://10.1.2.3/", "http://192.168.0.1/", "http://169.254.169.254/latest",
		"http://0.0.0.0/", "http://[::1]/", "http://[::]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:8.8.8.8]/",
		"http://[fe80::1%25eth0]/", "http://[fe80::1%25]/", "http://[fc00::1]/", "http://[ff02::1]/", "http://224.0.0.1/",
		"http://8.8.8.8/", "http://0177.0.0.1/", "http://2130706433/", "http://0x7f000001/", "http://user:pw@127.0.0.1/",
		"http://example.com@127.0.0.1/", "http://127.0.0.1%2f@example.com/", "http://[::1]:80/", "http:// 127.0.0.1/",
		"http://\t127.0.0.1/", "http://%31%32%37.0.0.1/", "https://[2001:db8::1]/",
		"http://100.64.0.1/", "http://192.0.0.1/", "http://198.18.0.1/", "http://240.0.0.1/", "http://[64:ff9b::a9fe:a9fe]/",
		"http://[64:ff9b::808:808]/", "http://[2002:a9fe:a9fe::1]/", "http://[2001::1]/", "http://127.0.0.1%25eth0/", "http://" + strings.Repeat("a", 3000),
	} {
		f.Add(s, false)
	}
	f.Add("http://127.0.0.1/", true)
	f.Add("ftp://127.0.0.1/", true)
	f.Fuzz(func(t *testing.T, raw string, allowPrivate bool) {
		b := Builder{MaxCallbacks: 10, AllowPrivateCallbacks: allowPrivate}
		got, err := b.CallbackURLs([]string{raw})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidArgument || e.Field != "callbacks" {
				t.Fatalf("CallbackURLs(%q): %v is not invalid_argument on callbacks", raw, err)
			}
			return
		}
		if len(got) != 1 || got[0] != raw {
			t.Fatalf("CallbackURLs(%q) = %q, want the URL unchanged", raw, got)
		}
		u, err := url.Parse(raw)
		if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			t.Fatalf("CallbackURLs accepted %q, not an absolute http(s) URL with a host", raw)
		}
		if allowPrivate {
			return
		}
		host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
		if host == "localhost" || strings.HasSuffix(host, ".localhost") {
			t.Fatalf("CallbackURLs accepted %q, aimed at localhost", raw)
		}
		if addr, err := netip.ParseAddr(host); err == nil && PrivateAddr(addr.WithZone("")) {
			t.Fatalf("CallbackURLs accepted %q, whose host %s is a private IP literal", raw, host)
		}
	})
}
