// Package faucet holds the faucet actor: one per network that has a faucet
// key, it serialises the funding transactions of new accounts.
package faucet

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// Fund asks the faucet to top up Addresses. When the sender used a request,
// the reply is *Funded.
type Fund struct {
	Addresses []common.Address
}

// Funded answers a Fund request.
type Funded struct {
	Hashes []common.Hash
	Err    error
}

// Props returns the props of the actor around f.
func Props(f *engine.Faucet, log *slog.Logger) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &Actor{faucet: f, log: log} })
}

// Actor is the faucet actor.
type Actor struct {
	faucet *engine.Faucet
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
}

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
	case *actor.Stopping:
		a.cancel()
	case *Fund:
		hashes, err := a.faucet.Fund(a.ctx, msg.Addresses)
		if err != nil {
			a.log.Warn("faucet funding failed", "err", err)
		}
		if c.Sender() != nil {
			c.Respond(&Funded{Hashes: hashes, Err: err})
		}
	}
}
