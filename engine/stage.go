package engine

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// SubmitStage merges the round trips of the pumps of many accounts on one
// network, the way CommitQueue merges their accepts. Each account's Sender
// keeps its own logic (nonces, conditions, replacement, fences) and calls
// the stage where it would call the store or the node; while one merged
// call is out, the calls of other accounts gather, and the next takes them
// all: one statement reads the in-flight summaries of every account that
// pumps, one the ready transactions, one database transaction stores the
// signed rows of all of them, one JSON-RPC batch estimates their gas, one
// reads their chain nonces and one broadcasts their transactions. With one
// account, or idle, every call runs at once, alone.
//
// Without it, 1,000 accounts sending ten transfers each made about 17 SQL
// statements and 2.5 JSON-RPC round trips per transfer, one pump at a
// time each, and the pumps held the 16 connections of the database pool
// that accepts wait for (TestProfile, 1000x10).
//
// Create it with NewSubmitStage; Close stops it after the calls already
// waiting.
type SubmitStage struct {
	net   *Network // its name; its Chain is read at each call (stageChain)
	store StageStore

	summaries *Merger[string, summaryResult]
	ready     *Merger[readyRequest, readyResult]
	queued    *Merger[string, countResult]
	marks     *Merger[SubmitGroup, error]
	accounts  *Merger[string, accountResult]
	maxNonces *Merger[string, maxNonceResult]
	nonces    *Merger[common.Address, nonceResult]
	estimates *Merger[[]ethereum.CallMsg, estimateResult]
	sends     *Merger[[]*types.Transaction, sendResult]
	// fences merges the fence checks (cluster mode); nil when the store
	// cannot (stagefence.go).
	fences *Merger[Fence, error]
	// calm, when set (YieldTo), is what a pump's first read waits for:
	// the end of a burst of many accounts' accepts, or yieldMax.
	calm     Calmer
	yieldMax time.Duration
}

// SingleWriter is implemented by a store whose writes run one at a time
// (SQLite: one connection writes), where the submit stage's writes and the
// group commits of accepts wait for each other; the system then makes the
// stages yield to accepts (YieldTo, YieldMax).
type SingleWriter interface {
	SingleWriter() bool
}

// YieldMax bounds how long a pump waits for a burst of accepts to end
// (YieldTo) on a store with a single writer. Measured on the embedded
// default, 2 cores (TestBenchEmbedded): 400 accounts × 10 accepted 1,846/s
// without the wait; with 500 ms, 3,492 to 9,441/s in six runs, in two
// modes: when the burst outlasted the wait, the pumps released into it
// slowed the rest; with 1 s, 9,232 to 9,647/s in three runs, and 1,000 × 10
// 3,838 to 8,106/s (1,439/s without), the drains unchanged. On PostgreSQL,
// whose writers run side by side, 500 ms took 1,000 × 10 from 2,645 to
// 5,887 accepts/s but its drain from 11.0 to 12.2 s, so it is not used
// there. A second is a block of the dev chain: what a burst holds back
// goes in the next block or the one after.
const YieldMax = time.Second

// Calmer tells when a burst of many accounts' accepts ends (CommitQueue).
type Calmer interface {
	AwaitCalm(ctx context.Context, max time.Duration)
}

// YieldTo makes the stage's pumps yield to accepts: each merged first read
// of the pumps (the in-flight summaries) waits while c says that many
// accounts' accepts arrive, max at most. It returns st.
func (st *SubmitStage) YieldTo(c Calmer, max time.Duration) *SubmitStage {
	st.calm, st.yieldMax = c, max
	return st
}

// Bounds of one merged call of a SubmitStage.
const (
	// stageMaxAccounts bounds the accounts of one merged read.
	stageMaxAccounts = 2048
	// stageMaxRows bounds the rows of one merged write and the requests of
	// one merged JSON-RPC batch (the client splits batches further).
	stageMaxRows = 4096
	// stageTimeout bounds one merged store call (node calls are bounded
	// by the client's own timeout).
	stageTimeout = 30 * time.Second
)

type summaryResult struct {
	sum InFlightSummary
	err error
}

type readyRequest struct {
	accountID string
	limit     int
}

