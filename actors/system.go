// Package actors wires the protoactor actors of txengine (account actors,
// network watchers, faucets, the callback dispatcher) behind a small
// facade, so that http/ never sees a PID.
package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/actors/account"
	"github.com/txengine/txengine/actors/callbacks"
	"github.com/txengine/txengine/actors/faucet"
	"github.com/txengine/txengine/actors/indexer"
	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/actors/watcher"
	"github.com/txengine/txengine/engine"
)

// Store is what the actors need of the store.
type Store interface {
	account.Store
	engine.FollowerStore
	engine.FencedFollowerStore
	engine.IndexerStore
	engine.DispatcherStore
	engine.SubscriptionProcessorStore
	engine.PoolStore
	PendingAccounts(ctx context.Context, network string) ([]string, error)
	// ListTransactions serves the pool keepers (a treasury's disperser).
	ListTransactions(ctx context.Context, f engine.TxFilter) ([]*engine.Transaction, *engine.TxCursor, error)
}

// Config configures the actor system.
type Config struct {
	Store    Store
	Signer   engine.Signer
	Clock    engine.Clock
	Log      *slog.Logger
	Networks map[string]*engine.Network
	// Faucets are the faucets of the networks that have one.
	Faucets map[string]*engine.Faucet
	// NewHeads returns the head source of a network (nil: the watcher
	// only polls); nil polls every network.
	NewHeads func(net *engine.Network) watcher.Heads
	// IdleAccount is how long an idle account actor lives (passivation).
	IdleAccount time.Duration
	// MaxBatch bounds the rows of one group commit.
	MaxBatch int
	// SubmitTimeout bounds the wait for an account actor's group commit.
	SubmitTimeout time.Duration
	// CheckInFlight is how often an account actor with transactions in
	// flight looks for stuck ones (replacement, re-broadcast).
	CheckInFlight time.Duration
	// Metrics receives the measurements of account actors and watchers;
	// nil discards them.
	Metrics engine.Metrics
	// Callbacks configures the callback dispatcher; its Dispatcher's
	// Store, Clock and Log are taken from this Config.
	Callbacks callbacks.Config
	// Cluster, when set, runs this node as a member of a cluster
	// (actors/cluster.go); nil is single-node mode.
	Cluster *ClusterConfig
	// PoolEvery and PoolLowWaterTxs tune the pool keepers (0: defaults).
	PoolEvery       time.Duration
	PoolLowWaterTxs int
}

// System is the running actor system and the facade the HTTP layer uses.
type System struct {
	cfg   Config
	sys   *actor.ActorSystem
	acfg  account.Config
	conds *engine.Conditions
	// commits merges the group commits of all account actors (one writer).
	commits *engine.CommitQueue
	// stages merge the pumps of all account submitters, per network (none
	// when the store cannot merge them).
	stages map[string]*engine.SubmitStage
	// nonces holds the nonce health of this node's stuck accounts (nonces.go).
	nonces *engine.NonceBook

	mu       sync.Mutex
	accounts map[string]*actor.PID
	watchers map[string]*actor.PID
	indexers map[string]*actor.PID
	// subscribers are the subscriptions actors per network (single-node
	// mode; in cluster mode the network leaders run them).
	subscribers map[string]*actor.PID
	faucets     map[string]*actor.PID
	// leaderKeepers are the pool keepers this node runs as a network's
	// leader (cluster mode), by network; guarded by mu, made on first use.
	leaderKeepers map[string]*engine.PoolKeeper
	// Pools (actors/pools.go): set at Start, only read after.
	balancer   *engine.PoolBalancer
	keepers    map[string]*engine.PoolKeeper
	keeperPIDs map[string]*actor.PID
	closed     bool
	stop       sync.Once

	// dispatcher is the callback dispatcher actor.
	dispatcher *actor.PID

	// place is where account submission and faucets run: this process's
	// actors, or the cluster's grains.
	place placement

	// Cluster mode only: the cluster, this node's grains, the network lease
	// candidates, the outboxes and the revocations of API tokens (tokens.go).
	cl       *cluster.Cluster
	grains   map[string]*actor.PID
	leaders  []*actor.PID
	requests *requestQueue
	wakes    *wakeOutbox
	topoSub  *eventstream.Subscription
	tokens   *tokenRevocations
}

