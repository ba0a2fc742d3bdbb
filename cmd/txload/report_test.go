package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/cmd/txload/internal/check"
	"github.com/txengine/txengine/cmd/txload/internal/rpcmetrics"
)

// TestCompletedPerSecCountsCompleted: a run in which half of the accepted
// transfers failed reports completed/s of the completed ones only.
func TestCompletedPerSecCountsCompleted(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ended := start.Add(4 * time.Second).Format(time.RFC3339Nano)
	rep := &Report{Accepted: 4}
	observed := map[string]txView{
		"a": {Status: "completed", Ended: ended},
		"b": {Status: "completed", Ended: start.Add(2 * time.Second).Format(time.RFC3339Nano)},
		"c": {Status: "failed", Ended: start.Add(9 * time.Second).Format(time.RFC3339Nano)},
		"d": {Status: "submitted"},
	}
	summarizeCompletion(rep, observed, start)
	if rep.Completed != 2 || rep.LastCompletedSeconds != 4 || rep.CompletedPerSec != 0.5 {
		t.Fatalf("completed %d, last %.2fs, %.2f/s; want 2, 4s, 0.5/s", rep.Completed, rep.LastCompletedSeconds, rep.CompletedPerSec)
	}
}

// TestBlockFills: the completed transfers by block, oldest first, each
// block with its count and the earliest end among them; failed and
// unfinished transfers left out.
func TestBlockFills(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(ms int) string { return start.Add(time.Duration(ms) * time.Millisecond).Format(time.RFC3339Nano) }
	block := func(n uint64) *uint64 { return &n }
	observed := map[string]txView{
		"a": {Status: "completed", BlockNumber: block(8), Ended: at(2500)},
		"b": {Status: "completed", BlockNumber: block(7), Ended: at(1700)},
		"c": {Status: "completed", BlockNumber: block(8), Ended: at(2250)},
		"d": {Status: "failed", BlockNumber: block(9), Ended: at(3000)},
		"e": {Status: "submitted"},
		"f": {Status: "completed", BlockNumber: block(7), Ended: at(1600)},
		"g": {Status: "completed", BlockNumber: block(8), Ended: at(2400)},
	}
	rep := &Report{}
	summarizeCompletion(rep, observed, start)
	want := []BlockFill{{Number: 7, Transfers: 2, EndedSeconds: 1.6}, {Number: 8, Transfers: 3, EndedSeconds: 2.25}}
	if len(rep.Blocks) != len(want) {
		t.Fatalf("blocks %+v, want %+v", rep.Blocks, want)
	}
	for i, b := range rep.Blocks {
		if b != want[i] {
			t.Errorf("block %d: %+v, want %+v", i, b, want[i])
		}
	}
}

func TestReportRPC(t *testing.T) {
	rep := &Report{Completed: 1000}
	summarizeRPC(rep, rpcmetrics.Counters{RoundTrips: 123, Batches: 3, Batched: 4447})
	if *rep.RPCRoundTrips != 123 || *rep.RPCRequests != 4567 || *rep.RPCRoundTripsPerCompleted != 0.123 || *rep.RPCRequestsPerCompleted != 4.567 {
		t.Fatalf("round trips %d (%v), requests %d (%v)", *rep.RPCRoundTrips, *rep.RPCRoundTripsPerCompleted, *rep.RPCRequests, *rep.RPCRequestsPerCompleted)
	}
	var text bytes.Buffer
	writeText(&text, rep)
	if want := "JSON-RPC         123 round trips (0.12 per completed), 4,567 requests (4.57 per completed)"; !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}
	raw, _ := json.Marshal(rep)
	for _, want := range []string{`"rpcRoundTrips":123`, `"rpcRequests":4567`, `"rpcRoundTripsPerCompleted":0.123`, `"rpcRequestsPerCompleted":4.567`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("JSON lacks %s: %s", want, raw)
		}
	}

	// Unreachable /metrics: no numbers, a reason.
	rep = &Report{Completed: 10, MetricsError: "GET http://x/metrics: HTTP 404"}
	text.Reset()
	writeText(&text, rep)
	raw, _ = json.Marshal(rep)
	if !strings.Contains(text.String(), "JSON-RPC         not measured: the service's /metrics is unreachable (GET http://x/metrics: HTTP 404)") ||
		strings.Contains(string(raw), "rpcRoundTrips") || !strings.Contains(string(raw), `"metricsError"`) {
		t.Errorf("text:\n%s\nJSON: %s", text.String(), raw)
	}
}

func TestReportChainLine(t *testing.T) {
	v := check.Verdict{OK: false, Accepted: 2, Completed: 2, ChainCounts: &check.ChainCounts{ChainChecked: 2, ChainSenders: 1, NonceMismatch: 1},
		Problems: []string{"transaction b: nonce 13 on chain, 12 reported"}}
	rep := &Report{Completed: 2, ChainID: 1337, ChainRoundTrips: 1, ChainSeconds: 0.01, Check: &v}
	var text bytes.Buffer
	writeText(&text, rep)
	for _, want := range []string{
		"check            FAILED",
		"on chain         FAILED: 2 completed read from chain 1337 (1 batches, 0.01s): 0 unknown, 0 without receipt, 0 reverted, 0 read errors; mismatches: 0 sender, 1 nonce, 0 block",
		"    transaction b: nonce 13 on chain, 12 reported",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	v.ChainCounts = nil
	text.Reset()
	writeText(&text, rep)
	if !strings.Contains(text.String(), "on chain         not checked (no --rpc)") {
		t.Errorf("text:\n%s", text.String())
	}
}

func TestGrouped(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 4567: "4,567", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := grouped(n); got != want {
			t.Errorf("grouped(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestValidRPCURL(t *testing.T) {
	for u, want := range map[string]bool{"http://127.0.0.1:8545": true, "wss://node.example/ws": true, "ws://h:1": true,
		"https://h": true, "127.0.0.1:8545": false, "ftp://h": false, "http://": false, "/tmp/geth.ipc": false} {
		if got := validRPCURL(u); got != want {
			t.Errorf("validRPCURL(%q) = %v, want %v", u, got, want)
		}
	}
}

func TestRunRefusesBadRPCURL(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"--token", "t", "--rpc", "127.0.0.1:8545"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "--rpc") {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
}
