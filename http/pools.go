package http

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
)

// poolView is the JSON form of a sender pool (docs/pools.md). TopUps and
// Short are present in GET /pools/{id} only.
type poolView struct {
	ID       string           `json:"id"`
	Name     string           `json:"name"`
	Network  string           `json:"network"`
	Size     int              `json:"size"`
	Treasury *string          `json:"treasury"`
	Created  string           `json:"created"`
	Members  []poolMemberView `json:"members"`
	TopUps   *int             `json:"topUps,omitempty"`
	Short    string           `json:"short,omitempty"`
}

// poolMemberView is one member of a pool. Balance, Tokens, Window and
// NonceHealth are present in GET /pools/{id} only (Balance and Tokens not
// when the node did not answer).
type poolMemberView struct {
	Slot        int               `json:"slot"`
	Account     string            `json:"account"`
	Address     string            `json:"address"`
	Queued      int               `json:"queued"`
	InFlight    int               `json:"inFlight"`
	Balance     *string           `json:"balance,omitempty"`
	Tokens      map[string]string `json:"tokens,omitempty"`
	Window      *int              `json:"window,omitempty"`
	NonceHealth string            `json:"nonceHealth,omitempty"`
}

// viewPool returns p's view with its members' loads (nil: none yet).
func viewPool(p *engine.Pool, loads []engine.PoolMemberLoad) poolView {
	v := poolView{ID: p.ID, Name: p.Name, Network: p.Network, Size: p.Size, Created: engine.FormatTime(p.Created),
		Members: make([]poolMemberView, 0, len(p.Members))}
	if p.TreasuryID != "" {
		v.Treasury = &p.TreasuryID
	}
	for _, m := range p.Members {
		mv := poolMemberView{Slot: m.Slot, Account: m.AccountID, Address: m.Address.Hex()}
		if i := slices.IndexFunc(loads, func(l engine.PoolMemberLoad) bool { return l.AccountID == m.AccountID }); i >= 0 {
			mv.Queued, mv.InFlight = loads[i].Queued, loads[i].InFlight
		}
		v.Members = append(v.Members, mv)
	}
	return v
}

// withStatus merges the pool's live state into v (GET /pools/{id}).
func withStatus(v poolView, st engine.PoolStatus) poolView {
	topUps := st.TopUps
	v.TopUps, v.Short = &topUps, st.Short
	for i := range v.Members {
		mv := &v.Members[i]
		j := slices.IndexFunc(st.Members, func(m engine.PoolMemberStatus) bool { return m.AccountID == mv.Account })
		if j < 0 {
			continue
		}
		ms := st.Members[j]
		window := ms.Window
		mv.Queued, mv.InFlight, mv.Window, mv.NonceHealth = ms.Queued, ms.InFlight, &window, ms.NonceHealth
		if ms.Balance != nil {
			b := ms.Balance.String()
			mv.Balance = &b
		}
		if ms.Tokens != nil {
			mv.Tokens = make(map[string]string, len(ms.Tokens))
			for addr, bal := range ms.Tokens {
				if bal != nil {
					mv.Tokens[addr] = bal.String()
				}
			}
		}
	}
	return v
}

// createPoolRequest is the body of POST /pools.
type createPoolRequest struct {
	Name     *string `json:"name"`
	Network  *string `json:"network"`
	Size     *int    `json:"size"`
	Treasury *string `json:"treasury"`
}

// resizePoolRequest is the body of PATCH /pools/{id}.
type resizePoolRequest struct {
	Size *int `json:"size"`
}

// checkPoolSize refuses a size outside MinPoolSize..MaxPoolSize or absent.
func checkPoolSize(size *int) error {
	if size == nil {
		return engine.Invalid("size", "size is required")
	}
	if *size < engine.MinPoolSize || *size > engine.MaxPoolSize {
		return engine.Invalid("size", "size must be a whole number from %d to %d, got %d", engine.MinPoolSize, engine.MaxPoolSize, *size)
	}
	return nil
}

