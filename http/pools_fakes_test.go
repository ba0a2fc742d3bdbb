package http

import (
	"context"

	"github.com/txengine/txengine/engine"
)

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

// PoolShort answers e.poolShort[poolID].
func (e *fakeEngine) PoolShort(_, poolID string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.poolShort[poolID]
}
