package engine

import "testing"

// TestTransitionTable checks the table against the lifecycle of docs/api-decisions.md#transactions:
// a terminal status leaves only by a reorg, new is reached only from
// waiting or by a released nonce, and every transition has a way in and out.
func TestTransitionTable(t *testing.T) {
	all := []TxStatus{StatusNew, StatusWaiting, StatusSubmitted, StatusCompleted, StatusFailed}
	for _, tr := range Transitions() {
		if len(transitionFrom(tr)) == 0 || len(transitionTo(tr)) == 0 {
			t.Errorf("%s: from %v to %v", tr, transitionFrom(tr), transitionTo(tr))
		}
		for _, from := range all {
			for _, to := range all {
				if !CanTransition(tr, from, to) {
					continue
				}
				if from.Terminal() && tr != TxUnmine {
					t.Errorf("%s leaves the terminal status %s", tr, from)
				}
				if to == StatusNew && tr != TxReady && tr != TxRelease {
					t.Errorf("%s goes back to new", tr)
				}
				if to == StatusCompleted && from != StatusSubmitted {
					t.Errorf("%s completes a transaction in %s", tr, from)
				}
			}
		}
	}
	cases := []struct {
		tr       Transition
		from, to TxStatus
		ok       bool
	}{
		{TxSubmit, StatusNew, StatusSubmitted, true},
		{TxSubmit, StatusWaiting, StatusSubmitted, false},
		{TxMine, StatusSubmitted, StatusCompleted, true},
		{TxMine, StatusNew, StatusCompleted, false},
		{TxCancel, StatusSubmitted, StatusFailed, false},
		{TxCancel, StatusWaiting, StatusFailed, true},
		{TxFailQueued, StatusNew, StatusFailed, true},
		{TxFailQueued, StatusWaiting, StatusFailed, false},
		{TxFail, StatusCompleted, StatusFailed, false},
		{TxUnmine, StatusCompleted, StatusSubmitted, true},
		{TxReady, StatusNew, StatusNew, false},
		{Transition("teleport"), StatusNew, StatusCompleted, false},
	}
	for _, c := range cases {
		if got := CanTransition(c.tr, c.from, c.to); got != c.ok {
			t.Errorf("CanTransition(%s, %s, %s) = %v, want %v", c.tr, c.from, c.to, got, c.ok)
		}
	}
	if got := TransitionFrom(TxCancel); len(got) != 2 || got[0] != "new" || got[1] != "waiting" {
		t.Errorf("TransitionFrom(TxCancel) = %v", got)
	}
	if got := TransitionFrom(TxFailQueued); len(got) != 1 || got[0] != "new" {
		t.Errorf("TransitionFrom(TxFailQueued) = %v", got)
	}
}