// poolOf validates a POST /pools request of u and returns the pool (no
// members yet, not stored). Every refusal names its field.
func (s *Server) poolOf(ctx context.Context, u *engine.User, req *createPoolRequest) (*engine.Pool, error) {
	if req.Name == nil || strings.TrimSpace(*req.Name) == "" {
		return nil, engine.Invalid("name", "name is required")
	}
	if utf8.RuneCountInString(*req.Name) > engine.MaxPoolNameLen {
		return nil, engine.Invalid("name", "name is longer than %d characters", engine.MaxPoolNameLen)
	}
	if req.Network == nil {
		return nil, engine.Invalid("network", "network is required")
	}
	if nw, found := s.networks[*req.Network]; !found || nw.Chain == nil {
		return nil, engine.Invalid("network", "network %q is not configured", *req.Network)
	}
	if err := checkPoolSize(req.Size); err != nil {
		return nil, err
	}
	p := &engine.Pool{ID: engine.NewID(), Owner: u.ID, Name: *req.Name, Network: *req.Network, Size: *req.Size, Created: s.clock.Now()}
	if req.Treasury != nil {
		id, err := uuid.Parse(*req.Treasury)
		if err != nil || len(*req.Treasury) != 36 {
			return nil, engine.Invalid("treasury", "treasury must be an account id")
		}
		a, err := s.ownAccountByID(ctx, u, id.String(), "treasury")
		if err != nil {
			return nil, err
		}
		p.TreasuryID = a.ID
	}
	return p, nil
}

// newMembers returns n new accounts of u (not stored) for p, from slot
// first, counted against u's quota, and the networks whose faucet funds
// them: p's, when it has a faucet and p has no treasury.
func (s *Server) newMembers(u *engine.User, p *engine.Pool, first, n int) ([]*engine.Account, []string, error) {
	quota := s.quotaOf(u, rootOf(u, u.ID, false))
	accts := make([]*engine.Account, n)
	for i := range accts {
		a, err := s.newAccount(u.ID, false)
		if err != nil {
			return nil, nil, err
		}
		a.Quota = quota
		accts[i] = a
		p.Members = append(p.Members, engine.PoolMember{AccountID: a.ID, Address: a.Address, Slot: first + i})
	}
	var nets []string
	if p.TreasuryID == "" && slices.Contains(s.cfg.Quotas.FaucetNetworks, p.Network) {
		nets = []string{p.Network}
	}
	return accts, nets, nil
}

// createPool serves POST /pools: a pool of size new accounts of the
// caller (docs/pools.md), stored with them in one transaction.
func (s *Server) createPool(c *gin.Context) {
	var req createPoolRequest
	if err := s.decodeBody(c, &req, false); err != nil {
		s.fail(c, err)
		return
	}
	u := currentUser(c)
	p, err := s.poolOf(c.Request.Context(), u, &req)
	if err != nil {
		s.fail(c, err)
		return
	}
	accts, nets, err := s.newMembers(u, p, 0, p.Size)
	if err != nil {
		s.fail(c, err)
		return
	}
	view := viewPool(p, nil)
	done, err := s.storeWithFaucet(c, accts, nets, accts[0].Quota, &p.Idempotency, func([][]faucetView) any { return view },
		func(ctx context.Context) error { return s.store.CreatePool(ctx, p, accts) })
	if done {
		return
	}
	if err != nil {
		s.fail(c, fmt.Errorf("create pool for %s: %w", u.ID, err))
		return
	}
	s.membersCreated(c, accts)
	s.engine.PoolChanged(context.WithoutCancel(c.Request.Context()), p)
	created(c, view)
}

// membersCreated tells the account cache and the engine of new members.
func (s *Server) membersCreated(c *gin.Context, accts []*engine.Account) {
	for _, a := range accts {
		s.accounts.remember(a)
		s.engine.AccountCreated(context.WithoutCancel(c.Request.Context()), a)
	}
}

// listPools serves GET /pools: the caller's pools, oldest first.
func (s *Server) listPools(c *gin.Context) {
	ctx := c.Request.Context()
	u := currentUser(c)
	pools, err := s.store.ListPools(ctx, u.ID)
	if err != nil {
		s.fail(c, fmt.Errorf("list pools of %s: %w", u.ID, err))
		return
	}
	out := make([]poolView, 0, len(pools))
	for _, p := range pools {
		v, err := s.loadedPoolView(ctx, p)
		if err != nil {
			s.fail(c, err)
			return
		}
		out = append(out, v)
	}
	ok(c, out)
}

// loadedPoolView returns p's view with its members' queue and in-flight
// counts.
func (s *Server) loadedPoolView(ctx context.Context, p *engine.Pool) (poolView, error) {
	loads, err := s.store.PoolLoads(ctx, p.ID)
	if err != nil {
		return poolView{}, fmt.Errorf("pool %s: loads: %w", p.ID, err)
	}
	return viewPool(p, loads), nil
}

