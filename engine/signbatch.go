package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/txengine/txengine/engine/keystore"
)

// plannedTx is a transaction of a batch with the nonce and gas limit it is
// to be signed with.
type plannedTx struct {
	tx         *Transaction
	nonce, gas uint64
	// ahead is the gas of the network's transactions in flight before
	// this one (feeCapAhead).
	ahead uint64
}

// signPlanned signs plan (consecutive nonces), concurrently within the
// signer's bound when it is a ConcurrentSigner (a KMS account: each
// signature is a network call), and returns the longest prefix that
// signed: those keep their nonces, the rest goes back to the queue
// untouched, so the nonces taken stay gapless. When KMS failed the first
// of the rest:
//   - it refused the key for good (access denied, key disabled, deleted,
//     not a signing key): every transaction of the rest that KMS refused
//     so fails with TxKeyAccessDenied (no nonce was taken);
//   - it throttled beyond the retries or did not answer: signErr says so
//     and the caller backs off; the rest waits, nothing is lost.
//
// Any other signing failure (a local key that does not open) is err, and
// nothing of the batch goes.
func (s *Sender) signPlanned(ctx context.Context, plan []plannedTx, fees feeQuote, load *accountLoad) (chosen []*Transaction, signed []*types.Transaction, signErr, err error) {
	out, errs := s.signAll(ctx, plan, fees)
	n := 0
	for n < len(plan) && errs[n] == nil {
		n++
	}
	for i := n; i < len(plan); i++ {
		tx := plan[i].tx
		tx.Nonce, tx.Hash, tx.RawTx, tx.Submitted, tx.GasLimit = nil, nil, nil, nil, 0
	}
	for i := range n {
		chosen, signed = append(chosen, plan[i].tx), append(signed, out[i])
	}
	if n == len(plan) {
		return chosen, signed, nil, nil
	}
	if !keystore.IsKMSError(errs[n]) {
		return nil, nil, nil, errs[n]
	}
	if !kmsRefusesKey(errs[n]) {
		s.log.Warn("KMS did not sign; the account's transactions wait", "signed", n, "waiting", len(plan)-n, "err", errs[n])
		return chosen, signed, errs[n], nil
	}
	for i := n; i < len(plan); i++ {
		if errs[i] == nil || !kmsRefusesKey(errs[i]) {
			continue
		}
		txErr := &TxError{Code: TxKeyAccessDenied, Message: fmt.Sprintf("KMS refused to sign with the account's key: %v", errs[i])}
		s.log.Warn("KMS refused to sign; the transaction fails", "tx", plan[i].tx.ID, "err", errs[i])
		if err := s.fail(ctx, plan[i].tx.ID, txErr, load); err != nil {
			return nil, nil, nil, err
		}
	}
	return chosen, signed, nil, nil
}

// errNotSigned marks the transactions after a failure when signing one by
// one: not tried, they go back to the queue.
var errNotSigned = errors.New("not signed: an earlier transaction of the batch was not")

// kmsRefusesKey reports whether err is KMS refusing the key for good.
func kmsRefusesKey(err error) bool {
	switch keystore.KMSFaultOf(err) {
	case keystore.KMSDenied, keystore.KMSNotFound, keystore.KMSInvalid:
		return keystore.IsKMSError(err)
	}
	return false
}

// signAll signs every transaction of plan, each error at its index: one
// by one (stopping at the first failure) unless the signer signs the
// account's transactions concurrently; then within its bound.
func (s *Sender) signAll(ctx context.Context, plan []plannedTx, fees feeQuote) ([]*types.Transaction, []error) {
	out, errs := make([]*types.Transaction, len(plan)), make([]error, len(plan))
	bound := 1
	if cs, ok := s.signer.(ConcurrentSigner); ok {
		bound = cs.SignConcurrency(s.account.Key())
	}
	if bound <= 1 || len(plan) == 1 {
		for i, p := range plan {
			if out[i], errs[i] = s.sign(ctx, p, fees); errs[i] != nil {
				for j := i + 1; j < len(plan); j++ {
					errs[j] = errNotSigned
				}
				break
			}
		}
		return out, errs
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, min(bound, len(plan)))
	for i, p := range plan {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			out[i], errs[i] = s.sign(ctx, p, fees)
		}()
	}
	wg.Wait()
	return out, errs
}
