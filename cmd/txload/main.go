// Command txload is a load generator for the txengine API (not a test). It
// sends N token transfers from M accounts with C concurrent keep-alive
// clients, optionally at a fixed rate, waits until every accepted transfer
// ended, checks the outcome against the API (every accepted transfer
// completed exactly once, nonces contiguous per sender, the recipients'
// balances add up) and, with --rpc, against the node (each completed
// transfer's transaction and receipt, read in JSON-RPC batches: mined with
// status 1 in the block the service reports, signed by the sending account
// with the nonce the service reports, nonces contiguous per sender on
// chain), and prints a report: accepted/s, accept latency percentiles,
// errors by code, time until the last transfer completed and completed/s,
// and the service's JSON-RPC round trips and requests per completed
// transfer (from its /metrics). With --json it prints one JSON object
// instead.
//
//	txload --url http://127.0.0.1:8080 --token $(cat data/operator.token) --n 10000 --accounts 1 --concurrency 64 --rpc http://127.0.0.1:8545
//
// With --accounts 1 the operator's default account sends. With more, txload
// creates that many accounts of the operator (the network's faucet gives
// them gas), funds each with the tokens it will send from the default
// account, then sends. Recipients are fresh random addresses, so their
// balances start at zero.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, runs the load and writes the report; it returns the exit
// status: 0 done (and checked OK when checked), 1 the check failed, 2 usage
// or setup error.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("txload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.URL, "url", "http://127.0.0.1:8080", "base URL of the txengine API; several, comma-separated, spread the requests over the nodes of a cluster")
	fs.StringVar(&o.Token, "token", os.Getenv("TXENGINE_TOKEN"), "operator token (default $TXENGINE_TOKEN)")
	fs.StringVar(&o.TokenID, "token-id", "", "token contract id (default: the first of GET /tokens)")
	fs.StringVar(&o.RPC, "rpc", os.Getenv("TXENGINE_RPC_URL"), "JSON-RPC URL (http(s) or ws(s)) of a node of the token's network: the check then reads every completed transfer from it (default $TXENGINE_RPC_URL; empty: no node check)")
	fs.IntVar(&o.N, "n", 1000, "transfers to send")
	fs.StringVar(&o.Callback, "callback", "", "callback URL of every transfer (none when empty)")
	fs.IntVar(&o.Accounts, "accounts", 1, "sending accounts (1: the operator's default account; more: created and funded)")
	fs.IntVar(&o.Conc, "concurrency", 64, "concurrent clients")
	fs.IntVar(&o.Recipients, "recipients", 100, "fresh random recipient addresses")
	fs.Float64Var(&o.Rate, "rate", 0, "requests per second (0: as fast as possible)")
	fs.Int64Var(&o.Value, "value", 1, "token base units per transfer")
	fs.BoolVar(&o.Wait, "wait", true, "wait until every accepted transfer ended")
	fs.BoolVar(&o.Check, "check", true, "check the outcome (needs --wait)")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object, no progress")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "bound on waiting for completion")
	fs.DurationVar(&o.ReqTimeout, "request-timeout", 30*time.Second, "bound on one HTTP request")
	fs.IntVar(&o.PoolSize, "pool-size", 0, "send through a new sender pool of this many members (1-256) whose treasury is the default account, instead of --accounts")
	fs.StringVar(&o.PoolID, "pool", "", "send through this existing sender pool (its id), instead of --accounts")
	fs.IntVar(&o.OrderingKeys, "ordering-keys", 0, "with a pool: give the transfers this many ordering keys (each key's transfers sent one after the other, checked to complete in request order)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var bases []string
	for _, u := range strings.Split(o.URL, ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			bases = append(bases, u)
		}
	}
	switch {
	case len(bases) == 0:
		fmt.Fprintln(stderr, "txload: --url must name at least one base URL")
		return 2
	case o.Token == "":
		fmt.Fprintln(stderr, "txload: --token (or $TXENGINE_TOKEN) is required")
		return 2
	case o.RPC != "" && !validRPCURL(o.RPC):
		fmt.Fprintf(stderr, "txload: --rpc %q: want an http, https, ws or wss URL\n", o.RPC)
		return 2
	case o.N < 1 || o.Accounts < 1 || o.Conc < 1 || o.Recipients < 1 || o.Value < 0 || o.Rate < 0:
		fmt.Fprintln(stderr, "txload: --n, --accounts, --concurrency and --recipients must be positive; --value and --rate not negative")
		return 2
	case o.PoolSize < 0 || o.PoolSize > 256 || o.OrderingKeys < 0:
		fmt.Fprintln(stderr, "txload: --pool-size must be 1-256 (0: no pool) and --ordering-keys not negative")
		return 2
	case o.pooled() && (o.Accounts > 1 || (o.PoolSize > 0 && o.PoolID != "")):
		fmt.Fprintln(stderr, "txload: --pool-size, --pool and --accounts exclude each other")
		return 2
	case o.OrderingKeys > 0 && !o.pooled():
		fmt.Fprintln(stderr, "txload: --ordering-keys needs --pool-size or --pool")
		return 2
	}
	mode := progressNone
	if !o.JSON {
		mode = progressLines
		if isTerminal(os.Stderr) {
			mode = progressBar
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := newClient(bases, o.Token, o.Conc, o.ReqTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "txload: %v\n", err)
		return 2
	}
	prog := newProgress(mode, stderr)
	r := &runner{opt: o, c: c, prog: prog}
	rep, err := r.run(ctx)
	prog.stop()
	if err != nil && rep == nil {
		fmt.Fprintf(stderr, "txload: %v\n", err)
		return 2
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "txload: %v\n", err)
			return 2
		}
	} else {
		writeText(stdout, rep)
	}
	if err != nil {
		fmt.Fprintf(stderr, "txload: %v\n", err)
		return 2
	}
	if rep.Check != nil && !rep.Check.OK {
		return 1
	}
	return 0
}