// getPool serves GET /pools/{id}: the pool with its live state.
func (s *Server) getPool(c *gin.Context) {
	p, err := s.pathPool(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	st, err := s.engine.PoolStatus(c.Request.Context(), p)
	if err != nil {
		s.fail(c, fmt.Errorf("pool %s: status: %w", p.ID, err))
		return
	}
	ok(c, withStatus(viewPool(p, nil), st))
}

// resizePool serves PATCH /pools/{id} {"size"}: up adds new members (as
// POST /pools creates them), down removes the highest slots (they stay
// the caller's accounts).
func (s *Server) resizePool(c *gin.Context) {
	p, err := s.pathPool(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var req resizePoolRequest
	if err := s.decodeBody(c, &req, false); err != nil {
		s.fail(c, err)
		return
	}
	if err := checkPoolSize(req.Size); err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	u := currentUser(c)
	var add []*engine.Account
	if grow := *req.Size - p.Size; grow > 0 {
		var nets []string
		if add, nets, err = s.newMembers(u, p, p.Size, grow); err != nil {
			s.fail(c, err)
			return
		}
		var idem *engine.IdempotencyRecord // PATCH takes no Idempotency-Key
		done, serr := s.storeWithFaucet(c, add, nets, add[0].Quota, &idem, func([][]faucetView) any { return nil },
			func(ctx context.Context) error { return s.store.ResizePool(ctx, p.ID, *req.Size, add) })
		if done {
			return
		}
		err = serr
	} else if grow < 0 {
		err = s.store.ResizePool(ctx, p.ID, *req.Size, nil)
	}
	s.pools.drop(p.ID)
	if engine.IsNotFound(err) {
		err = notFound("", "pool %s not found", p.ID) // deleted meanwhile
	}
	if err != nil {
		s.fail(c, fmt.Errorf("resize pool %s: %w", p.ID, err))
		return
	}
	s.membersCreated(c, add)
	if p, err = s.ownPool(ctx, u.ID, p.ID, ""); err != nil {
		s.fail(c, err)
		return
	}
	s.engine.PoolChanged(context.WithoutCancel(ctx), p)
	v, err := s.loadedPoolView(ctx, p)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, v)
}

// deletePool serves DELETE /pools/{id}: 200 with the pool as it was; its
// members stay the caller's accounts.
func (s *Server) deletePool(c *gin.Context) {
	p, err := s.pathPool(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.loadedPoolView(c.Request.Context(), p)
	if err != nil {
		s.fail(c, err)
		return
	}
	err = s.store.DeletePool(c.Request.Context(), p.ID)
	s.pools.drop(p.ID) // refused at once by this node's sends
	if engine.IsNotFound(err) {
		err = notFound("", "pool %s not found", p.ID) // deleted meanwhile
	}
	if err != nil {
		s.fail(c, fmt.Errorf("delete pool %s: %w", p.ID, err))
		return
	}
	s.engine.PoolChanged(context.WithoutCancel(c.Request.Context()), p)
	ok(c, v)
}

// pathPool returns the caller's pool named by the path's {id}.
func (s *Server) pathPool(c *gin.Context) (*engine.Pool, error) {
	id, err := pathID(c, "id", "pool")
	if err != nil {
		return nil, err
	}
	return s.ownPool(c.Request.Context(), currentUser(c).ID, id, "")
}

// ownPool returns owner's pool id, read from the store, or not_found on
// field (another user's pool too).
func (s *Server) ownPool(ctx context.Context, owner, id, field string) (*engine.Pool, error) {
	return s.ownPoolWith(ctx, owner, id, field, s.store.PoolByID)
}

// cachedPool returns pool id through the pool cache (shared: read only).
func (s *Server) cachedPool(ctx context.Context, id string) (*engine.Pool, error) {
	return s.pools.get(ctx, id, s.clock.Now(), s.store.PoolByID)
}

// ownPoolWith is ownPool reading the pool with read.
func (s *Server) ownPoolWith(ctx context.Context, owner, id, field string, read func(context.Context, string) (*engine.Pool, error)) (*engine.Pool, error) {
	p, err := read(ctx, id)
	if engine.IsNotFound(err) || (err == nil && p.Owner != owner) {
		return nil, notFound(field, "pool %s not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("pool %s: %w", id, err)
	}
	return p, nil
}
