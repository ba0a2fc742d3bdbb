package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/txengine/txengine/actors/watcher"
	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm"
)

// devNetwork is the name of the embedded chain's network.
const devNetwork = "dev"

// dialTimeout bounds dialling a node and reading its chain id at start.
const dialTimeout = 15 * time.Second

// networks are the running networks with their faucets.
type networks struct {
	byName  map[string]*engine.Network
	faucets map[string]*engine.Faucet
	// embedded is true when the network is the in-process dev chain.
	embedded bool
	closers  []func() error
}

// names returns the network names, sorted.
func (n *networks) names() []string {
	out := make([]string, 0, len(n.byName))
	for name := range n.byName {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Close closes the connections and the embedded chain, in reverse order.
func (n *networks) Close() error {
	var errs []error
	for i := len(n.closers) - 1; i >= 0; i-- {
		errs = append(errs, n.closers[i]())
	}
	return errors.Join(errs...)
}

// newHeads returns the head source of a network with a WebSocket URL.
func newHeads(log *slog.Logger) func(*engine.Network) watcher.Heads {
	return func(net *engine.Network) watcher.Heads {
		if net.WSURL == "" {
			return nil
		}
		return evm.NewHeadSource(evm.HeadSourceConfig{URL: net.WSURL, Log: log.With("network", net.Name)})
	}
}

// startNetworks connects to the configured networks, or starts the embedded
// dev chain as network "dev" when none is configured; log gets the chain
// clients' warnings (a node that refuses JSON-RPC batches).
func startNetworks(ctx context.Context, cfg config.Config, log *slog.Logger) (*networks, error) {
	if len(cfg.Networks) == 0 {
		return startDev(cfg)
	}
	nets := &networks{byName: map[string]*engine.Network{}, faucets: map[string]*engine.Faucet{}}
	for _, nc := range cfg.Networks {
		net, closeFn, err := openNetwork(ctx, nc, cfg.Engine, log)
		if err != nil {
			return nil, errors.Join(err, nets.Close())
		}
		nets.closers = append(nets.closers, closeFn)
		nets.byName[nc.Name] = net
		key, err := nc.Faucet()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("network %s: %w", nc.Name, err), nets.Close())
		}
		if key != nil {
			nets.faucets[nc.Name] = engine.NewFaucet(net, key, nc.FaucetAmount())
		}
	}
	return nets, nil
}

// openNetwork dials the node of nc and checks that it serves nc.ChainID.
func openNetwork(ctx context.Context, nc config.Network, ec config.Engine, log *slog.Logger) (*engine.Network, func() error, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	client, err := evm.DialNetwork(dctx, nc.HTTPURL, nc.WSURL, evm.WithCallTimeout(nc.RPCTimeout),
		evm.WithLogger(log.With("network", nc.Name)))
	if err != nil {
		return nil, nil, fmt.Errorf("network %s: %w", nc.Name, err)
	}
	id, err := client.ChainID(dctx)
	if err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("network %s: read chain id: %w", nc.Name, err)
	}
	if !id.IsUint64() || id.Uint64() != nc.ChainID {
		client.Close()
		return nil, nil, fmt.Errorf("network %s: the node's chain id is %s but chainId %d is configured", nc.Name, id, nc.ChainID)
	}
	net := &engine.Network{
		Name: nc.Name, ChainID: id, Confirmations: nc.Confirmations,
		InFlight: nc.Window(ec.InFlight), MinInFlight: ec.MinInFlight, MaxInFlight: nc.MaxWindow(ec.MaxInFlight),
		GasMarginPercent: nc.Margin(ec.GasMarginPercent),
		PollInterval:     nc.PollInterval, MaxFeePerGasCap: nc.MaxFeeCap(), WSURL: nc.WSURL,
		RebroadcastBlocks: nc.RebroadcastBlocks, ReplaceBlocks: nc.ReplaceBlocks, FeeBumpPercent: nc.FeeBumpPercent,
		DoctorBlocks: nc.DoctorBlocks,
		SystemNFTs:   nc.SystemNFTAddresses(), Chain: client, FeeQuoteTTL: feeQuoteTTL,
	}
	return net, func() error { client.Close(); return nil }, nil
}

// feeQuoteTTL is how long one fee quote serves every account of a network
// (engine.Network.FeeQuoteTTL): well within a block, so fees follow the base
// fee, while a crowd of accounts sending once asks the node once.
const feeQuoteTTL = 500 * time.Millisecond

// startDev starts the embedded dev chain in the data dir as network "dev",
// with its faucet.
func startDev(cfg config.Config) (*networks, error) {
	faucetKey, err := evm.LoadOrCreateKey(filepath.Join(cfg.DataDir, "faucet.key"))
	if err != nil {
		return nil, fmt.Errorf("faucet key: %w", err)
	}
	chain, err := evm.StartDevChain(evm.DevChainConfig{
		DataDir: filepath.Join(cfg.DataDir, "chain"), Period: cfg.Dev.BlockPeriod, FaucetKey: faucetKey,
	})
	if err != nil {
		return nil, fmt.Errorf("start dev chain: %w", err)
	}
	poll := max(cfg.Dev.BlockPeriod/4, 50*time.Millisecond)
	dev := &engine.Network{
		Name: devNetwork, ChainID: chain.ChainID(), Confirmations: 0,
		InFlight: devWindow(cfg), MinInFlight: cfg.Engine.MinInFlight, MaxInFlight: min(cfg.Engine.MaxInFlight, evm.DevPoolAccountSlots),
		GasMarginPercent: cfg.Engine.GasMarginPercent,
		PollInterval:     poll, Chain: chain.Client(), FeeQuoteTTL: feeQuoteTTL,
	}
	return &networks{
		byName:   map[string]*engine.Network{devNetwork: dev},
		faucets:  map[string]*engine.Faucet{devNetwork: engine.NewFaucet(dev, faucetKey, cfg.Dev.FaucetAmount())},
		embedded: true,
		closers:  []func() error{chain.Close},
	}, nil
}

// devWindow is the in-flight window of the embedded chain: dev.inFlight,
// or engine.inFlight when that is 0.
func devWindow(cfg config.Config) int {
	if cfg.Dev.InFlight > 0 {
		return cfg.Dev.InFlight
	}
	return cfg.Engine.InFlight
}
