package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	api "github.com/txengine/txengine/client"
	"github.com/txengine/txengine/cmd/txload/internal/check"
	"github.com/txengine/txengine/cmd/txload/internal/rpcmetrics"
	"github.com/txengine/txengine/cmd/txload/internal/stats"
)

// runner carries one run.
type runner struct {
	opt  options
	c    *client
	prog *progress
}

// run performs setup, the load, the wait and the check.
func (r *runner) run(ctx context.Context) (*Report, error) {
	rep := &Report{URL: r.opt.URL, N: r.opt.N, Accounts: r.opt.Accounts, Concurrency: r.opt.Conc, Rate: r.opt.Rate, Errors: map[string]int{}}
	setupStart := time.Now()
	var node *chainReader
	if r.opt.RPC != "" && r.opt.Wait && r.opt.Check {
		var err error
		if node, err = dialChain(ctx, r.opt.RPC); err != nil {
			return nil, err
		}
		defer node.Close()
		rep.ChainID = node.chainID.Uint64()
	}
	tk, err := r.token(ctx)
	if err != nil {
		return nil, err
	}
	rep.TokenID, rep.Network = tk.ID, tk.Network
	var senders []account
	var pl *pool
	if r.opt.pooled() {
		pl, err = r.pool(ctx, tk)
		if pl != nil {
			rep.Pool, rep.PoolSize = pl.ID, len(pl.Members)
		}
	} else {
		senders, err = r.senders(ctx, tk)
	}
	if err != nil {
		return nil, err
	}
	recipients, err := freshAddresses(r.opt.Recipients)
	if err != nil {
		return nil, err
	}
	rep.SetupSeconds = time.Since(setupStart).Seconds()

	var metricsBefore rpcmetrics.Counters
	var metricsErr error
	if r.opt.Wait {
		metricsBefore, metricsErr = r.scrape(ctx)
	}
	sent, keys, lat, start, elapsed := r.load(ctx, tk, senders, pl, recipients, rep.Errors)
	rep.Accepted = len(sent)
	rep.AcceptSeconds = elapsed.Seconds()
	if elapsed > 0 {
		rep.AcceptedPerSec = float64(len(sent)) / elapsed.Seconds()
	}
	s := stats.Summarize(lat)
	rep.LatencyMs = latencyMs{P50: toMs(s.P50), P90: toMs(s.P90), P99: toMs(s.P99), Max: toMs(s.Max)}
	if !r.opt.Wait || len(sent) == 0 {
		return rep, nil
	}

	observed, werr := r.waitTerminal(ctx, sent, start)
	if werr != nil {
		rep.WaitError = werr.Error()
	}
	summarizeCompletion(rep, observed, start)
	if metricsErr == nil {
		var after rpcmetrics.Counters
		after, metricsErr = r.scrape(ctx)
		if metricsErr == nil {
			summarizeRPC(rep, after.Sub(metricsBefore))
		}
	}
	if metricsErr != nil {
		rep.MetricsError = metricsErr.Error()
	}
	if !r.opt.Check {
		return rep, nil
	}
	obs := make(map[string]check.Observed, len(observed))
	for id, t := range observed {
		o := check.Observed{Status: t.Status, From: t.From, Nonce: t.Nonce, Hash: t.TransactionHash,
			BlockNumber: t.BlockNumber, BlockHash: t.blockHash()}
		if t.Error != nil {
			o.ErrorCode = t.Error.Code
		}
		obs[id] = o
	}
	balances, err := r.balances(ctx, tk, recipients)
	if err != nil {
		return rep, err
	}
	v := check.Run(sent, obs, balances)
	if pl != nil {
		checkPool(&v, pl, sent, keys, obs)
	}
	rep.Check = &v
	if node != nil {
		var hashes []string
		for _, s := range sent {
			if o := obs[s.ID]; o.Status == "completed" && o.Hash != "" {
				hashes = append(hashes, o.Hash)
			}
		}
		r.prog.phase("read the chain", len(hashes))
		began := time.Now()
		onChain, err := node.read(ctx, hashes, r.prog.add)
		rep.ChainSeconds = time.Since(began).Seconds()
		rep.ChainRoundTrips = node.roundTrips
		if err != nil {
			return rep, err
		}
		v.Chain(sent, obs, onChain)
	}
	return rep, nil
}

