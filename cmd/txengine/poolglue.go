package main

import (
	"context"

	"github.com/txengine/txengine/actors"
	"github.com/txengine/txengine/engine"
	apihttp "github.com/txengine/txengine/http"
)

// Until the branches of sender pools merge (h-pstore: the stores keep
// pools; h-pkeeper: actors.System balances them), the API is wired with
// what the store and the actor system implement, and the routes of pools
// answer unavailable where either lacks them. Once both merge, apiStore
// and apiEngine return their argument and this file goes.

// errNoPools is the answer of a pool operation that this build cannot do.
var errNoPools = &engine.Error{Code: engine.CodeUnavailable, Message: "sender pools are not available in this build"}

// apiStore returns store as the API's store.
func apiStore(store engine.Store) apihttp.Store {
	if s, ok := any(store).(apihttp.Store); ok {
		return s
	}
	return noPoolStore{store}
}

// apiEngine returns sys as the API's engine.
func apiEngine(sys *actors.System) apihttp.Engine {
	if e, ok := any(sys).(apihttp.Engine); ok {
		return e
	}
	return noPoolEngine{sys}
}

// noPoolStore is a store without pools: none exist, none can be created.
type noPoolStore struct{ engine.Store }

func (noPoolStore) CreatePool(context.Context, *engine.Pool, []*engine.Account) error {
	return errNoPools
}
func (noPoolStore) PoolByID(context.Context, string) (*engine.Pool, error) {
	return nil, engine.ErrNotFound
}
func (noPoolStore) ListPools(context.Context, string) ([]*engine.Pool, error) { return nil, nil }
func (noPoolStore) ResizePool(context.Context, string, int, []*engine.Account) error {
	return errNoPools
}
func (noPoolStore) DeletePool(context.Context, string) error { return errNoPools }
func (noPoolStore) PoolLoads(context.Context, string) ([]engine.PoolMemberLoad, error) {
	return nil, nil
}
func (noPoolStore) PendingPools(context.Context, string) ([]string, error) { return nil, nil }
func (noPoolStore) OrderingKeyMember(context.Context, string, string) (string, bool, error) {
	return "", false, nil
}

// noPoolEngine is an actor system without the balancer of pools.
type noPoolEngine struct{ *actors.System }

func (noPoolEngine) AssignPoolMember(context.Context, *engine.Pool, engine.PoolNeed) (engine.PoolAssignment, error) {
	return engine.PoolAssignment{}, errNoPools
}
func (noPoolEngine) PoolStatus(context.Context, *engine.Pool) (engine.PoolStatus, error) {
	return engine.PoolStatus{}, errNoPools
}
func (noPoolEngine) PoolChanged(context.Context, *engine.Pool) {}
