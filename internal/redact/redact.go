// Package redact is the one place that turns a URL the service was given
// (a node's HTTP or WebSocket endpoint, a callback URL) into what it may
// log or return: node providers put their API key in the path
// (Infura's /v3/<key>, Alchemy's /v2/<key>), in the query (?apikey=) or in
// the user part, and callback URLs carry tokens in their query.
package redact

import (
	"errors"
	"net/url"
	"strings"
)

// Mark replaces every redacted part.
const Mark = "REDACTED"

// URL returns raw with its user part, every query value, its fragment and
// every path segment that looks like a key (KeyLike) replaced by Mark;
// scheme, host, port, query names and the other path segments stay, so the
// operator still sees which endpoint is meant. A string that does not parse
// as a URL with a scheme and host is not shown at all.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "(invalid URL, not shown)"
	}
	out := u.Scheme + "://"
	if u.User != nil {
		out += Mark + "@"
	}
	out += u.Host
	segs := strings.Split(u.EscapedPath(), "/")
	for i, s := range segs {
		if KeyLike(s) {
			segs[i] = Mark
		}
	}
	out += strings.Join(segs, "/")
	if u.RawQuery != "" || u.ForceQuery {
		var names []string
		for _, kv := range strings.Split(u.RawQuery, "&") {
			if kv == "" {
				continue
			}
			name, _, _ := strings.Cut(kv, "=")
			if n, err := url.QueryUnescape(name); err != nil || KeyLike(n) {
				name = Mark
			}
			names = append(names, name+"="+Mark)
		}
		out += "?" + strings.Join(names, "&")
	}
	if u.Fragment != "" || u.RawFragment != "" {
		out += "#" + Mark
	}
	return out
}

// WithoutQuery returns URL(raw) without its query and fragment, for a
// callback URL in a log line.
func WithoutQuery(raw string) string {
	s := URL(raw)
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	return s
}

// KeyLike reports whether a path segment (or query name) may be a secret:
// anything of 8 characters or more other than lower-case words joined by
// '-', '_' or '.' and at most 40 long (so "v3", "rpc", "ws",
// "ethereum-mainnet" stay, while hex digits, base58, mixed-case or
// upper-case tokens go: a key without a digit or a capital letter is
// vanishingly rare).
func KeyLike(seg string) bool {
	if len(seg) < 8 {
		return false
	}
	prev := byte('-')
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c == '-' || c == '_' || c == '.':
			if prev == '-' || prev == '_' || prev == '.' {
				return true
			}
		default:
			return true
		}
		prev = c
	}
	return len(seg) > 40
}

// Error replaces, in place, the URL of every *url.Error in err's chain
// (the HTTP client's `Post "https://host/v3/KEY": ...`) with URL(it), and
// returns err: errors.Is and errors.As see what they saw. A wrapper made
// by fmt.Errorf keeps the message of its time: call Error on the error the
// HTTP or RPC client returned, before wrapping it. Use Text for
// messages that quote a URL some other way.
func Error(err error) error {
	for e := err; e != nil; {
		var ue *url.Error
		if !errors.As(e, &ue) {
			break
		}
		ue.URL = URL(ue.URL)
		e = ue.Err
	}
	return err
}

// Text returns s with every occurrence of each of urls replaced by URL of
// it: for a message of a library that quotes the endpoint it was given.
func Text(s string, urls ...string) string {
	for _, u := range urls {
		if u == "" {
			continue
		}
		s = strings.ReplaceAll(s, u, URL(u))
	}
	return s
}
