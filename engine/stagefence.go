package engine

import (
	"context"
	"fmt"
)

// LeaseEpochReader is what a SubmitStage needs to merge the fence checks
// of many accounts (cluster mode) into one read: the current lease epoch of
// each of accountIDs that has a lease. A StageStore without it checks each
// fence on its own (Store.CheckFence).
type LeaseEpochReader interface {
	LeaseEpochs(ctx context.Context, accountIDs []string) (map[string]int64, error)
}

// newFenceChecks returns the merger of the stage's fence checks, nil when the
// store cannot merge them.
func newFenceChecks(st *SubmitStage) *Merger[Fence, error] {
	r, ok := st.store.(LeaseEpochReader)
	if !ok {
		return nil
	}
	return NewMerger(func(fences []Fence) []error {
		ids := make([]string, len(fences))
		for i, f := range fences {
			ids[i] = f.AccountID
		}
		ctx, cancel := stageContext()
		defer cancel()
		epochs, err := r.LeaseEpochs(ctx, distinct(ids))
		out := make([]error, len(fences))
		for i, f := range fences {
			out[i] = fenceOf(f, epochs, err)
		}
		return out
	}, nil, stageMaxAccounts)
}

// fenceOf is CheckFence's answer for f given the epochs read (with err).
func fenceOf(f Fence, epochs map[string]int64, err error) error {
	if err != nil {
		return fmt.Errorf("read the leases: %w", err)
	}
	epoch, ok := epochs[f.AccountID]
	switch {
	case !ok:
		return fmt.Errorf("account %s has no lease (fence epoch %d): %w", f.AccountID, f.Epoch, ErrFenced)
	case epoch != f.Epoch:
		return fmt.Errorf("the lease of account %s is at epoch %d, the fence at %d: %w", f.AccountID, epoch, f.Epoch, ErrFenced)
	}
	return nil
}

// CheckFence is the store's CheckFence of f, merged with the checks of
// other accounts' pumps into one read; merged is false when the store cannot
// merge them (the caller checks on its own).
func (st *SubmitStage) CheckFence(f Fence) (merged bool, err error) {
	if st.fences == nil {
		return false, nil
	}
	err, ok := st.fences.Do(f)
	if !ok {
		return true, errStageClosed
	}
	return true, err
}
