package main

import (
	"context"

	"github.com/txengine/txengine/actors"
	"github.com/txengine/txengine/engine"
	apihttp "github.com/txengine/txengine/http"
)

// Until the branch h-pkeeper merges (actors.System balances pools), the
// API is wired with an engine whose pool operations answer unavailable.
// Once it merges, apiEngine returns its argument and this file goes.

// errNoPools is the answer of a pool operation that this build cannot do.
var errNoPools = &engine.Error{Code: engine.CodeUnavailable, Message: "sender pools are not available in this build"}

// apiEngine returns sys as the API's engine.
func apiEngine(sys *actors.System) apihttp.Engine {
	if e, ok := any(sys).(apihttp.Engine); ok {
		return e
	}
	return noPoolEngine{sys}
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