type readyResult struct {
	txs []*Transaction
	err error
}

type countResult struct {
	n   int
	err error
}

type accountResult struct {
	acct *Account
	err  error
}

type maxNonceResult struct {
	nonce uint64
	any   bool
	err   error
}

type nonceResult struct {
	nonce uint64
	err   error
}

type estimateResult struct {
	gas  []uint64
	errs []error
	err  error
}

type sendResult struct {
	errs []error
	err  error
}

// NewSubmitStage starts the stage of net over store.
func NewSubmitStage(net *Network, store StageStore) *SubmitStage {
	st := &SubmitStage{net: net, store: store}
	st.summaries = NewMerger(st.runSummaries, nil, stageMaxAccounts)
	st.ready = NewMerger(st.runReady, nil, stageMaxAccounts)
	st.queued = NewMerger(st.runCounts, nil, stageMaxAccounts)
	st.marks = NewMerger(st.runMarks, func(g SubmitGroup) int { return len(g.Txs) }, stageMaxRows)
	st.nonces = NewMerger(st.runNonces, nil, stageMaxRows)
	st.accounts = NewMerger(st.runAccounts, nil, stageMaxAccounts)
	st.maxNonces = NewMerger(st.runMaxNonces, nil, stageMaxAccounts)
	st.estimates = NewMerger(st.runEstimates, func(m []ethereum.CallMsg) int { return len(m) }, stageMaxRows)
	st.sends = NewMerger(st.runSends, func(t []*types.Transaction) int { return len(t) }, stageMaxRows)
	st.fences = newFenceChecks(st)
	return st
}

// chain is the network's node, as far as the stage uses it.
func (st *SubmitStage) chain() stageChain { return st.net.Chain }

// Close stops the stage after the calls already waiting.
func (st *SubmitStage) Close() {
	st.summaries.Close()
	st.ready.Close()
	st.queued.Close()
	st.marks.Close()
	st.nonces.Close()
	st.accounts.Close()
	st.maxNonces.Close()
	st.estimates.Close()
	st.sends.Close()
	if st.fences != nil {
		st.fences.Close()
	}
}

// errStageClosed is the error of a call to a closed stage.
var errStageClosed = Errorf(CodeUnavailable, "", "shutting down: the submit stage is closed")

// stageContext is the context of one merged store call.
func stageContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), stageTimeout)
}

// InFlightSummary is the store's InFlightSummary of accountID, merged.
func (st *SubmitStage) InFlightSummary(accountID string) (InFlightSummary, error) {
	r, ok := st.summaries.Do(accountID)
	if !ok {
		return InFlightSummary{}, errStageClosed
	}
	return r.sum, r.err
}

func (st *SubmitStage) runSummaries(ids []string) []summaryResult {
	ctx, cancel := stageContext()
	defer cancel()
	if st.calm != nil {
		st.calm.AwaitCalm(ctx, st.yieldMax)
	}
	sums, err := st.store.InFlightSummaries(ctx, st.net.Name, distinct(ids))
	out := make([]summaryResult, len(ids))
	for i, id := range ids {
		out[i] = summaryResult{sum: sums[id], err: err}
	}
	return out
}

// ReadyTransactions is the store's ReadyTransactions of accountID, merged.
func (st *SubmitStage) ReadyTransactions(accountID string, limit int) ([]*Transaction, error) {
	if limit <= 0 {
		return []*Transaction{}, nil
	}
	r, ok := st.ready.Do(readyRequest{accountID: accountID, limit: limit})
	if !ok {
		return nil, errStageClosed
	}
	return r.txs, r.err
}

func (st *SubmitStage) runReady(reqs []readyRequest) []readyResult {
	limits := make(map[string]int, len(reqs))
	for _, r := range reqs {
		limits[r.accountID] = max(limits[r.accountID], r.limit)
	}
	ctx, cancel := stageContext()
	defer cancel()
	got, err := st.store.ReadyTransactionsOf(ctx, st.net.Name, limits)
	out := make([]readyResult, len(reqs))
	for i, r := range reqs {
		txs := got[r.accountID]
		if len(txs) > r.limit {
			txs = txs[:r.limit]
		}
		if txs == nil {
			txs = []*Transaction{}
		}
		out[i] = readyResult{txs: txs, err: err}
	}
	return out
}

