package actors

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/actors/account"
	"github.com/txengine/txengine/actors/faucet"
)

// placement is where the work that one owner must do for the whole system
// runs: an account's submission (nonces) and a network's faucet. In
// single-node mode, actors of this process (localPlacement); in cluster
// mode, grains, one per account and per network in the whole cluster
// (clusterPlacement, cluster.go).
type placement interface {
	// wake asks the account's submitter to look for work.
	wake(accountID, network string, msg *account.Wake)
	// fund asks the faucet of network to top up addr, without waiting.
	fund(network string, addr common.Address)
	// fundAndWait asks the faucet of network to top up addrs and waits
	// for the funding transactions to be sent.
	fundAndWait(network string, addrs []common.Address, timeout time.Duration) ([]common.Hash, error)
}

// localPlacement runs submission in the account actors and funding in the
// faucet actors of this process.
type localPlacement struct{ s *System }

func (l localPlacement) wake(accountID, network string, msg *account.Wake) {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	pid, err := s.pidLocked(accountID, network)
	if err != nil {
		return
	}
	s.sys.Root.Send(pid, msg)
}

func (l localPlacement) fund(network string, addr common.Address) {
	if pid, ok := l.s.faucets[network]; ok {
		l.s.sys.Root.Send(pid, &faucet.Fund{Addresses: []common.Address{addr}})
	}
}

func (l localPlacement) fundAndWait(network string, addrs []common.Address, timeout time.Duration) ([]common.Hash, error) {
	pid, ok := l.s.faucets[network]
	if !ok {
		return nil, fmt.Errorf("network %q has no faucet", network)
	}
	res, err := l.s.sys.Root.RequestFuture(pid, &faucet.Fund{Addresses: addrs}, timeout).Result()
	if err != nil {
		return nil, fmt.Errorf("faucet of %s: %w", network, err)
	}
	f := res.(*faucet.Funded)
	return f.Hashes, f.Err
}

// values returns the PIDs of m.
func values(m map[string]*actor.PID) []*actor.PID {
	out := make([]*actor.PID, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
