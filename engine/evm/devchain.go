package evm

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/catalyst"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/eth/filters"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/event"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/p2p"
	"github.com/ethereum/go-ethereum/rpc"
)

// DevChainID is the chain id of the dev chain (as geth --dev and the
// simulated backend).
const DevChainID = 1337

// DevChainConfig configures StartDevChain.
type DevChainConfig struct {
	// DataDir keeps the chain; required. The layout is geth's
	// (DataDir/geth/chaindata...), so `geth --dev --datadir DataDir` can open
	// it too (while the DevChain is closed).
	DataDir string
	// Period is the time between blocks, a whole number of seconds. Zero
	// mines a block as soon as transactions arrive (as geth --dev.period 0).
	Period time.Duration
	// GasLimit is the block gas limit of a new chain and the miner's gas
	// ceiling (0: DefaultDevGasLimit).
	GasLimit uint64
	// FaucetKey is the account funded at genesis and paid the fees; required.
	// Keep it across restarts (LoadOrCreateKey): a restarted chain keeps its
	// genesis, so a new key would own nothing.
	FaucetKey *ecdsa.PrivateKey
}

// DefaultDevGasLimit is the block gas limit of a dev chain unless configured.
const DefaultDevGasLimit = 60_000_000

// DevPoolAccountSlots is what a dev chain's pool keeps of one account: its
// executable transactions, and as many waiting for a gap. It bounds an
// account's window on the chain, so it is above what one block takes of
// one account (60M gas: 1,229 token transfers to holders): a pool of 1,024
// a sender left one account's burst 1,024 a block, 1.2 × the blocks the
// gas needs.
const DevPoolAccountSlots = 4096

// DefaultDevChainConfig returns a config with a one-second block period and
// the default gas limit; DataDir and FaucetKey are left to the caller.
func DefaultDevChainConfig() DevChainConfig {
	return DevChainConfig{Period: time.Second, GasLimit: DefaultDevGasLimit}
}

// Validate names the first field of cfg out of range: a missing DataDir
// or FaucetKey, a Period that is negative or not a whole number of
// seconds.
func (cfg DevChainConfig) Validate() error {
	if cfg.DataDir == "" {
		return errors.New("dev chain: DataDir is required")
	}
	if cfg.FaucetKey == nil {
		return errors.New("dev chain: FaucetKey is required")
	}
	if cfg.Period < 0 || cfg.Period%time.Second != 0 {
		return fmt.Errorf("dev chain: Period must be zero or a whole number of seconds, got %s", cfg.Period)
	}
	return nil
}

// withDefaults gives a zero GasLimit DefaultDevChainConfig's. (A zero
// Period is not a default: it mines as transactions arrive.)
func (cfg DevChainConfig) withDefaults() DevChainConfig {
	if cfg.GasLimit == 0 {
		cfg.GasLimit = DefaultDevChainConfig().GasLimit
	}
	return cfg
}

// DevChain is an in-process go-ethereum dev chain (node, eth service and
// simulated beacon, assembled as geth --dev --datadir does) whose state
// survives a clean Close and restart on the same DataDir. Every new head is
// synced to the data dir as it is set (headSyncer), so after a hard kill it
// comes back at the head it had, or the one before if the kill came between
// setting a head and syncing it; blocks, receipts and state always agree.
type DevChain struct {
	stack   *node.Node
	client  *Client
	chainID *big.Int
	faucet  common.Address
	syncer  *headSyncer

	closeOnce sync.Once
	closeErr  error
}