// CountQueued is the store's CountQueued of accountID, merged.
func (st *SubmitStage) CountQueued(accountID string) (int, error) {
	r, ok := st.queued.Do(accountID)
	if !ok {
		return 0, errStageClosed
	}
	return r.n, r.err
}

func (st *SubmitStage) runCounts(ids []string) []countResult {
	ctx, cancel := stageContext()
	defer cancel()
	counts, err := st.store.CountQueuedOf(ctx, st.net.Name, distinct(ids))
	out := make([]countResult, len(ids))
	for i, id := range ids {
		out[i] = countResult{n: counts[id], err: err}
	}
	return out
}

// Account is the store's AccountByID, merged: a crowd of accounts that
// send for the first time loads them in one statement.
func (st *SubmitStage) Account(id string) (*Account, error) {
	r, ok := st.accounts.Do(id)
	if !ok {
		return nil, errStageClosed
	}
	return r.acct, r.err
}

func (st *SubmitStage) runAccounts(ids []string) []accountResult {
	ctx, cancel := stageContext()
	defer cancel()
	got, err := st.store.AccountsByID(ctx, distinct(ids))
	out := make([]accountResult, len(ids))
	for i, id := range ids {
		switch a, ok := got[id]; {
		case err != nil:
			out[i].err = err
		case !ok:
			out[i].err = Errorf(CodeNotFound, "", "account %s not found", id)
		default:
			cp := *a
			out[i].acct = &cp
		}
	}
	return out
}

// MaxNonce is the store's MaxNonce of accountID, merged.
func (st *SubmitStage) MaxNonce(accountID string) (uint64, bool, error) {
	r, ok := st.maxNonces.Do(accountID)
	if !ok {
		return 0, false, errStageClosed
	}
	return r.nonce, r.any, r.err
}

func (st *SubmitStage) runMaxNonces(ids []string) []maxNonceResult {
	ctx, cancel := stageContext()
	defer cancel()
	got, err := st.store.MaxNonces(ctx, st.net.Name, distinct(ids))
	out := make([]maxNonceResult, len(ids))
	for i, id := range ids {
		n, ok := got[id]
		out[i] = maxNonceResult{nonce: n, any: ok, err: err}
	}
	return out
}

// MarkSubmitted is the store's MarkSubmittedMany of one account's signed
// transactions, in one database transaction with those of other accounts.
func (st *SubmitStage) MarkSubmitted(f Fence, txs []*Transaction) error {
	err, ok := st.marks.Do(SubmitGroup{Fence: f, Txs: txs})
	if !ok {
		return errStageClosed
	}
	return err
}

// runMarks stores the groups in one database transaction. When that
// certainly fails (a row no longer new, a stale fence: nothing stored),
// the failure is one group's, not the others': each group is then stored
// on its own, so each caller gets its own outcome. Any other error (the
// database unreachable, an unknown outcome at commit) is every caller's.
func (st *SubmitStage) runMarks(groups []SubmitGroup) []error {
	out := make([]error, len(groups))
	ctx, cancel := stageContext()
	err := st.store.MarkSubmittedGroups(ctx, groups)
	cancel()
	if len(groups) == 1 || err == nil || !groupFailure(err) {
		for i := range out {
			out[i] = err
		}
		return out
	}
	for i, g := range groups {
		ctx, cancel := stageContext()
		out[i] = st.store.MarkSubmittedGroups(ctx, []SubmitGroup{g})
		cancel()
	}
	return out
}

// groupFailure reports whether err of MarkSubmittedGroups is the certain
// failure of one group: nothing was stored, and the other groups may be.
func groupFailure(err error) bool {
	return errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrFenced) || IsNotCommitted(err)
}

// NonceAt is the chain nonce of addr at the latest block, read in one
// JSON-RPC batch with those of other accounts when the chain is a
// NonceBatcher.
func (st *SubmitStage) NonceAt(ctx context.Context, addr common.Address) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("submit stage: chain nonce: %w", err)
	}
	if _, ok := st.chain().(NonceBatcher); !ok {
		return st.chain().NonceAt(ctx, addr, nil)
	}
	r, ok := st.nonces.Do(addr)
	if !ok {
		return 0, errStageClosed
	}
	return r.nonce, r.err
}

