package faucet

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/actors/clusterpb"
	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
)

// GrainKind is the cluster kind of faucet grains.
const GrainKind = "faucet"

// GrainProps returns the props of the faucet grain (cluster mode): its
// identity is a network name, so the cluster runs one faucet per network
// and its funding transactions never race for the faucet's nonce.
func GrainProps(faucets map[string]*engine.Faucet, log *slog.Logger) *actor.Props {
	return lifecycle.Props(func() actor.Actor { return &grain{faucets: faucets, log: log} })
}

type grain struct {
	faucets map[string]*engine.Faucet
	log     *slog.Logger
	network string
}

// Receive implements actor.Actor.
func (g *grain) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *cluster.ClusterInit:
		g.network = msg.Identity.Identity
	case *clusterpb.Fund:
		res := &clusterpb.Funded{}
		f, ok := g.faucets[g.network]
		if !ok {
			res.Error = "network " + g.network + " has no faucet on this node"
		} else {
			addrs := make([]common.Address, 0, len(msg.GetAddresses()))
			for _, a := range msg.GetAddresses() {
				if common.IsHexAddress(a) {
					addrs = append(addrs, common.HexToAddress(a))
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			hashes, err := f.Fund(ctx, addrs)
			cancel()
			for _, h := range hashes {
				res.Hashes = append(res.Hashes, h.Hex())
			}
			if err != nil {
				g.log.Warn("faucet funding failed", "network", g.network, "err", err)
				res.Error = err.Error()
			}
		}
		if c.Sender() != nil {
			c.Respond(res)
		}
	}
}