// validRPCURL reports whether u is an http(s) or ws(s) URL with a host.
func validRPCURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return false
	}
	switch p.Scheme {
	case "http", "https", "ws", "wss":
		return true
	}
	return false
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// writeText prints the human report.
func writeText(w io.Writer, r *Report) {
	fmt.Fprintf(w, "txload: %d transfers from %d account(s), %d clients, rate %s, token %s on %s\n",
		r.N, r.Accounts, r.Concurrency, rateText(r.Rate), r.TokenID, r.Network)
	if r.Pool != "" {
		fmt.Fprintf(w, "  pool             %s, %d members\n", r.Pool, r.PoolSize)
	}
	fmt.Fprintf(w, "  setup            %.1fs\n", r.SetupSeconds)
	fmt.Fprintf(w, "  accepted         %d in %.2fs = %.0f/s\n", r.Accepted, r.AcceptSeconds, r.AcceptedPerSec)
	fmt.Fprintf(w, "  accept latency   p50 %.1fms  p90 %.1fms  p99 %.1fms  max %.1fms\n",
		r.LatencyMs.P50, r.LatencyMs.P90, r.LatencyMs.P99, r.LatencyMs.Max)
	errs := "none"
	if len(r.Errors) > 0 {
		errs = strings.Join(errorLines(r.Errors), " ")
	}
	fmt.Fprintf(w, "  errors           %s\n", errs)
	if r.LastCompletedSeconds > 0 {
		fmt.Fprintf(w, "  last completed   %.2fs after the first request (%d completed, %.0f/s), blocks %d..%d, median gas %d\n",
			r.LastCompletedSeconds, r.Completed, r.CompletedPerSec, r.FirstBlock, r.LastBlock, r.GasUsedMedian)
	}
	switch {
	case r.RPCRoundTrips != nil && r.RPCRoundTripsPerCompleted != nil:
		fmt.Fprintf(w, "  JSON-RPC         %s round trips (%.2f per completed), %s requests (%.2f per completed)\n",
			grouped(*r.RPCRoundTrips), *r.RPCRoundTripsPerCompleted, grouped(*r.RPCRequests), *r.RPCRequestsPerCompleted)
	case r.RPCRoundTrips != nil:
		fmt.Fprintf(w, "  JSON-RPC         %s round trips, %s requests (none completed)\n", grouped(*r.RPCRoundTrips), grouped(*r.RPCRequests))
	case r.MetricsError != "":
		fmt.Fprintf(w, "  JSON-RPC         not measured: the service's /metrics is unreachable (%s)\n", r.MetricsError)
	}
	if r.WaitError != "" {
		fmt.Fprintf(w, "  wait             %s\n", r.WaitError)
	}
	if c := r.Check; c != nil {
		verdict := "OK"
		if !c.OK {
			verdict = "FAILED"
		}
		fmt.Fprintf(w, "  check            %s: %d/%d completed, %d failed, %d not ended, %d missing; %d sender(s): %d nonce gaps, %d duplicates; %d hash duplicates; %d recipient(s): %d balance mismatches\n",
			verdict, c.Completed, c.Accepted, c.Failed, c.NotTerminal, c.Missing, c.Senders, c.NonceGaps, c.NonceDuplicates, c.HashDuplicates, c.Recipients, c.BalanceMismatches)
		if c.ChainCounts != nil {
			chain := "OK"
			if c.ChainProblems() > 0 {
				chain = "FAILED"
			}
			fmt.Fprintf(w, "  on chain         %s: %d completed read from chain %d (%d batches, %.2fs): %d unknown, %d without receipt, %d reverted, %d read errors; mismatches: %d sender, %d nonce, %d block; %d sender(s): %d nonce gaps, %d duplicates\n",
				chain, c.ChainChecked, r.ChainID, r.ChainRoundTrips, r.ChainSeconds, c.TxMissing, c.ReceiptMissing, c.ReceiptFailed, c.ChainReadErrors,
				c.SenderMismatch, c.NonceMismatch, c.BlockMismatch, c.ChainSenders, c.ChainNonceGaps, c.ChainNonceDuplicates)
		} else {
			fmt.Fprintf(w, "  on chain         not checked (no --rpc)\n")
		}
		if r.Pool != "" {
			fmt.Fprintf(w, "  pool             %d sent from outside the pool, %d out of request order\n", c.PoolOutsiders, c.OrderViolations)
		}
		for _, p := range c.Problems {
			fmt.Fprintf(w, "    %s\n", p)
		}
	}
}

// grouped formats n with a comma every three digits: 4,567.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

func rateText(r float64) string {
	if r == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%.0f/s", r)
}
