// Package evmtest runs go-ethereum's simulated backend for fast tests,
// served over a unix socket so that the code under test talks JSON-RPC to it
// as it would to a node.
package evmtest

import (
	"context"
	"math/big"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
)

// Sim is a running simulated backend.
type Sim struct {
	// Backend is the simulated backend (Commit, Fork, Rollback, AdjustTime).
	Backend *simulated.Backend
	// IPC is the path of the JSON-RPC socket.
	IPC string

	mu     sync.Mutex
	paused bool
}

// Ether returns n ether in wei.
func Ether(n int64) *big.Int {
	return new(big.Int).Mul(big.NewInt(n), new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil))
}

// Start runs a simulated backend that funds each of funded with 1,000 ETH
// and commits a block every interval (0: only when the test calls Commit).
// It stops at the end of the test.
func Start(t testing.TB, interval time.Duration, funded ...common.Address) *Sim {
	t.Helper()
	alloc := types.GenesisAlloc{}
	for _, a := range funded {
		alloc[a] = types.Account{Balance: Ether(1000)}
	}
	ipc := filepath.Join(t.TempDir(), "sim.ipc")
	backend := simulated.NewBackend(alloc,
		simulated.WithBlockGasLimit(60_000_000),
		func(nodeConf *node.Config, ethConf *ethconfig.Config) {
			nodeConf.IPCPath = ipc
			ethConf.TxPool.AccountSlots = 1024
			ethConf.TxPool.GlobalSlots = 8192
			ethConf.TxPool.AccountQueue = 1024
			ethConf.TxPool.GlobalQueue = 8192
		})
	s := &Sim{Backend: backend, IPC: ipc}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if interval > 0 {
		wg.Go(func() {
			ticker := time.NewTicker(interval)
			defer ticker.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-ticker.C:
					s.mu.Lock()
					if !s.paused {
						backend.Commit()
					}
					s.mu.Unlock()
				}
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if err := backend.Close(); err != nil {
			t.Errorf("close simulated backend: %v", err)
		}
	})
	return s
}

// Pause stops (true) or resumes (false) the automatic commits, so that a
// test can fork or roll back without a block being mined in between.
func (s *Sim) Pause(paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = paused
}

// MineEmpty drops every pending transaction (a node that forgot them) and
// commits an empty block, so that blocks pass without them being mined.
func (s *Sim) MineEmpty() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Backend.Rollback()
	s.Backend.Commit()
}
