package engine

import (
	"fmt"
	"slices"
	"strings"
)

// maxWaitDeps bounds the dependencies a wait reason names one by one.
const maxWaitDeps = 3

// WaitFacts is what a request knows of why its transactions wait, read
// once per request (not per transaction): the statuses of their
// dependencies and, by pool id, what is known of each pool they were sent
// through. A fact that is missing makes the reason less precise, never
// wrong.
type WaitFacts struct {
	// Deps are the statuses of the waiting transactions' dependencies.
	Deps map[string]TxStatus
	// Pools is what is known of each pool, by pool id.
	Pools map[string]PoolWait
}

// PoolWait is what is known of a pool when a view says why its
// transactions wait.
type PoolWait struct {
	// Known is false when the pool could not be read (deleted, or the
	// store did not answer): only the member's own wait is described.
	Known bool
	// Treasury reports whether the pool has a treasury.
	Treasury bool
	// Short is why the pool cannot cover its members (PoolStatus.Short),
	// "" when it can or when no keeper on this node has looked at it.
	Short string
	// PendingTopUps are the OrderingKeys of the pool's top-ups not yet
	// ended (PoolTopUps.Pending).
	PendingTopUps []string
}

// WaitReason says, in one sentence, why tx waits: which dependencies are
// not completed yet, what balance its sender awaits and, for a send
// through a pool, why its member lacks it (the pool's shortfall, a
// pending top-up). It is "" unless tx is waiting.
func WaitReason(tx *Transaction, f WaitFacts) string {
	if tx.Status != StatusWaiting {
		return ""
	}
	var parts []string
	if deps := pendingDeps(tx.DependsOn, f.Deps); deps != "" {
		parts = append(parts, deps)
	}
	if tx.WaitForAsset != "" {
		parts = append(parts, assetWait(tx, f.Pools))
	}
	if len(parts) == 0 {
		parts = append(parts, "waits until its conditions are checked again")
	}
	reason := strings.Join(parts, "; ")
	if tx.WaitUntil != nil {
		reason += "; it expires at " + FormatTime(*tx.WaitUntil) + " (waitTimeout)"
	}
	return reason
}

// pendingDeps names the dependencies not completed: those not in statuses
// are described as unknown (not read), never as missing.
func pendingDeps(deps []string, statuses map[string]TxStatus) string {
	var named []string
	n := 0
	for _, id := range deps {
		st, read := statuses[id]
		if read && st == StatusCompleted {
			continue
		}
		n++
		if len(named) == maxWaitDeps {
			continue
		}
		switch {
		case !read:
			named = append(named, id)
		case st == "":
			named = append(named, id+" (unknown)")
		default:
			named = append(named, id+" ("+string(st)+")")
		}
	}
	if n == 0 {
		return ""
	}
	s := "waits for dependency " + strings.Join(named, ", ") + " to complete"
	if n > 1 {
		s = "waits for dependencies " + strings.Join(named, ", ")
		if more := n - len(named); more > 0 {
			s += fmt.Sprintf(" and %d more", more)
		}
		s += " to complete"
	}
	return s
}

// assetWait describes tx's wait for its sender's balance: for a send
// through a pool, with what is known of the pool's refills.
func assetWait(tx *Transaction, pools map[string]PoolWait) string {
	amount := tx.WaitForAsset
	if AssetKey(amount) == AssetETH {
		amount = "wei of ETH"
	} else {
		amount = "of token " + AssetKey(amount)
	}
	if tx.WaitForValue != nil {
		amount = tx.WaitForValue.String() + " " + amount
	}
	if tx.PoolID == "" {
		return fmt.Sprintf("waits until its sender %s holds %s (waitForAsset)", tx.From.Hex(), amount)
	}
	s := fmt.Sprintf("waits until its pool member %s holds %s beyond what its transfers in flight move", tx.From.Hex(), amount)
	pw, ok := pools[tx.PoolID]
	if !ok || !pw.Known {
		return s
	}
	key := TopUpKeyPrefix + tx.AccountID + ":" + AssetKey(tx.WaitForAsset)
	switch {
	case pw.Short != "":
		return s + "; the pool cannot refill it: " + pw.Short
	case !pw.Treasury:
		return s + "; the pool has no treasury, so nothing refills its members"
	case slices.Contains(pw.PendingTopUps, key):
		return s + "; a top-up from the pool's treasury is pending"
	case slices.Contains(pw.PendingTopUps, TopUpBatchKey(AssetKey(tx.WaitForAsset))):
		// A batch of the asset names every member short of it at its look.
		return s + "; a batch of top-ups from the pool's treasury is pending"
	default:
		return s + "; the pool's treasury refills members when its keeper next looks"
	}
}
