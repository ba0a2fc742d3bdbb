package http

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlite"
)

// memPools is an in-memory engine.PoolStore for the handlers' tests, over
// the test store's real accounts: members are inserted with CreateAccount
// (quota and faucet grants as the store checks them), and deleted again
// when one fails, as a real store's transaction rolls back.
type memPools struct {
	accounts *sqlite.Store

	mu    sync.Mutex
	pools map[string]*engine.Pool
	order []string
	// loads are what PoolLoads answers, by pool id.
	loads map[string][]engine.PoolMemberLoad
}

func newMemPools(accounts *sqlite.Store) *memPools {
	return &memPools{accounts: accounts, pools: map[string]*engine.Pool{}, loads: map[string][]engine.PoolMemberLoad{}}
}

func clonePool(p *engine.Pool) *engine.Pool {
	cp := *p
	cp.Members = slices.Clone(p.Members)
	cp.Idempotency = nil
	return &cp
}

func (m *memPools) insertMembers(ctx context.Context, p *engine.Pool, accts []*engine.Account) error {
	for i, a := range accts {
		if err := m.accounts.CreateAccount(ctx, a); err != nil {
			for _, done := range accts[:i] {
				for _, q := range []string{`DELETE FROM faucet_grants WHERE account_id = ?`, `DELETE FROM accounts WHERE id = ?`} {
					if _, derr := m.accounts.Writer().Exec(ctx, q, done.ID); derr != nil {
						return fmt.Errorf("%w; rolling back: %w", err, derr)
					}
				}
			}
			return err
		}
	}
	for _, a := range accts {
		p.Members = append(p.Members, engine.PoolMember{AccountID: a.ID, Address: a.Address, Slot: len(p.Members)})
	}
	return nil
}

func (m *memPools) CreatePool(ctx context.Context, p *engine.Pool, members []*engine.Account) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := clonePool(p)
	cp.Members = nil
	if err := m.insertMembers(ctx, cp, members); err != nil {
		return err
	}
	m.pools[p.ID] = cp
	m.order = append(m.order, p.ID)
	return nil
}

func (m *memPools) PoolByID(_ context.Context, id string) (*engine.Pool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pools[id]
	if !ok {
		return nil, engine.ErrNotFound
	}
	return clonePool(p), nil
}

func (m *memPools) ListPools(_ context.Context, owner string) ([]*engine.Pool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*engine.Pool
	for _, id := range m.order {
		if p, ok := m.pools[id]; ok && p.Owner == owner {
			out = append(out, clonePool(p))
		}
	}
	return out, nil
}

func (m *memPools) ResizePool(ctx context.Context, id string, size int, add []*engine.Account) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pools[id]
	if !ok {
		return engine.ErrNotFound
	}
	if size < len(p.Members) {
		p.Members = p.Members[:size]
	} else if err := m.insertMembers(ctx, p, add); err != nil {
		return err
	}
	p.Size = len(p.Members)
	return nil
}

func (m *memPools) DeletePool(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pools[id]; !ok {
		return engine.ErrNotFound
	}
	delete(m.pools, id)
	return nil
}

func (m *memPools) PoolLoads(_ context.Context, poolID string) ([]engine.PoolMemberLoad, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.loads[poolID]), nil
}

func (m *memPools) PendingPools(context.Context, string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.loads)), nil
}

func (m *memPools) OrderingKeyMember(context.Context, string, string) (string, bool, error) {
	return "", false, nil
}

// count returns how many pools are stored (deleted ones not).
func (m *memPools) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pools)
}

// AssignPoolMember answers with e.assign when set, else slot 0; it
// records the needs it is asked for.
func (e *fakeEngine) AssignPoolMember(_ context.Context, p *engine.Pool, need engine.PoolNeed) (engine.PoolAssignment, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.needs = append(e.needs, need)
	if e.assign != nil {
		return e.assign(p, need)
	}
	return engine.PoolAssignment{Member: p.Members[0]}, nil
}

// PoolStatus answers e.poolStatus.
func (e *fakeEngine) PoolStatus(_ context.Context, p *engine.Pool) (engine.PoolStatus, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.poolStatus, nil
}

// PoolChanged records the pool's id and size.
func (e *fakeEngine) PoolChanged(_ context.Context, p *engine.Pool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.poolsChanged = append(e.poolsChanged, *p)
}

// ListTransactions records the filter it is given (txFilter) and asks
// the SQLite store, which keeps no pool until h-pstore: a filter on a pool
// is checked to reach the store.
func (s *testStore) ListTransactions(ctx context.Context, f engine.TxFilter) ([]*engine.Transaction, *engine.TxCursor, error) {
	s.txFilter.Store(&f)
	return s.Store.ListTransactions(ctx, f)
}