func (st *SubmitStage) runNonces(addrs []common.Address) []nonceResult {
	nonces, errs, err := st.chain().(NonceBatcher).BatchNonces(context.Background(), addrs)
	out := make([]nonceResult, len(addrs))
	for i := range addrs {
		if err != nil {
			out[i].err = err
			continue
		}
		out[i] = nonceResult{nonce: nonces[i], err: errs[i]}
	}
	return out
}

// Estimate is EstimateDistinct of one account's calls, in one JSON-RPC
// batch with those of other accounts.
func (st *SubmitStage) Estimate(msgs []ethereum.CallMsg) ([]uint64, []error, error) {
	r, ok := st.estimates.Do(msgs)
	if !ok {
		return nil, nil, errStageClosed
	}
	return r.gas, r.errs, r.err
}

func (st *SubmitStage) runEstimates(reqs [][]ethereum.CallMsg) []estimateResult {
	all := concat(reqs)
	gas, errs, err := EstimateDistinct(context.Background(), st.chain(), all)
	out := make([]estimateResult, len(reqs))
	at := 0
	for i, r := range reqs {
		if err != nil {
			out[i].err = err
			continue
		}
		out[i] = estimateResult{gas: gas[at : at+len(r) : at+len(r)], errs: errs[at : at+len(r) : at+len(r)]}
		at += len(r)
	}
	return out
}

// Send is SendAll of one account's transactions (in nonce order), in one
// JSON-RPC batch with those of other accounts; each account's transactions
// keep their order in the batch.
func (st *SubmitStage) Send(txs []*types.Transaction) ([]error, error) {
	if len(txs) == 0 {
		return nil, nil
	}
	r, ok := st.sends.Do(txs)
	if !ok {
		return nil, errStageClosed
	}
	return r.errs, r.err
}

func (st *SubmitStage) runSends(reqs [][]*types.Transaction) []sendResult {
	all := concat(reqs)
	errs, err := SendAll(context.Background(), st.chain(), all)
	out := make([]sendResult, len(reqs))
	at := 0
	for i, r := range reqs {
		if err != nil {
			out[i].err = err
			continue
		}
		out[i] = sendResult{errs: errs[at : at+len(r) : at+len(r)]}
		at += len(r)
	}
	return out
}

// NonceReader reads an account's nonce at a block (nil: the latest).
type NonceReader interface {
	NonceAt(ctx context.Context, account common.Address, blockNumber *big.Int) (uint64, error)
}

// stageChain is what a SubmitStage needs of the node: estimates, nonces
// and broadcasts, batched when the node's adapter can (TxBatcher,
// NonceBatcher).
type stageChain interface {
	ethereum.GasEstimator
	ethereum.TransactionSender
	NonceReader
}

// NonceBatcher is implemented by chains that read many accounts' nonces
// in one round trip (a JSON-RPC batch of eth_getTransactionCount at the
// latest block). It is optional: a SubmitStage reads them one by one
// without it.
type NonceBatcher interface {
	// BatchNonces returns one nonce or one error per address, in order;
	// the error is that of the batch as a whole.
	BatchNonces(ctx context.Context, addrs []common.Address) ([]uint64, []error, error)
}

// NoncesEach reads the nonces of addrs at the latest block one call after
// the other (the fallback of a NonceBatcher that wraps a chain without
// batches); an error stops it.
func NoncesEach(ctx context.Context, chain NonceReader, addrs []common.Address) ([]uint64, []error, error) {
	out := make([]uint64, len(addrs))
	for i, a := range addrs {
		n, err := chain.NonceAt(ctx, a, nil)
		if err != nil {
			return nil, nil, err
		}
		out[i] = n
	}
	return out, make([]error, len(addrs)), nil
}

// concat joins the slices of reqs in order.
func concat[T any](reqs [][]T) []T {
	n := 0
	for _, r := range reqs {
		n += len(r)
	}
	all := make([]T, 0, n)
	for _, r := range reqs {
		all = append(all, r...)
	}
	return all
}

// distinct returns ids without repeats, in first-seen order.
func distinct(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