// token returns the token of --token-id, or the first of GET /tokens.
func (r *runner) token(ctx context.Context) (token, error) {
	if r.opt.TokenID != "" {
		id, err := uuid.Parse(r.opt.TokenID)
		if err != nil {
			return token{}, fmt.Errorf("--token-id %q is not a token id (a UUID): %w", r.opt.TokenID, err)
		}
		res, err := r.c.api().GetToken(ctx, id, nil)
		t, err := answer[api.Token]("GET /tokens/{contractId}", res, err, http.StatusOK)
		if err != nil {
			return token{}, fmt.Errorf("token %s: %w", r.opt.TokenID, err)
		}
		return tokenOf(t.Data), nil
	}
	res, err := r.c.api().ListTokens(ctx, nil)
	ts, err := answer[[]api.Token]("GET /tokens", res, err, http.StatusOK)
	if err != nil {
		return token{}, fmt.Errorf("list tokens: %w", err)
	}
	if len(ts.Data) == 0 {
		return token{}, errors.New("the operator has no token: pass --token-id or register one")
	}
	return tokenOf(ts.Data[0]), nil
}

// pool returns the pool the transfers go through (setupPool), its
// treasury being the operator's default account.
func (r *runner) pool(ctx context.Context, tk token) (*pool, error) {
	res, err := r.c.api().GetDefaultAccount(ctx, nil)
	def, err := answer[api.Account]("GET /accounts/default", res, err, http.StatusOK)
	if err != nil {
		return nil, fmt.Errorf("default account: %w", err)
	}
	return r.setupPool(ctx, tk, accountOf(def.Data))
}

// senders returns the sending accounts: the operator's default account when
// --accounts is 1, else that many new accounts of the operator, each with
// ETH for gas (from the network's faucet) and the tokens it will send (from
// the default account).
func (r *runner) senders(ctx context.Context, tk token) ([]account, error) {
	res, err := r.c.api().GetDefaultAccount(ctx, nil)
	def, err := answer[api.Account]("GET /accounts/default", res, err, http.StatusOK)
	if err != nil {
		return nil, fmt.Errorf("default account: %w", err)
	}
	if r.opt.Accounts <= 1 {
		return []account{accountOf(def.Data)}, nil
	}
	m := r.opt.Accounts
	accts := make([]account, m)
	r.prog.phase("create accounts", m)
	if err := r.parallel(ctx, m, func(ctx context.Context, i int) error {
		res, err := r.c.api().CreateAccount(ctx, nil, api.CreateAccountJSONRequestBody{})
		a, err := answer[api.Account]("POST /accounts", res, err, http.StatusCreated)
		if err != nil {
			return fmt.Errorf("create account: %w", err)
		}
		accts[i] = accountOf(a.Data)
		return nil
	}); err != nil {
		return nil, err
	}
	r.prog.phase("wait for gas", m)
	if err := r.parallel(ctx, m, func(ctx context.Context, i int) error {
		id, err := uuid.Parse(accts[i].ID)
		if err != nil {
			return fmt.Errorf("account id %q: %w", accts[i].ID, err)
		}
		for {
			res, err := r.c.api().AccountBalance(ctx, id, &api.AccountBalanceParams{Network: &tk.Network})
			wei, err := answer[string]("GET /accounts/{id}/balance", res, err, http.StatusOK)
			if err != nil {
				return fmt.Errorf("balance of %s: %w", accts[i].Address, err)
			}
			if wei.Data != "0" && wei.Data != "" {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("account %s got no gas: %w", accts[i].Address, ctx.Err())
			case <-time.After(250 * time.Millisecond):
			}
		}
	}); err != nil {
		return nil, err
	}
	// Fund each sender with the tokens it sends.
	r.prog.phase("fund senders", m)
	start := time.Now()
	funding := make([]check.Sent, m)
	if err := r.parallel(ctx, m, func(ctx context.Context, i int) error {
		count := int64(r.opt.N / m)
		if i < r.opt.N%m {
			count++
		}
		value := new(big.Int).Mul(big.NewInt(count), big.NewInt(r.opt.Value))
		t, err := r.transfer(ctx, tk, api.TransferRequest{To: accts[i].Address, Value: value.String()})
		if err != nil {
			return fmt.Errorf("fund %s: %w", accts[i].Address, err)
		}
		funding[i] = check.Sent{ID: t.ID, From: t.From, To: accts[i].Address, Value: value}
		return nil
	}); err != nil {
		return nil, err
	}
	obs, err := r.waitTerminal(ctx, funding, start)
	if err != nil {
		return nil, fmt.Errorf("funding the senders: %w", err)
	}
	for _, f := range funding {
		if obs[f.ID].Status != "completed" {
			why := ""
			if e := obs[f.ID].Error; e != nil {
				why = ": " + e.Code + ": " + e.Message
			}
			return nil, fmt.Errorf("funding transfer %s ended %s%s", f.ID, obs[f.ID].Status, why)
		}
	}
	return accts, nil
}