// Start starts the watchers and faucets, and the account actors of every
// account that has work left from a previous run (recovery).
func Start(ctx context.Context, cfg Config) (*System, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	log := cfg.Log
	s := &System{
		cfg: cfg,
		sys: actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
			return log.With("lib", "protoactor")
		})),
		accounts:    map[string]*actor.PID{},
		watchers:    map[string]*actor.PID{},
		indexers:    map[string]*actor.PID{},
		subscribers: map[string]*actor.PID{},
		faucets:     map[string]*actor.PID{},
		grains:      map[string]*actor.PID{},
		nonces:      engine.NewNonceBook(),
		keepers:     map[string]*engine.PoolKeeper{},
		keeperPIDs:  map[string]*actor.PID{},
	}
	s.startPools()
	s.conds = engine.NewConditions(cfg.Store, cfg.Clock, cfg.Log)
	s.commits = engine.NewCommitQueue(cfg.Store, cfg.MaxBatch)
	if ss, ok := cfg.Store.(engine.StageStore); ok {
		s.stages = make(map[string]*engine.SubmitStage, len(cfg.Networks))
		for name, net := range cfg.Networks {
			s.stages[name] = engine.NewSubmitStage(net, ss)
			if sw, ok := cfg.Store.(engine.SingleWriter); ok && sw.SingleWriter() {
				s.stages[name].YieldTo(s.commits, engine.YieldMax)
			}
		}
	}
	s.acfg = account.Config{
		Store: cfg.Store, Commits: s.commits, Stages: s.stages, Signer: cfg.Signer, Clock: cfg.Clock, Log: cfg.Log, Registry: s,
		Idle: cfg.IdleAccount, MaxBatch: cfg.MaxBatch, RetryAfter: 2 * time.Second, CheckEvery: cfg.CheckInFlight,
		Conditions: s.conds, Metrics: cfg.Metrics, Nonces: s.nonces,
	}
	ccfg := cfg.Callbacks
	ccfg.Dispatcher.Store, ccfg.Dispatcher.Clock, ccfg.Dispatcher.Log = cfg.Store, cfg.Clock, cfg.Log
	if p, ok := cfg.Store.(engine.OutboxPruner); ok && ccfg.Pruner == nil {
		ccfg.Pruner = p // both stores are: ended callbacks and old deliveries are pruned
	}
	if cfg.Metrics != nil {
		ccfg.Dispatcher.Outcome = cfg.Metrics.CallbackOutcome
	}
	if cfg.Cluster != nil {
		s.place = clusterPlacement{s}
		return s, s.startClusterMode(cfg.Cluster, ccfg)
	}
	s.place = localPlacement{s}
	s.dispatcher = s.sys.Root.Spawn(lifecycle.Guarded(callbacks.Props(ccfg)))
	for name, f := range cfg.Faucets {
		s.faucets[name] = s.sys.Root.Spawn(lifecycle.Guarded(faucet.Props(f, cfg.Log)))
	}
	for name, net := range cfg.Networks {
		if err := s.followNetwork(ctx, name, net); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// followNetwork starts, in single-node mode, the indexer, the
// subscriptions actor and the watcher of network name, and wakes the
// accounts with pending work on it.
func (s *System) followNetwork(ctx context.Context, name string, net *engine.Network) error {
	cfg := s.cfg
	// Single-node mode: the zero fence (nothing checked), outcomes the
	// store skipped are logged.
	store := newFollowerStore(cfg.Store, engine.NetworkFence{Network: name}, cfg.Log, nil)
	wcfg := watcher.Config{Network: net, Store: store, Clock: cfg.Clock, Log: cfg.Log, Waker: s, Conditions: s.conds, Metrics: cfg.Metrics}
	if cfg.NewHeads != nil {
		wcfg.NewHeads = func() watcher.Heads { return cfg.NewHeads(net) }
	}
	if err := s.startIndexer(net); err != nil {
		return err
	}
	props, err := s.subscriptionProps(net, engine.NetworkFence{Network: name})
	if err != nil {
		return err
	}
	subs := s.sys.Root.Spawn(lifecycle.Guarded(props))
	s.subscribers[name] = subs
	wcfg.OnHead = s.newHeadTo(subs, s.startKeeper(net))
	s.watchers[name] = s.sys.Root.Spawn(lifecycle.Guarded(watcher.Props(wcfg)))
	ids, err := cfg.Store.PendingAccounts(ctx, name)
	if err != nil {
		return fmt.Errorf("recover accounts of %s: %w", name, err)
	}
	for _, id := range ids {
		s.Wake(id, name, false)
	}
	return nil
}

// startClusterMode starts a cluster member: the callback dispatcher (it
// claims outbox rows, so every node may run one), the cluster with the
// account and faucet grains, and one network lease candidate per network
// (the holder runs the watcher, the subscriptions actor and the indexer).
func (s *System) startClusterMode(cc *ClusterConfig, ccfg callbacks.Config) error {
	ccfg.Dispatcher.Node = cc.Node
	s.dispatcher = s.sys.Root.Spawn(lifecycle.Guarded(callbacks.Props(ccfg)))
	s.requests = newRequestQueue(32, s.cfg.Log)
	s.acfg.WakeSubmitter = func(accountID, network string, msg *account.Wake) {
		s.place.wake(accountID, network, msg)
	}
	if err := s.startCluster(cc); err != nil {
		s.Close()
		return err
	}
	for _, net := range s.cfg.Networks {
		// The leader gives each watcher it starts the fence of its tenure.
		wcfg := watcher.Config{Network: net, Clock: s.cfg.Clock, Log: s.cfg.Log, Waker: s, Conditions: s.conds, Metrics: s.cfg.Metrics}
		if s.cfg.NewHeads != nil {
			wcfg.NewHeads = func() watcher.Heads { return s.cfg.NewHeads(net) }
		}
		s.leaders = append(s.leaders, s.sys.Root.Spawn(leaderProps(s, cc, net, wcfg)))
	}
	leaders := s.leaders
	s.topoSub = s.sys.EventStream.Subscribe(func(ev any) {
		if _, ok := ev.(*cluster.ClusterTopology); ok {
			for _, pid := range leaders {
				s.sys.Root.Send(pid, topologyChanged{})
			}
		}
	})
	return nil
}

// startIndexer spawns the transfer indexer of net.
func (s *System) startIndexer(net *engine.Network) error {
	props, err := indexer.Props(indexer.Config{Network: net, Store: s.cfg.Store, Log: s.cfg.Log})
	if err != nil {
		return fmt.Errorf("start indexer: %w", err)
	}
	s.indexers[net.Name] = s.sys.Root.Spawn(lifecycle.Guarded(props))
	return nil
}

// Submit hands tx to its account actor, which stores it durably (group
// commit) before answering. An error means nothing was stored: when the
// wait ends (SubmitTimeout or ctx's deadline) before the answer, the
// transaction is abandoned if it still waits for its commit, and is then
// never written; if a commit already holds it, Submit waits for that
// commit's outcome and answers it, late rather than wrong.
func (s *System) Submit(ctx context.Context, tx *engine.Transaction) (*engine.Transaction, error) {
	if _, ok := s.cfg.Networks[tx.Network]; !ok {
		return nil, engine.Errorf(engine.CodeUnavailable, "", "network %q is not configured", tx.Network)
	}
	timeout := s.cfg.SubmitTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	claim := engine.NewClaim()
	for attempt := 0; attempt < 3; attempt++ {
		fut, err := s.request(tx.AccountID, tx.Network, &account.Submit{Tx: tx, Claim: claim}, timeout)
		if err != nil {
			return nil, err
		}
		res, err := fut.Result()
		if errors.Is(err, actor.ErrDeadLetter) {
			continue // the actor stopped meanwhile; spawn a new one
		}
		if err != nil {
			return s.awaitCommit(tx, claim)
		}
		acc := res.(*account.Accepted)
		if acc.Err != nil {
			return nil, acc.Err
		}
		return acc.Tx, nil
	}
	if claim.Abandon() {
		return nil, engine.Errorf(engine.CodeUnavailable, "", "account actor unavailable")
	}
	return s.awaitCommit(tx, claim)
}

// maxCommitWait bounds the wait for the outcome of a commit that holds a
// transaction whose Submit ran out of time. The commit queue settles every
// commit well within it (its own timeout, then the re-read of an unknown
// outcome); it is a guard against an account actor that died mid-commit.
const maxCommitWait = 3 * time.Minute

// awaitCommit ends a Submit whose wait for the account actor ran out: the
// transaction is abandoned (never written) if it still waits for its
// commit; otherwise a commit holds it, and its outcome is the answer.
func (s *System) awaitCommit(tx *engine.Transaction, claim *engine.Claim) (*engine.Transaction, error) {
	if claim.Abandon() {
		return nil, engine.ErrAbandoned
	}
	select {
	case <-claim.Done():
	case <-time.After(maxCommitWait):
		s.cfg.Log.Error("commit outcome not known in time", "tx", tx.ID, "waited", maxCommitWait)
		return nil, engine.Errorf(engine.CodeInternal, "", "the outcome of transaction %s is unknown", tx.ID)
	}
	if err := claim.Err(); err != nil {
		return nil, err
	}
	return tx, nil
}

// request sends msg to the account actor, spawning it when needed. The send
// happens under the registry lock, so a passivating actor either gets the
// message before its passivate or is no longer registered.
func (s *System) request(accountID, network string, msg any, timeout time.Duration) (*actor.Future, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pid, err := s.pidLocked(accountID, network)
	if err != nil {
		return nil, err
	}
	return s.sys.Root.RequestFuture(pid, msg, timeout), nil
}

func (s *System) pidLocked(accountID, network string) (*actor.PID, error) {
	if s.closed {
		return nil, engine.Errorf(engine.CodeUnavailable, "", "shutting down")
	}
	key := account.Key(accountID, network)
	if pid, ok := s.accounts[key]; ok {
		return pid, nil
	}
	net, ok := s.cfg.Networks[network]
	if !ok {
		return nil, engine.Errorf(engine.CodeUnavailable, "", "network %q is not configured", network)
	}
	// A unique name: a passivating incarnation may still be stopping.
	pid := s.sys.Root.SpawnPrefix(lifecycle.Guarded(account.Props(s.acfg, accountID, net)), "account/"+key+"/")
	s.accounts[key] = pid
	return pid, nil
}

// Wake implements watcher.Waker and account.Registry: it wakes (or starts)
// an account actor.
func (s *System) Wake(accountID, network string, resync bool) {
	s.wake(accountID, network, &account.Wake{Resync: resync})
}

// wake sends msg to the account's submitter, wherever it is placed.
func (s *System) wake(accountID, network string, msg *account.Wake) {
	s.place.wake(accountID, network, msg)
}

// CheckInFlight wakes the account's actor to look at its in-flight
// transactions now (an operator abandoned one: its nonce is filled). In
// cluster mode the grain is woken as usual and looks at its next check
// (within the network's rebroadcastBlocks blocks).
func (s *System) CheckInFlight(accountID, network string) {
	s.wake(accountID, network, &account.Wake{Check: true})
}

// Release implements account.Registry.
func (s *System) Release(key string, pid *actor.PID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.accounts[key]; ok && cur.Equal(pid) {
		delete(s.accounts, key)
		return true
	}
	return false
}

// Settled tells the engine that transactions turned terminal outside it
// (cancelled through the API): their dependents fail or run now.
func (s *System) Settled(ctx context.Context, ids []string) {
	refs, err := s.conds.Resolve(ctx, ids)
	if err != nil {
		s.cfg.Log.Warn("resolving dependents failed", "err", err)
	}
	for _, r := range refs {
		s.Wake(r.AccountID, r.Network, false)
	}
}

// LiveAccounts returns how many account actors are running.
func (s *System) LiveAccounts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.accounts)
}

