package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"math/rand"
	"os"
	"path/filepath"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/persistence/sqlite"
)

// Config is one run of the simulation.
type Config struct {
	Seed int64
	// Dir is where the run's database file goes (t.TempDir()).
	Dir string
	// Template, when set, is a store file with the migrations applied,
	// copied as the run's (a fresh store costs its migrations otherwise).
	Template string
	// Steps is the length of the faulty phase; QuietBlocks bounds, in
	// blocks, how long the quiet phase that follows may take for every
	// accepted transaction to end (liveness).
	Steps       int
	QuietBlocks int
	// Disabled are fault kinds left out of the run, each with why (a known
	// finding not fixed yet).
	Disabled map[string]string
	// TightPool makes the node refuse as nonce too high any transaction
	// beyond its pool's slots above the chain's nonce (as Hardhat's
	// automine refuses any gap); otherwise it queues up to 64 ahead as geth.
	TightPool bool
	// Log receives the engine's log (nil: discarded).
	Log *slog.Logger
}

// Result is what a run did and found.
type Result struct {
	Seed       int64
	Faults     map[string]int
	Violations []string
	// Accepted, Completed, Failed count the transactions stored.
	Accepted, Completed, Failed int
	// Blocks is the chain's head at the end; QuietBlocks how many blocks
	// the quiet phase took until every transaction ended.
	Blocks, QuietBlocks uint64
	Restarts            int
	// Head is the hash of the chain's head at the end: two runs of a seed
	// end on the same chain.
	Head common.Hash
}

const (
	// maxInFlight bounds the accounts' windows: below the 64 a geth pool
	// queues ahead of the chain's nonce.
	maxInFlight = 32
	networkName = "sim"
	tokensEach  = 1_000
)

// account is one of the run's accounts with its key.
type account struct {
	acct *engine.Account
	key  *keyPair
}

// world is one run: the model chain and its node, the store, the fake
// clock, and the engine's objects of the current incarnation.
type world struct {
	cfg    Config
	rng    *rand.Rand
	faults *Faults
	chain  *Chain
	node   *Node
	raw    *sqlite.Store
	store  *Store
	clock  *fakeClock
	log    *slog.Logger
	owner  string
	accts  []*account
	conf   uint64
	// The engine of the current incarnation (rebuilt on a crash).
	net      *engine.Network
	senders  map[string]*engine.Sender
	follower *engine.Follower
	restarts int
	// acked are the transactions whose acceptance was answered (202);
	// tried every transaction ever offered to the store.
	acked map[string]bool
	tried []string
	memo  uint64
}

// fakeClock is the simulation's time: it moves when the loop says so.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// Run runs the simulation of cfg and returns what it found.
func Run(ctx context.Context, cfg Config) (Result, error) {
	w, err := newWorld(ctx, cfg)
	if err != nil {
		return Result{Seed: cfg.Seed}, err
	}
	defer w.raw.Close()
	for step := 0; step < cfg.Steps; step++ {
		w.clock.now = w.clock.now.Add(time.Second)
		w.guard(ctx, func() { w.step(ctx) })
	}
	w.faults.Off = true
	w.restart(ctx)
	quiet := w.quiet(ctx)
	head, _ := w.chain.BlockHash(w.chain.Head())
	res := Result{Seed: cfg.Seed, Faults: w.faults.Counts(), Blocks: w.chain.Head(), QuietBlocks: quiet, Restarts: w.restarts, Head: head}
	if err := w.check(ctx, &res); err != nil {
		return res, err
	}
	return res, nil
}

func newWorld(ctx context.Context, cfg Config) (*world, error) {
	rng := rand.New(rand.NewSource(cfg.Seed))
	path := filepath.Join(cfg.Dir, fmt.Sprintf("sim-%d.db", cfg.Seed))
	if cfg.Template != "" {
		if err := copyFile(cfg.Template, path); err != nil {
			return nil, err
		}
	}
	raw, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := &world{
		cfg: cfg, rng: rng, faults: newFaults(rng, cfg.Disabled), raw: raw, log: log,
		clock: &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		acked: map[string]bool{}, conf: uint64(rng.Intn(3)),
	}
	w.store = &Store{s: raw, faults: w.faults, log: log}
	if err := w.createAccounts(ctx, 2+rng.Intn(3)); err != nil {
		raw.Close()
		return nil, err
	}
	holders := make([]common.Address, len(w.accts))
	for i, a := range w.accts {
		holders[i] = a.key.addr
	}
	slots := 8 + rng.Intn(24)
	gapLimit := uint64(64)
	if cfg.TightPool {
		gapLimit = uint64(slots)
	}
	w.chain = NewChain(rng, holders, tokensEach, slots, gapLimit)
	w.chain.keepForeign = !w.faults.Enabled(FaultReorgDropsForeign)
	w.node = &Node{c: w.chain, faults: w.faults, log: log, refuseSend: map[uint64]bool{}, refuseEstimate: map[uint64]bool{}, strictFees: strictFees(cfg.Seed)}
	w.restart(ctx)
	// The watcher's first poll, at start as the service does, without
	// faults: its cursor starts at the head, below which nothing of ours
	// can be. (A first poll that fails while accounts send lets a
	// transaction be mined below the cursor the watcher then starts at,
	// outside its reorg detection: a limit of a network's first start,
	// left out; see docs/simulation.md.)
	w.faults.Off = true
	w.poll(ctx)
	w.faults.Off = false
	return w, nil
}