// parallel runs f for 0..n-1 on up to the concurrency's workers (at most
// 32) and returns the first error.
func (r *runner) parallel(ctx context.Context, n int, f func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := min(r.opt.Conc, 32, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range workers {
		wg.Add(1)
		go func() { // owned by parallel, which waits for it
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				r.prog.add(1)
			}
		}()
	}
	wg.Wait()
	return first
}

// freshAddresses returns n random addresses (lower-case hex): they hold
// nothing, so their balances after the run are what the run sent them.
func freshAddresses(n int) ([]string, error) {
	out := make([]string, n)
	for i := range out {
		var b [20]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("random address: %w", err)
		}
		out[i] = "0x" + hex.EncodeToString(b[:])
	}
	return out, nil
}

// load sends the N transfers with C workers, paced at --rate when set, and
// returns the accepted ones (with their ordering keys, nil without), the
// accept latencies, the start and the duration of the phase; from senders
// in turn, or through pl when not nil. Each ordering key's transfers are
// sent by one worker, one after the other, in request order. Errors are
// counted by code into errs.
func (r *runner) load(ctx context.Context, tk token, senders []account, pl *pool, recipients []string, errs map[string]int) ([]check.Sent, []string, []time.Duration, time.Time, time.Duration) {
	n := r.opt.N
	value := big.NewInt(r.opt.Value)
	var callbacks *[]string
	if r.opt.Callback != "" {
		callbacks = &[]string{r.opt.Callback}
	}
	type job struct {
		i     int
		sched time.Time // when the request was due (rate mode), for latency
	}
	// Workers share one queue; with ordering keys each has its own, and a
	// key always goes to the same worker.
	queues := make([]chan job, r.opt.Conc)
	queues[0] = make(chan job, r.opt.Conc)
	for w := range queues {
		switch {
		case r.opt.OrderingKeys > 0:
			queues[w] = make(chan job, 1)
		case w > 0:
			queues[w] = queues[0]
		}
	}
	type result struct {
		sent check.Sent
		key  string
		lat  time.Duration
		code string
	}
	results := make([]result, n)
	r.prog.phase("send", n)
	start := time.Now()
	loadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for w := range r.opt.Conc {
		wg.Add(1)
		go func() { // owned by load, which waits for it
			defer wg.Done()
			for j := range queues[w] {
				to := recipients[j.i%len(recipients)]
				key := orderingKey(j.i, r.opt.OrderingKeys)
				began := time.Now()
				if !j.sched.IsZero() {
					began = j.sched
				}
				var t txView
				var err error
				var sender string
				if pl != nil {
					t, err = r.poolTransfer(loadCtx, tk, pl, to, value.String(), key, callbacks)
				} else {
					from := senders[j.i%len(senders)]
					sender = from.Address
					t, err = r.transfer(loadCtx, tk, api.TransferRequest{To: to, Value: value.String(), From: &from.ID, Callbacks: callbacks})
				}
				res := result{lat: time.Since(began), key: key}
				if err != nil {
					res.code = errorCode(err)
				} else {
					res.sent = check.Sent{ID: t.ID, From: t.From, Sender: sender, To: to, Value: value}
				}
				results[j.i] = res
				r.prog.add(1)
			}
		}()
	}
	func() { // the feeder; closes the queues when done
		defer func() {
			for w, q := range queues {
				if w == 0 || q != queues[0] {
					close(q)
				}
			}
		}()
		for i := range n {
			var due time.Time
			if r.opt.Rate > 0 {
				due = start.Add(time.Duration(float64(i) / r.opt.Rate * float64(time.Second)))
				if d := time.Until(due); d > 0 {
					select {
					case <-time.After(d):
					case <-ctx.Done():
						return
					}
				}
			}
			q := queues[0]
			if r.opt.OrderingKeys > 0 {
				q = queues[(i%r.opt.OrderingKeys)%r.opt.Conc]
			}
			select {
			case q <- job{i: i, sched: due}:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	elapsed := time.Since(start)
	var sent []check.Sent
	var keys []string
	var lat []time.Duration
	for _, res := range results {
		switch {
		case res.code != "":
			errs[res.code]++
		case res.sent.ID != "":
			sent = append(sent, res.sent)
			lat = append(lat, res.lat)
			if r.opt.OrderingKeys > 0 {
				keys = append(keys, res.key)
			}
		}
	}
	return sent, keys, lat, start, elapsed
}

// waitTerminal lists the operator's transactions created since start until
// every one of sent is completed or failed, or the timeout passes; it
// returns what it saw of them.
func (r *runner) waitTerminal(ctx context.Context, sent []check.Sent, start time.Time) (map[string]txView, error) {
	want := make(map[string]bool, len(sent))
	for _, s := range sent {
		want[s.ID] = true
	}
	seen := make(map[string]txView, len(sent))
	r.prog.phase("complete", len(sent))
	ctx, cancel := context.WithTimeout(ctx, r.opt.Timeout)
	defer cancel()
	since := start.Add(-2 * time.Second).UTC().Truncate(time.Millisecond)
	sortCreated, pageSize := api.ListTransactionsParamsSortCreated, 1000
	for {
		terminal := 0
		cursor := ""
		for {
			params := &api.ListTransactionsParams{Since: &since, Sort: &sortCreated, Limit: &pageSize}
			if cursor != "" {
				params.Cursor = &cursor
			}
			res, err := r.c.api().ListTransactions(ctx, params)
			page, err := answer[[]api.Transaction]("GET /transactions", res, err, http.StatusOK)
			if err != nil {
				if ctx.Err() != nil {
					return seen, fmt.Errorf("waiting for completion: %w", ctx.Err())
				}
				return seen, fmt.Errorf("list transactions: %w", err)
			}
			for _, at := range page.Data {
				if t := txOf(at); want[t.ID] {
					seen[t.ID] = t
				}
			}
			if page.Next == nil || *page.Next == "" {
				break
			}
			cursor = *page.Next
		}
		for id := range want {
			if seen[id].terminal() {
				terminal++
			}
		}
		r.prog.set(terminal)
		if terminal == len(want) {
			return seen, nil
		}
		select {
		case <-ctx.Done():
			return seen, fmt.Errorf("%d of %d transactions not completed or failed within %v", len(want)-terminal, len(want), r.opt.Timeout)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// balances reads the token balance of every recipient.
func (r *runner) balances(ctx context.Context, tk token, recipients []string) (map[string]*big.Int, error) {
	out := make([]*big.Int, len(recipients))
	r.prog.phase("read balances", len(recipients))
	if err := r.parallel(ctx, len(recipients), func(ctx context.Context, i int) error {
		res, err := r.c.api().GetAddressBalance(ctx, tk.uuid, recipients[i], nil)
		s, err := answer[string]("GET /tokens/{contractId}/balances/{address}", res, err, http.StatusOK)
		if err != nil {
			return fmt.Errorf("balance of %s: %w", recipients[i], err)
		}
		v, ok := new(big.Int).SetString(s.Data, 10)
		if !ok {
			return fmt.Errorf("balance of %s: %q is not a decimal", recipients[i], s.Data)
		}
		out[i] = v
		return nil
	}); err != nil {
		return nil, err
	}
	m := make(map[string]*big.Int, len(recipients))
	for i, a := range recipients {
		m[a] = out[i]
	}
	return m, nil
}
