package engine

import (
	"context"
	"fmt"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// pumpIO is a Sender pump's I/O: the reads, writes and node calls that a
// SubmitStage can merge across accounts. batchedIO goes through the stage
// of the network (merged with other accounts' pumps); perAccountIO makes
// each call for this account alone (stores that are not a StageStore).
type pumpIO interface {
	InFlightSummary(ctx context.Context, accountID string) (InFlightSummary, error)
	ReadyTransactions(ctx context.Context, accountID string, limit int) ([]*Transaction, error)
	// CountQueued is false when the store cannot count.
	CountQueued(ctx context.Context, accountID string) (int, bool, error)
	MarkSubmitted(ctx context.Context, f Fence, txs []*Transaction) error
	MaxNonce(ctx context.Context, accountID string) (uint64, bool, error)
	NonceAt(ctx context.Context, addr common.Address) (uint64, error)
	Estimate(ctx context.Context, msgs []ethereum.CallMsg) ([]uint64, []error, error)
	Send(ctx context.Context, txs []*types.Transaction) ([]error, error)
}

// perAccountIO calls the store and the node of one network, one account at
// a time.
type perAccountIO struct {
	store SenderStore
	net   *Network
}

func (d perAccountIO) InFlightSummary(ctx context.Context, id string) (InFlightSummary, error) {
	return d.store.InFlightSummary(ctx, id, d.net.Name)
}

func (d perAccountIO) ReadyTransactions(ctx context.Context, id string, limit int) ([]*Transaction, error) {
	return d.store.ReadyTransactions(ctx, id, d.net.Name, limit)
}

func (d perAccountIO) CountQueued(ctx context.Context, id string) (int, bool, error) {
	qc, ok := d.store.(QueueCounter)
	if !ok {
		return 0, false, nil
	}
	n, err := qc.CountQueued(ctx, id, d.net.Name)
	return n, true, err
}

func (d perAccountIO) MarkSubmitted(ctx context.Context, f Fence, txs []*Transaction) error {
	return d.store.MarkSubmittedMany(ctx, f, txs)
}

func (d perAccountIO) MaxNonce(ctx context.Context, id string) (uint64, bool, error) {
	return d.store.MaxNonce(ctx, id, d.net.Name)
}

func (d perAccountIO) NonceAt(ctx context.Context, addr common.Address) (uint64, error) {
	return stageChain(d.net.Chain).NonceAt(ctx, addr, nil)
}

func (d perAccountIO) Estimate(ctx context.Context, msgs []ethereum.CallMsg) ([]uint64, []error, error) {
	return EstimateDistinct(ctx, stageChain(d.net.Chain), msgs)
}

func (d perAccountIO) Send(ctx context.Context, txs []*types.Transaction) ([]error, error) {
	return SendAll(ctx, stageChain(d.net.Chain), txs)
}

// batchedIO goes through the SubmitStage of the network. Its merged calls
// carry the stage's own deadline (one call serves many pumps); a call is
// not made once the pump's ctx is done (cancelled at shutdown, or past
// its deadline), so a pump that loops ends with its deadline.
type batchedIO struct{ st *SubmitStage }

// done is the error of a call made after ctx is done; nil before.
func (batchedIO) done(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("submit stage: %w", err)
	}
	return nil
}

func (p batchedIO) InFlightSummary(ctx context.Context, id string) (InFlightSummary, error) {
	if err := p.done(ctx); err != nil {
		return InFlightSummary{}, err
	}
	return p.st.InFlightSummary(id)
}

func (p batchedIO) ReadyTransactions(ctx context.Context, id string, limit int) ([]*Transaction, error) {
	if err := p.done(ctx); err != nil {
		return nil, err
	}
	return p.st.ReadyTransactions(id, limit)
}

func (p batchedIO) CountQueued(ctx context.Context, id string) (int, bool, error) {
	if err := p.done(ctx); err != nil {
		return 0, true, err
	}
	n, err := p.st.CountQueued(id)
	return n, true, err
}

func (p batchedIO) MarkSubmitted(ctx context.Context, f Fence, txs []*Transaction) error {
	if err := p.done(ctx); err != nil {
		return NotCommitted(err)
	}
	return p.st.MarkSubmitted(f, txs)
}

func (p batchedIO) MaxNonce(ctx context.Context, id string) (uint64, bool, error) {
	if err := p.done(ctx); err != nil {
		return 0, false, err
	}
	return p.st.MaxNonce(id)
}

func (p batchedIO) NonceAt(ctx context.Context, addr common.Address) (uint64, error) {
	return p.st.NonceAt(ctx, addr)
}

func (p batchedIO) Estimate(ctx context.Context, msgs []ethereum.CallMsg) ([]uint64, []error, error) {
	if err := p.done(ctx); err != nil {
		return nil, nil, err
	}
	return p.st.Estimate(msgs)
}

func (p batchedIO) Send(ctx context.Context, txs []*types.Transaction) ([]error, error) {
	if err := p.done(ctx); err != nil {
		return nil, err
	}
	return p.st.Send(txs)
}