// strictFees decides, from the seed alone (no draw: the rng's sequence,
// and so the runs of other seeds, stay as they were), whether the node
// refuses fee caps below the base fee: one seed in three.
func strictFees(seed int64) bool { return seed%3 == 0 }

// createAccounts stores a user and n accounts (keys from the rng).
func (w *world) createAccounts(ctx context.Context, n int) error {
	u := &engine.User{ID: w.newID(), CallbackSecret: []byte("sim"), Created: w.clock.Now()}
	if err := w.raw.CreateUser(ctx, u, nil, nil); err != nil {
		return fmt.Errorf("create user: %w", err)
	}
	w.owner = u.ID
	for i := 0; i < n; i++ {
		key := newKey(w.rng)
		a := &engine.Account{ID: w.newID(), Owner: u.ID, Address: key.addr, EncryptedKey: []byte("sim"), Created: w.clock.Now(), Default: i == 0}
		if err := w.raw.CreateAccount(ctx, a); err != nil {
			return fmt.Errorf("create account: %w", err)
		}
		w.accts = append(w.accts, &account{acct: a, key: key})
	}
	return nil
}

// newID is a UUID from the run's rng.
func (w *world) newID() string {
	id, err := uuid.NewRandomFromReader(w.rng)
	if err != nil {
		panic(err) // math/rand's Read never fails
	}
	return id.String()
}

// restart drops the engine's in-memory objects and builds them again from
// what the store holds, as a process that starts does.
func (w *world) restart(ctx context.Context) {
	w.restarts++
	w.net = &engine.Network{
		Name: networkName, ChainID: big.NewInt(chainID), Confirmations: w.conf,
		GasMarginPercent: 20, MaxInFlight: maxInFlight, MaxFeePerGasCap: big.NewInt(100 * gwei), Chain: w.node,
	}
	w.follower = engine.NewFollower(w.net, w.store, w.clock, w.log)
	w.senders = map[string]*engine.Sender{}
	for _, a := range w.accts {
		s := engine.NewSender(a.acct, w.net, w.store, w, w.clock, w.log)
		w.senders[a.acct.ID] = s
		w.guard(ctx, func() { _ = s.Sync(ctx) })
	}
}

// SignTx implements engine.Signer with the accounts' keys.
func (w *world) SignTx(_ context.Context, key keystore.Key, tx *types.Transaction, id *big.Int) (*types.Transaction, error) {
	for _, a := range w.accts {
		if a.acct.ID == key.AccountID {
			return types.SignTx(tx, types.LatestSignerForChainID(id), a.key.priv)
		}
	}
	return nil, fmt.Errorf("sim: no key for account %s", key.AccountID)
}

// guard runs fn; a crash inside it (a panic with crashed) restarts the
// engine, any other panic goes on.
func (w *world) guard(ctx context.Context, fn func()) {
	crash := func() (c bool) {
		defer func() {
			if r := recover(); r != nil {
				at, ok := r.(crashed)
				if !ok {
					panic(r)
				}
				w.log.Debug("sim: crash", "in", at.where)
				c = true
			}
		}()
		fn()
		return false
	}()
	if crash {
		w.restart(ctx)
	}
}

// recipient is the recipient of a transfer: one of a few addresses.
func (w *world) recipient() common.Address {
	return common.BigToAddress(big.NewInt(int64(0x1000 + w.rng.Intn(6))))
}

// copyFile copies the file at from to to.
func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("read template store: %w", err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		return fmt.Errorf("copy template store: %w", err)
	}
	return nil
}

// NewTemplate creates at path an empty store with the migrations applied,
// for Config.Template.
func NewTemplate(ctx context.Context, path string) error {
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		return fmt.Errorf("template store: %w", err)
	}
	return s.Close()
}
