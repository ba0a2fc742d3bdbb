// Package rpcmetrics reads the service's JSON-RPC counters from its
// Prometheus text exposition (GET /metrics): round trips to the nodes and
// the requests inside batches, so a run can report both per completed
// transfer (a batch of 2,048 is one round trip and 2,048 requests).
package rpcmetrics

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// The metric names the service exposes (engine/prom).
const (
	requestsName = "txengine_rpc_requests_total"
	batchedName  = "txengine_rpc_batched_requests_total"
	batchMethod  = "batch"
)

// Counters are the service's JSON-RPC counters at one moment.
type Counters struct {
	// RoundTrips is txengine_rpc_requests_total summed over its labels:
	// every exchange with a node, a batch counting once.
	RoundTrips float64
	// Batches is the part of RoundTrips with method "batch".
	Batches float64
	// Batched is txengine_rpc_batched_requests_total summed over its
	// labels: the requests sent inside batches.
	Batched float64
}

// Requests is the number of JSON-RPC requests: the round trips that are
// not batches plus the requests inside batches.
func (c Counters) Requests() float64 { return c.RoundTrips - c.Batches + c.Batched }

// Add returns c + o (the counters of several nodes of a cluster).
func (c Counters) Add(o Counters) Counters {
	return Counters{RoundTrips: c.RoundTrips + o.RoundTrips, Batches: c.Batches + o.Batches, Batched: c.Batched + o.Batched}
}

// Sub returns c - o (the counts between two scrapes).
func (c Counters) Sub(o Counters) Counters {
	return Counters{RoundTrips: c.RoundTrips - o.RoundTrips, Batches: c.Batches - o.Batches, Batched: c.Batched - o.Batched}
}

// Fetch scrapes base + "/metrics" (no authentication) with hc.
func Fetch(ctx context.Context, hc *http.Client, base string) (Counters, error) {
	url := strings.TrimRight(base, "/") + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Counters{}, fmt.Errorf("GET %s: %w", url, err)
	}
	res, err := hc.Do(req)
	if err != nil {
		return Counters{}, fmt.Errorf("GET %s: %w", url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
		return Counters{}, fmt.Errorf("GET %s: HTTP %d", url, res.StatusCode)
	}
	c, err := Parse(res.Body)
	if err != nil {
		return Counters{}, fmt.Errorf("GET %s: %w", url, err)
	}
	return c, nil
}

// Parse reads the counters from a Prometheus text exposition. Other
// metrics, comments and samples it cannot parse are skipped; a counter
// that has no sample yet counts zero.
func Parse(r io.Reader) (Counters, error) {
	var c Counters
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		name, labels, value, ok := parseSample(sc.Text())
		if !ok {
			continue
		}
		switch name {
		case requestsName:
			c.RoundTrips += value
			if labels["method"] == batchMethod {
				c.Batches += value
			}
		case batchedName:
			c.Batched += value
		}
	}
	if err := sc.Err(); err != nil {
		return Counters{}, fmt.Errorf("read metrics: %w", err)
	}
	return c, nil
}

// parseSample splits one exposition line `name{k="v",...} value [ts]`;
// ok is false for comments, blank and malformed lines.
func parseSample(line string) (name string, labels map[string]string, value float64, ok bool) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", nil, 0, false
	}
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return "", nil, 0, false
	}
	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		var end int
		labels, end, ok = parseLabels(rest)
		if !ok {
			return "", nil, 0, false
		}
		rest = rest[end:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, false
	}
	return name, labels, v, true
}

// parseLabels parses `{k="v",...}` at the start of s and returns the
// labels and the index just past the closing brace.
func parseLabels(s string) (map[string]string, int, bool) {
	labels := map[string]string{}
	i := 1
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == ',') {
			i++
		}
		if i >= len(s) {
			return nil, 0, false
		}
		if s[i] == '}' {
			return labels, i + 1, true
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq <= 0 || i+eq+1 >= len(s) || s[i+eq+1] != '"' {
			return nil, 0, false
		}
		key := strings.TrimSpace(s[i : i+eq])
		i += eq + 2
		var val strings.Builder
		for {
			if i >= len(s) {
				return nil, 0, false
			}
			ch := s[i]
			if ch == '"' {
				i++
				break
			}
			if ch == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(s[i])
				}
				i++
				continue
			}
			val.WriteByte(ch)
			i++
		}
		labels[key] = val.String()
	}
}