// AccountCreated asks the faucet of each network granted in a.Faucet (the
// store recorded the grant with the account: at most once per account and
// network, within its tree's budget) to fund the new account, without
// waiting.
func (s *System) AccountCreated(_ context.Context, a *engine.Account) {
	var networks []string
	for _, g := range a.Faucet {
		if g.Granted {
			networks = append(networks, g.Network)
		}
	}
	s.fund(networks, a.Address)
}

// fund asks the faucets of networks (those without one are skipped) to
// top up addr, without waiting.
func (s *System) fund(networks []string, addr common.Address) {
	for _, name := range networks {
		if _, ok := s.cfg.Faucets[name]; ok {
			s.place.fund(name, addr)
		}
	}
}

// FundAndWait asks the faucet of network to top up addrs and waits for the
// funding transactions to be sent.
func (s *System) FundAndWait(network string, addrs []common.Address, timeout time.Duration) ([]common.Hash, error) {
	return s.place.fundAndWait(network, addrs, timeout)
}

// NudgeCallbacks asks the callback dispatcher to poll its outbox now.
func (s *System) NudgeCallbacks() {
	s.sys.Root.Send(s.dispatcher, &callbacks.Nudge{})
}

// Close stops the watchers first (no more wake-ups), then the account
// actors (each finishes the message it is handling), then the callback
// dispatcher (deliveries in flight get a bounded grace; undelivered rows
// stay in the outbox), then the faucets. It may be called more than once.
func (s *System) Close() { s.stop.Do(s.close) }

