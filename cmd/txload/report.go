package main

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/txengine/txengine/cmd/txload/internal/check"
	"github.com/txengine/txengine/cmd/txload/internal/rpcmetrics"
	"github.com/txengine/txengine/cmd/txload/internal/stats"
)

// Report is the outcome of a run; --json prints it as one object.
type Report struct {
	URL      string `json:"url"`
	TokenID  string `json:"tokenId"`
	Network  string `json:"network"`
	N        int    `json:"n"`
	Accounts int    `json:"accounts"`
	// Pool is the id of the pool the transfers went through, PoolSize its
	// members (absent without a pool).
	Pool           string         `json:"pool,omitempty"`
	PoolSize       int            `json:"poolSize,omitempty"`
	Concurrency    int            `json:"concurrency"`
	Rate           float64        `json:"rate"`
	SetupSeconds   float64        `json:"setupSeconds"`
	Accepted       int            `json:"accepted"`
	AcceptSeconds  float64        `json:"acceptSeconds"`
	AcceptedPerSec float64        `json:"acceptedPerSec"`
	LatencyMs      latencyMs      `json:"acceptLatencyMs"`
	Errors         map[string]int `json:"errors"`
	// Completed is the number of accepted transfers seen completed (0
	// without --wait).
	Completed int `json:"completed"`
	// LastCompletedSeconds is the time from the first request to the
	// latest "ended" of the completed transfers (0 without --wait).
	LastCompletedSeconds float64 `json:"lastCompletedSeconds,omitempty"`
	// CompletedPerSec is Completed / LastCompletedSeconds.
	CompletedPerSec float64 `json:"completedPerSec,omitempty"`
	// GasUsedMedian is the median gasUsed of the completed transfers.
	GasUsedMedian uint64 `json:"gasUsedMedian,omitempty"`
	// FirstBlock and LastBlock span the blocks of the completed transfers.
	FirstBlock uint64 `json:"firstBlock,omitempty"`
	LastBlock  uint64 `json:"lastBlock,omitempty"`
	// Blocks are the blocks of the completed transfers, oldest first: a
	// block log read through the service, for a chain the load cannot
	// reach itself (the embedded dev chain).
	Blocks []BlockFill `json:"blocks,omitempty"`
	// RPCRoundTrips is the growth of the service's
	// txengine_rpc_requests_total from before the load until every transfer
	// ended (a JSON-RPC batch counts once); RPCRequests counts the requests
	// inside batches one by one. Both are per completed transfer in the
	// PerCompleted fields. Absent when /metrics could not be read
	// (MetricsError says why) or without --wait.
	RPCRoundTrips             *int64   `json:"rpcRoundTrips,omitempty"`
	RPCRequests               *int64   `json:"rpcRequests,omitempty"`
	RPCRoundTripsPerCompleted *float64 `json:"rpcRoundTripsPerCompleted,omitempty"`
	RPCRequestsPerCompleted   *float64 `json:"rpcRequestsPerCompleted,omitempty"`
	MetricsError              string   `json:"metricsError,omitempty"`
	// ChainID, ChainSeconds and ChainRoundTrips describe the reads of the
	// check from the node (--rpc): its chain id, how long the reads took
	// and in how many JSON-RPC batches.
	ChainID         uint64         `json:"chainId,omitempty"`
	ChainSeconds    float64        `json:"chainSeconds,omitempty"`
	ChainRoundTrips int            `json:"chainRoundTrips,omitempty"`
	Check           *check.Verdict `json:"check,omitempty"`
	// WaitError says why waiting for completion stopped early.
	WaitError string `json:"waitError,omitempty"`
}

type latencyMs struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func toMs(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// scrape reads the JSON-RPC counters of every node of the service.
func (r *runner) scrape(ctx context.Context) (rpcmetrics.Counters, error) {
	var sum rpcmetrics.Counters
	for _, base := range r.c.bases {
		c, err := rpcmetrics.Fetch(ctx, r.c.hc, base)
		if err != nil {
			return rpcmetrics.Counters{}, err
		}
		sum = sum.Add(c)
	}
	return sum, nil
}

// summarizeRPC fills the JSON-RPC fields of rep from the counters' growth
// during the run.
func summarizeRPC(rep *Report, d rpcmetrics.Counters) {
	trips, reqs := int64(d.RoundTrips), int64(d.Requests())
	rep.RPCRoundTrips, rep.RPCRequests = &trips, &reqs
	if rep.Completed > 0 {
		tp, rp := float64(trips)/float64(rep.Completed), float64(reqs)/float64(rep.Completed)
		rep.RPCRoundTripsPerCompleted, rep.RPCRequestsPerCompleted = &tp, &rp
	}
}

// summarizeCompletion fills the completion fields of rep from observed.
func summarizeCompletion(rep *Report, observed map[string]txView, start time.Time) {
	var last time.Time
	var gas []float64
	for _, t := range observed {
		if t.Status != "completed" {
			continue
		}
		rep.Completed++
		if e, err := time.Parse(time.RFC3339Nano, t.Ended); err == nil && e.After(last) {
			last = e
		}
		if t.GasUsed != nil {
			gas = append(gas, float64(*t.GasUsed))
		}
		if b := t.BlockNumber; b != nil {
			if rep.FirstBlock == 0 || *b < rep.FirstBlock {
				rep.FirstBlock = *b
			}
			if *b > rep.LastBlock {
				rep.LastBlock = *b
			}
		}
	}
	if !last.IsZero() {
		rep.LastCompletedSeconds = last.Sub(start).Seconds()
		if rep.LastCompletedSeconds > 0 {
			rep.CompletedPerSec = float64(rep.Completed) / rep.LastCompletedSeconds
		}
	}
	rep.GasUsedMedian = uint64(stats.Median(gas))
	rep.Blocks = blockFills(observed, start)
}

// BlockFill is what the completed transfers of one block show: how many
// it holds and when the first of them ended (the service saw the block),
// in seconds from the first request.
type BlockFill struct {
	Number       uint64  `json:"number"`
	Transfers    int     `json:"transfers"`
	EndedSeconds float64 `json:"endedSeconds"`
}

// blockFills returns the blocks of the completed transfers of observed,
// oldest first.
func blockFills(observed map[string]txView, start time.Time) []BlockFill {
	by := map[uint64]*BlockFill{}
	for _, t := range observed {
		if t.Status != "completed" || t.BlockNumber == nil {
			continue
		}
		b := by[*t.BlockNumber]
		if b == nil {
			b = &BlockFill{Number: *t.BlockNumber, EndedSeconds: -1}
			by[*t.BlockNumber] = b
		}
		b.Transfers++
		if e, err := time.Parse(time.RFC3339Nano, t.Ended); err == nil {
			if s := e.Sub(start).Seconds(); b.EndedSeconds < 0 || s < b.EndedSeconds {
				b.EndedSeconds = s
			}
		}
	}
	out := make([]BlockFill, 0, len(by))
	for _, b := range by {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

// errorLines formats errors by code, most frequent first.
func errorLines(errs map[string]int) []string {
	codes := make([]string, 0, len(errs))
	for c := range errs {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool {
		if errs[codes[i]] != errs[codes[j]] {
			return errs[codes[i]] > errs[codes[j]]
		}
		return codes[i] < codes[j]
	})
	out := make([]string, len(codes))
	for i, c := range codes {
		out[i] = c + "=" + strconv.Itoa(errs[c])
	}
	return out
}
