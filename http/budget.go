package http

import (
	"context"
	"fmt"
	"time"

	"github.com/txengine/txengine/engine"
)

// QuotaConfig caps what one user tree may create (docs/api.md#limits-and-quotas): a root user (ownerless, an operator, or created by an operator)
// and the users it created, directly or not, share the caps and the faucet
// budget. Operators are exempt. Zero fields are unlimited.
type QuotaConfig struct {
	// MaxUsers caps the users of a tree, its root included.
	MaxUsers int
	// MaxAccounts caps the accounts of a tree's users.
	MaxAccounts int
	// MaxSubscriptions caps the subscriptions (not deleted) of a tree's
	// users.
	MaxSubscriptions int
	// FaucetPerOwner caps the new accounts of a tree that one network's
	// faucet funds per FaucetPeriod (sliding).
	FaucetPerOwner int
	FaucetPeriod   time.Duration
	// FaucetNetworks are the networks with a faucet: a new account asks
	// each for a grant (at most one per account and network).
	FaucetNetworks []string
}

// budgetOf returns the rate-limit budget that a request of u counts on: its
// key and limits. A user with its own limits (an operator's override) or
// that is its own root counts on itself; any other on its root, with the
// root's limits (its override, read with the user, or the defaults): the
// users a user creates share its budget and cannot multiply it.
func budgetOf(cfg RateLimitConfig, u *engine.User) (key string, perSecond, perHour int) {
	if u.Limits != nil || u.Root == "" || u.Root == u.ID {
		perSecond, perHour = cfg.Limits(u)
		return u.ID, perSecond, perHour
	}
	perSecond, perHour = cfg.Limits(&engine.User{ID: u.Root, Root: u.Root, Limits: u.RootLimits})
	return u.Root, perSecond, perHour
}

// rootOf returns the budget root of a user that caller creates: the new
// user's own id when ownerless or created by an operator, else the
// caller's root.
func rootOf(caller *engine.User, id string, ownerless bool) string {
	if ownerless || caller.Operator {
		return id
	}
	if caller.Root != "" {
		return caller.Root
	}
	return caller.ID
}

// quotaOf returns the quota a creation by caller counting on root is
// checked against; nil for an operator (exempt).
func (s *Server) quotaOf(caller *engine.User, root string) *engine.Quota {
	if caller.Operator {
		return nil
	}
	q := s.cfg.Quotas
	return &engine.Quota{Root: root, MaxUsers: q.MaxUsers, MaxAccounts: q.MaxAccounts,
		FaucetBudget: q.FaucetPerOwner, FaucetSince: s.clock.Now().Add(-q.FaucetPeriod)}
}

// faucetView is one network's answer to a new account's faucet request, in
// the 201 response of POST /accounts and POST /users.
type faucetView struct {
	Network string `json:"network"`
	// Status is "funding" (a transfer is on its way) or "refused".
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// faucetGrants returns the faucet grants to ask for on nets with n new
// accounts of quota q (one slice per account), predicted from the grants
// its root had in the period (one read, only when a budget applies), and
// their views. The accounts take the budget in order: the later ones of a
// creation may be refused where the first are granted. The store checks
// each granted one again in the creation's transaction
// (engine.ErrFaucetBudget).
func (s *Server) faucetGrants(ctx context.Context, q *engine.Quota, n int, nets []string) ([][]engine.FaucetGrant, [][]faucetView, error) {
	if len(nets) == 0 || n == 0 {
		return make([][]engine.FaucetGrant, n), make([][]faucetView, n), nil
	}
	var used map[string]int
	if q != nil && q.FaucetBudget > 0 {
		var err error
		if used, err = s.store.FaucetGrantsSince(ctx, q.Root, q.FaucetSince); err != nil {
			return nil, nil, fmt.Errorf("faucet budget: %w", err)
		}
		if used == nil {
			used = map[string]int{}
		}
	}
	grants := make([][]engine.FaucetGrant, n)
	views := make([][]faucetView, n)
	for a := range n {
		grants[a] = make([]engine.FaucetGrant, len(nets))
		views[a] = make([]faucetView, len(nets))
		for i, nw := range nets {
			granted := q == nil || q.FaucetBudget <= 0 || used[nw] < q.FaucetBudget
			grants[a][i] = engine.FaucetGrant{Network: nw, Granted: granted}
			views[a][i] = faucetView{Network: nw, Status: "funding"}
			if granted {
				if used != nil {
					used[nw]++
				}
				continue
			}
			views[a][i] = faucetView{Network: nw, Status: "refused", Message: fmt.Sprintf(
				"faucet budget reached: %d new accounts per %s for this owner (the users created by one user share its budget); "+
					"fund the account yourself or ask an operator", q.FaucetBudget, shortDuration(s.cfg.Quotas.FaucetPeriod))}
		}
	}
	return grants, views, nil
}

// shortDuration writes d in whole hours or minutes when it is one ("24h",
// "90m"), else as time.Duration does.
func shortDuration(d time.Duration) string {
	switch {
	case d > 0 && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d > 0 && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