// StartDevChain opens or creates the dev chain in cfg.DataDir and starts
// mining. A new chain gets a dev genesis (every fork enabled, chain id 1337)
// that funds the faucet; an existing chain keeps its stored genesis.
func StartDevChain(cfg DevChainConfig) (*DevChain, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	faucet := crypto.PubkeyToAddress(cfg.FaucetKey.PublicKey)

	stack, err := node.New(&node.Config{
		// "geth" gives the data dir geth's layout; a name derived from the
		// executable (the default) would differ between binaries and tests.
		Name:    "geth",
		DataDir: cfg.DataDir,
		// No listener, no discovery, no HTTP, WS or IPC: in-process RPC only.
		P2P: p2p.Config{NoDiscovery: true, MaxPeers: 0, ListenAddr: ""},
	})
	if err != nil {
		return nil, fmt.Errorf("dev chain %s: node: %w", cfg.DataDir, err)
	}
	d, err := startOnNode(stack, cfg, faucet)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("dev chain %s: %w", cfg.DataDir, err), closeNode(stack))
	}
	return d, nil
}

// closeNode closes a node that failed to start; Start already closes one
// whose start-up failed.
func closeNode(stack *node.Node) error {
	if err := stack.Close(); err != nil && !errors.Is(err, node.ErrNodeStopped) {
		return fmt.Errorf("close node: %w", err)
	}
	return nil
}

func startOnNode(stack *node.Node, cfg DevChainConfig, faucet common.Address) (*DevChain, error) {
	genesis, err := devGenesis(stack, cfg.GasLimit, faucet)
	if err != nil {
		return nil, err
	}
	ethCfg := ethconfig.Defaults
	ethCfg.Genesis = genesis
	ethCfg.NetworkId = DevChainID
	ethCfg.SyncMode = ethconfig.FullSync
	ethCfg.Miner.PendingFeeRecipient = faucet
	ethCfg.Miner.GasCeil = cfg.GasLimit
	ethCfg.Miner.GasPrice = big.NewInt(1) // as geth --dev: accept any tip
	// The engine bursts transactions: geth's defaults (16 executable per
	// account, 64 queued) silently drop the excess.
	ethCfg.TxPool.AccountSlots = DevPoolAccountSlots
	ethCfg.TxPool.GlobalSlots = 8 * DevPoolAccountSlots
	ethCfg.TxPool.AccountQueue = DevPoolAccountSlots
	ethCfg.TxPool.GlobalQueue = 4 * DevPoolAccountSlots
	// Crash safety: with the path scheme, state lives in a memory buffer
	// until it fills or the node stops, so a kill -9 leaves a chain without
	// any usable state (seen: "Head state missing", then a node stuck
	// waiting for a state sync that never comes). The hash scheme in archive
	// mode writes every block's state as it is imported; a hard kill then
	// loses at most the newest blocks, which the engine treats as a reorg.
	ethCfg.StateScheme = rawdb.HashScheme
	ethCfg.NoPruning = true
	// Caches sized for an embedded chain rather than a mainnet node.
	ethCfg.DatabaseCache = 32
	ethCfg.TrieCleanCache = 16
	ethCfg.TrieDirtyCache = 16
	ethCfg.SnapshotCache = 16

	backend, err := eth.New(stack, &ethCfg)
	if err != nil {
		return nil, fmt.Errorf("eth service: %w", err)
	}
	chainID := backend.BlockChain().Config().ChainID
	// eth_getLogs, eth_newFilter and log subscriptions, as geth registers them.
	filterSystem := filters.NewFilterSystem(backend.APIBackend, filters.Config{
		LogCacheSize:  ethCfg.FilterLogCacheSize,
		LogQueryLimit: ethCfg.LogQueryLimit,
		RangeLimit:    ethCfg.RangeLimit,
	})
	stack.RegisterAPIs([]rpc.API{{Namespace: "eth", Service: filters.NewFilterAPI(filterSystem)}})

	// Registered before the beacon, so it follows every block mined.
	syncer := newHeadSyncer(backend.BlockChain(), backend.ChainDb())
	stack.RegisterLifecycle(syncer)

	// Period 0 to the beacon: it has no loop of its own. With a period the
	// blockTicker seals; without, the dev API's goroutine mines as
	// transactions arrive (it ends when the beacon stops).
	beacon, err := catalyst.NewSimulatedBeacon(0, faucet, backend)
	if err != nil {
		// The eth service holds files (and locks) that only its Stop
		// releases, and it can only be stopped once started.
		if serr := stack.Start(); serr == nil {
			err = errors.Join(err, closeNode(stack))
		}
		return nil, fmt.Errorf("simulated beacon: %w", err)
	}
	stack.RegisterLifecycle(beacon)
	if cfg.Period == 0 {
		catalyst.RegisterSimulatedBeaconAPIs(stack, beacon)
	} else {
		// Registered after the beacon: started after it, stopped before.
		stack.RegisterLifecycle(newBlockTicker(beacon, cfg.Period))
	}
	if err := stack.Start(); err != nil {
		// The lifecycles after the eth service cannot fail to start, so
		// none was started and the node did not stop them.
		_ = beacon.Stop()
		return nil, fmt.Errorf("start node: %w", err)
	}
	return &DevChain{
		stack:   stack,
		client:  NewClient(stack.Attach()),
		chainID: new(big.Int).Set(chainID),
		faucet:  faucet,
		syncer:  syncer,
	}, nil
}

