package engine

import (
	"context"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// MetricAccount names an account in the measurements: its id and its
// address (one address per id, so a label of each has the same
// cardinality).
type MetricAccount struct {
	ID      string
	Address common.Address
}

// Metrics receives the measurements of the engine: what the account actors'
// Senders and the watchers' Followers observe. It is declared here, free of
// any metrics library; engine/prom implements it on Prometheus, and
// NopMetrics discards everything. Implementations must be safe for
// concurrent use and cheap: they are called on the hot path.
type Metrics interface {
	// TxAccepted counts n transactions of account on network stored as new.
	TxAccepted(account MetricAccount, network string, n int)
	// TxSubmitted counts a transaction signed, persisted and broadcast for
	// the first time.
	TxSubmitted(account MetricAccount, network string)
	// TxCompleted counts a completed transaction; latency runs from its
	// acceptance (Created) to its completion (Ended).
	TxCompleted(account MetricAccount, network string, latency time.Duration)
	// TxFailed counts a failed transaction by its error code.
	TxFailed(account MetricAccount, network string, code TxErrorCode)
	// AccountLoad adds deltas to the queue depth (new and waiting) and the
	// in-flight count (submitted) of account on network. Deltas, not
	// values, so that accounts beyond a cardinality cap can share a series.
	AccountLoad(account MetricAccount, network string, queued, inFlight int)
	// NextNonce records the nonce the account's next transaction gets.
	NextNonce(account MetricAccount, network string, nonce uint64)
	// NonceHealth records the account's nonce health on network (the
	// chain's nonce, the lowest in flight, how long it has been stuck), at
	// the end of every pump of its sender.
	NonceHealth(account MetricAccount, network string, h NonceHealth)
	// NonceRepaired counts one repair of the nonce doctor of kind
	// (NonceRepairGapFilled, NonceRepairNextResynced).
	NonceRepaired(account MetricAccount, network, kind string)
	// Head records the latest block of network and its timestamp.
	Head(network string, number uint64, timestamp time.Time)
	// Reorg counts a reorganisation of network in which depth processed
	// blocks left the chain.
	Reorg(network string, depth uint64)
	// SubscriptionPoll records one poll of network's subscription
	// processor (err: it failed).
	SubscriptionPoll(network string, res SubscriptionResult, err error)
	// CallbackOutcome counts one recorded callback attempt of kind
	// (CallbackKindTransaction, CallbackKindEvent) with outcome
	// (OutcomeDelivered, OutcomeRetry, OutcomeAbandoned).
	CallbackOutcome(kind, outcome string)
}

// NopMetrics is a Metrics that discards everything: the default.
type NopMetrics struct{}

var _ Metrics = NopMetrics{}

// TxAccepted implements Metrics.
func (NopMetrics) TxAccepted(MetricAccount, string, int) {}

// TxSubmitted implements Metrics.
func (NopMetrics) TxSubmitted(MetricAccount, string) {}

// TxCompleted implements Metrics.
func (NopMetrics) TxCompleted(MetricAccount, string, time.Duration) {}

// TxFailed implements Metrics.
func (NopMetrics) TxFailed(MetricAccount, string, TxErrorCode) {}

// AccountLoad implements Metrics.
func (NopMetrics) AccountLoad(MetricAccount, string, int, int) {}

// NextNonce implements Metrics.
func (NopMetrics) NextNonce(MetricAccount, string, uint64) {}

// NonceHealth implements Metrics.
func (NopMetrics) NonceHealth(MetricAccount, string, NonceHealth) {}

// NonceRepaired implements Metrics.
func (NopMetrics) NonceRepaired(MetricAccount, string, string) {}

// Head implements Metrics.
func (NopMetrics) Head(string, uint64, time.Time) {}

// Reorg implements Metrics.
func (NopMetrics) Reorg(string, uint64) {}

// SubscriptionPoll implements Metrics.
func (NopMetrics) SubscriptionPoll(string, SubscriptionResult, error) {}

// CallbackOutcome implements Metrics.
func (NopMetrics) CallbackOutcome(string, string) {}

// QueueCounter is implemented by stores that can count the queued
// transactions (status new or waiting) of an account on a network, for the
// queue depth gauge. Both persistence backends implement it; a Sender on a
// store without it reports no queue depth.
type QueueCounter interface {
	CountQueued(ctx context.Context, accountID, network string) (int, error)
}