func (s *System) close() {
	s.mu.Lock()
	s.closed = true
	accounts := make([]*actor.PID, 0, len(s.accounts))
	for _, pid := range s.accounts {
		accounts = append(accounts, pid)
	}
	s.mu.Unlock()
	stopAll := func(pids []*actor.PID) {
		futs := make([]*actor.Future, len(pids))
		for i, pid := range pids {
			futs[i] = s.sys.Root.StopFuture(pid)
		}
		for _, f := range futs {
			_ = f.Wait()
		}
	}
	if s.topoSub != nil {
		s.sys.EventStream.Unsubscribe(s.topoSub)
	}
	s.tokens.close(s.sys.EventStream)
	stopAll(s.leaders)
	stopAll(values(s.indexers))
	stopAll(values(s.watchers))
	stopAll(values(s.subscribers))
	stopAll(values(s.keeperPIDs)) // before the accounts: a keeper submits top-ups
	stopAll(accounts)
	if s.wakes != nil {
		s.wakes.close() // what it still holds goes to the request queue
	}
	if s.requests != nil { // wakes of the accounts just committed go out before the grains stop
		s.requests.drain(5 * time.Second)
		s.requests.close()
	}
	s.mu.Lock()
	grains := values(s.grains)
	s.mu.Unlock()
	stopAll(grains)
	if s.dispatcher != nil {
		stopAll([]*actor.PID{s.dispatcher})
	}
	stopAll(values(s.faucets))
	s.closePools()
	s.commits.Close() // after every account actor and grain stopped
	for _, st := range s.stages {
		st.Close()
	}
	if s.cl != nil {
		s.cl.Shutdown(true)
		return
	}
	s.sys.Shutdown()
}