// blockTicker seals a block every period, on the clock: go-ethereum's
// simulated beacon waits a full period after each seal, so its blocks came
// the period plus the seal's time apart (1.06 to 1.14 s for 1 s blocks of
// 1,229 transfers on 2 busy cores), about a block lost in ten. A
// time.Ticker keeps the cadence; a seal longer than the period skips the
// ticks it overran.
type blockTicker struct {
	beacon sealer
	period time.Duration
	stop   chan struct{}
	done   chan struct{}
}

// sealer seals a block (*catalyst.SimulatedBeacon).
type sealer interface{ Commit() common.Hash }

func newBlockTicker(beacon sealer, period time.Duration) *blockTicker {
	return &blockTicker{beacon: beacon, period: period, stop: make(chan struct{}), done: make(chan struct{})}
}

// Start implements node.Lifecycle: a block at once (as the beacon's own
// loop did), then one each period until Stop.
func (b *blockTicker) Start() error {
	go b.loop() // owned by b: Stop ends it and waits
	return nil
}

func (b *blockTicker) loop() {
	defer close(b.done)
	tick := time.NewTicker(b.period)
	defer tick.Stop()
	b.beacon.Commit()
	for {
		select {
		case <-b.stop:
			return
		case <-tick.C:
			b.beacon.Commit()
		}
	}
}

// Stop implements node.Lifecycle.
func (b *blockTicker) Stop() error {
	close(b.stop)
	<-b.done
	return nil
}

// headSyncer makes every new head of the chain durable against a crash of
// the process (kill -9) as soon as it is set.
//
// go-ethereum writes its pebble database without syncing (pebble.NoSync),
// and pebble then keeps each record in the current 32 KiB block of its
// write-ahead log in the process's memory until a sync is asked for or the
// block fills. A dev chain writes little (an empty block is a few hundred
// bytes), so a kill -9 lost every write of the last seconds, often minutes:
// blocks that RPC clients had seen, with their receipts and state, and the
// head marker. The chain stayed consistent (the log is replayed in order, so
// the head always has its state) but came back far behind what its clients
// had seen; go-ethereum's local-transaction journal, written at once to its
// own file, then put the lost blocks' transactions back in the pool ten
// seconds later, so they were mined again in blocks with other hashes: the
// history looked rewound and replaced while the burst's effects stayed.
//
// Syncing the key-value store after each new head writes the block, its
// receipts, its state (archive mode commits every block's trie before the
// head moves) and the head marker through to the file. What a kill can still
// lose is the block whose head was set but not yet synced, a window of a
// sync's duration; the log's order keeps even that case consistent.
type headSyncer struct {
	chain *core.BlockChain
	db    ethdb.KeyValueSyncer

	sub  event.Subscription
	done chan struct{}

	mu  sync.Mutex
	err error // the first failed sync
}

func newHeadSyncer(chain *core.BlockChain, db ethdb.KeyValueSyncer) *headSyncer {
	return &headSyncer{chain: chain, db: db, done: make(chan struct{})}
}

