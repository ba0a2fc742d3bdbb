package engine

import "slices"

// Transition is a change of a transaction's status that the engine makes.
// The store applies one only to a transaction whose status is one of its
// From (TransitionFrom), atomically with the check: its updates take the
// statuses from this table instead of writing them again.
type Transition string

// The transitions of a transaction (docs/api-decisions.md#transactions). A status not
// listed in a transition's From cannot take it.
const (
	// TxWait holds a new transaction on its conditions (waitForAsset,
	// dependsOn).
	TxWait Transition = "wait"
	// TxReady releases a waiting transaction whose conditions hold.
	TxReady Transition = "ready"
	// TxSubmit gives a new transaction its nonce and sends it.
	TxSubmit Transition = "submit"
	// TxReplace sends another version of a submitted transaction, same
	// nonce (a fee bump); the status stays submitted.
	TxReplace Transition = "replace"
	// TxMine completes (or fails, reverted) a submitted transaction with its
	// receipt.
	TxMine Transition = "mine"
	// TxUnmine takes back a mined transaction whose block a reorg removed.
	TxUnmine Transition = "unmine"
	// TxRelease gives back the nonce of a submitted transaction that no
	// version can land with it: new again, or failed.
	TxRelease Transition = "release"
	// TxFailSubmitted fails a submitted transaction (its nonce was used
	// elsewhere, or it can never be mined).
	TxFailSubmitted Transition = "fail submitted"
	// TxFailQueued is the Sender's failure of a new transaction it read to
	// send (it cannot be built or signed): a transaction that moved on
	// meanwhile (held, cancelled, submitted) is left alone.
	TxFailQueued Transition = "fail queued"
	// TxCancel is the user's cancellation of a transaction not submitted yet.
	TxCancel Transition = "cancel"
	// TxFail fails a transaction that has not ended, whatever its stage.
	TxFail Transition = "fail"
)

// transitionFrom is the table: the statuses each transition leaves from.
func transitionFrom(t Transition) []TxStatus {
	switch t {
	case TxWait, TxSubmit, TxFailQueued:
		return []TxStatus{StatusNew}
	case TxReady:
		return []TxStatus{StatusWaiting}
	case TxReplace, TxMine, TxRelease, TxFailSubmitted:
		return []TxStatus{StatusSubmitted}
	case TxUnmine:
		return []TxStatus{StatusCompleted, StatusFailed}
	case TxCancel:
		return []TxStatus{StatusNew, StatusWaiting}
	case TxFail:
		return []TxStatus{StatusNew, StatusWaiting, StatusSubmitted}
	}
	return nil
}

// transitionTo is the statuses each transition may arrive at.
func transitionTo(t Transition) []TxStatus {
	switch t {
	case TxWait:
		return []TxStatus{StatusWaiting}
	case TxReady:
		return []TxStatus{StatusNew}
	case TxSubmit, TxReplace, TxUnmine:
		return []TxStatus{StatusSubmitted}
	case TxMine:
		return []TxStatus{StatusCompleted, StatusFailed}
	case TxRelease:
		return []TxStatus{StatusNew, StatusFailed}
	case TxFailSubmitted, TxFailQueued, TxCancel, TxFail:
		return []TxStatus{StatusFailed}
	}
	return nil
}

// Transitions lists every transition.
func Transitions() []Transition {
	return []Transition{TxWait, TxReady, TxSubmit, TxReplace, TxMine, TxUnmine, TxRelease, TxFailSubmitted, TxFailQueued, TxCancel, TxFail}
}

// TransitionFrom returns the statuses t leaves from, as strings (what a
// store's WHERE status IN (...) takes). An unknown t has none.
func TransitionFrom(t Transition) []string {
	from := transitionFrom(t)
	out := make([]string, len(from))
	for i, s := range from {
		out[i] = string(s)
	}
	return out
}

// CanTransition reports whether t takes a transaction in status from to
// status to.
func CanTransition(t Transition, from, to TxStatus) bool {
	return slices.Contains(transitionFrom(t), from) && slices.Contains(transitionTo(t), to)
}