// Start implements node.Lifecycle: it syncs what the opening wrote (a
// repair may have moved the head) and follows new heads until Stop.
func (h *headSyncer) Start() error {
	heads := make(chan core.ChainHeadEvent, 64)
	h.sub = h.chain.SubscribeChainHeadEvent(heads)
	h.sync()
	go h.loop(heads)
	return nil
}

func (h *headSyncer) loop(heads <-chan core.ChainHeadEvent) {
	defer close(h.done)
	for {
		select {
		case <-heads:
			// One sync covers every head set before it.
			for drained := false; !drained; {
				select {
				case <-heads:
				default:
					drained = true
				}
			}
			h.sync()
		case <-h.sub.Err(): // Unsubscribe in Stop
			return
		}
	}
}

func (h *headSyncer) sync() {
	if err := h.db.SyncKeyValue(); err != nil {
		h.mu.Lock()
		if h.err == nil {
			h.err = fmt.Errorf("sync chain database: %w", err)
		}
		h.mu.Unlock()
	}
}

// Stop implements node.Lifecycle; the eth service, stopped after it,
// persists the rest.
func (h *headSyncer) Stop() error {
	if h.sub == nil { // never started
		return nil
	}
	h.sub.Unsubscribe()
	<-h.done
	return h.Err()
}

// Err returns the first failed sync, nil if none.
func (h *headSyncer) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// devGenesis returns the dev genesis for a new data dir, and nil if the data
// dir already holds a chain: eth.New then reuses the stored genesis (as geth
// --dev --datadir does), after checking that it is a dev chain whose genesis
// funds faucet. The checks come before eth.New because the eth service cannot
// be shut down cleanly before it has started.
func devGenesis(stack *node.Node, gasLimit uint64, faucet common.Address) (*core.Genesis, error) {
	if rawdb.PreexistingDatabase(stack.ResolvePath("chaindata")) == "" {
		return core.DeveloperGenesisBlock(gasLimit, &faucet), nil
	}
	db, err := stack.OpenDatabaseWithOptions("chaindata", node.DatabaseOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("open chain database: %w", err)
	}
	var stored *core.Genesis
	if rawdb.ReadCanonicalHash(db, 0) != (common.Hash{}) {
		stored, err = core.ReadGenesis(db)
	}
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close chain database: %w", cerr)
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("stored genesis: %w", err)
	case stored == nil: // database created, genesis never written
		return core.DeveloperGenesisBlock(gasLimit, &faucet), nil
	case stored.Config.ChainID == nil || stored.Config.ChainID.Int64() != DevChainID:
		return nil, fmt.Errorf("data dir holds chain id %v, not a dev chain (%d)", stored.Config.ChainID, DevChainID)
	case stored.Config.TerminalTotalDifficulty == nil || stored.Config.TerminalTotalDifficulty.Sign() != 0:
		return nil, errors.New("data dir holds a chain that is not merged at genesis, not a dev chain")
	}
	if acct, ok := stored.Alloc[faucet]; !ok || acct.Balance == nil || acct.Balance.Sign() == 0 {
		return nil, fmt.Errorf("the stored genesis does not fund faucet %s: pass the key the chain was created with", faucet)
	}
	return nil, nil
}

// Client returns the in-process client of the chain. The DevChain owns it:
// it is closed by Close and must not be closed by the caller.
func (d *DevChain) Client() *Client { return d.client }

// ChainID returns the chain id (DevChainID).
func (d *DevChain) ChainID() *big.Int { return new(big.Int).Set(d.chainID) }

// Faucet returns the address funded at genesis, which receives the fees.
func (d *DevChain) Faucet() common.Address { return d.faucet }

// Close stops mining, closes the client and shuts the node down, persisting
// the state so that StartDevChain on the same DataDir resumes at this head.
// Calls after the first return the first result.
func (d *DevChain) Close() error {
	d.closeOnce.Do(func() {
		d.client.Close()
		if err := d.stack.Close(); err != nil {
			d.closeErr = fmt.Errorf("dev chain: close: %w", err)
		}
	})
	return d.closeErr
}
