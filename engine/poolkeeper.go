package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sort"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// Defaults of a PoolKeeper.
const (
	// DefaultPoolLowWaterTxs: a member whose ETH (beyond what its pending
	// transactions move) pays the gas of fewer transactions than its load
	// plus this many is topped up...
	DefaultPoolLowWaterTxs = 10
	// DefaultPoolHighWaterTxs: ...to the gas of its load plus this many.
	DefaultPoolHighWaterTxs = 30
	// DefaultPoolHeadroomPercent: a member short of a token gets its
	// deficit plus this share of what its pending transfers reserve.
	DefaultPoolHeadroomPercent = 50
)

// PoolKeeperStore is what a PoolKeeper reads of the store.
type PoolKeeperStore interface {
	PoolByID(ctx context.Context, id string) (*Pool, error)
	PoolLoads(ctx context.Context, poolID string) ([]PoolMemberLoad, error)
	PoolTopUps(ctx context.Context, poolID string) (PoolTopUps, error)
	AccountByID(ctx context.Context, id string) (*Account, error)
	// ListTransactions finds the treasury's disperser deployment (by
	// sender and MethodCreate); TransactionByID reads a batch's outcome.
	ListTransactions(ctx context.Context, f TxFilter) ([]*Transaction, *TxCursor, error)
	TransactionByID(ctx context.Context, id string) (*Transaction, error)
}

// TxSubmitter accepts a transaction durably (the actor system's Submit).
type TxSubmitter interface {
	Submit(ctx context.Context, tx *Transaction) (*Transaction, error)
}

// PoolKeeperConfig configures the keeper of one network's pools.
type PoolKeeperConfig struct {
	Network *Network
	Store   PoolKeeperStore
	Submit  TxSubmitter
	Clock   Clock
	Log     *slog.Logger
	Metrics PoolMetrics
	// GasPerTx, LowWaterTxs, HighWaterTxs, HeadroomPercent: 0 takes the
	// defaults (DefaultPoolGasPerTx and the above).
	GasPerTx        uint64
	LowWaterTxs     int
	HighWaterTxs    int
	HeadroomPercent int
	// BatchMin is the fewest members owed one asset that get it in one
	// batch (0: DefaultPoolBatchMin; negative: never in batches).
	BatchMin int
}

// PoolKeeper tops up the members of one network's pools from their
// treasuries (docs/pools.md#top-ups): gas when a member's ETH pays fewer
// than its load plus LowWaterTxs transactions, tokens when a member holds
// less of a token than its pending transfers move. A top-up is an ordinary
// transaction from the treasury (PoolID set, OrderingKey TopUpKeyPrefix +
// member + ":" + asset); a member gets none while one of the same asset is
// pending (the store's PoolTopUps, read once per look and before the
// balances: restart-safe). Tick runs from one goroutine
// (the keeper actor); Add, Short and Assess are safe for concurrent use
// (the store counts the top-ups: PoolStore.PoolTopUps).
type PoolKeeper struct {
	cfg PoolKeeperConfig

	mu      sync.Mutex
	active  map[string]struct{}
	short   map[string]string
	refills map[string]refill // by top-up key
	// dispersers are the treasuries' deployed dispersers, by treasury id.
	dispersers map[string]common.Address
	deploys    map[string]deployState
	// lastBatch is the id of the last batch sent, and batchPaused until
	// when batches stay off after one failed, by pool id + " " + asset.
	lastBatch   map[string]string
	batchPaused map[string]time.Time
	// held is when a pool's top-ups of an asset were first held for a
	// batch whose setup is in progress (holdFor), by pool id + " " + asset.
	held map[string]time.Time
}

// NewPoolKeeper returns the keeper of cfg.Network's pools.
func NewPoolKeeper(cfg PoolKeeperConfig) *PoolKeeper {
	if cfg.GasPerTx == 0 {
		cfg.GasPerTx = DefaultPoolGasPerTx
	}
	if cfg.LowWaterTxs <= 0 {
		cfg.LowWaterTxs = DefaultPoolLowWaterTxs
	}
	if cfg.HighWaterTxs <= cfg.LowWaterTxs {
		cfg.HighWaterTxs = max(DefaultPoolHighWaterTxs, cfg.LowWaterTxs+1)
	}
	if cfg.HeadroomPercent <= 0 {
		cfg.HeadroomPercent = DefaultPoolHeadroomPercent
	}
	if cfg.BatchMin == 0 {
		cfg.BatchMin = DefaultPoolBatchMin
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NopPoolMetrics{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	return &PoolKeeper{cfg: cfg, active: map[string]struct{}{}, short: map[string]string{}, refills: map[string]refill{},
		dispersers: map[string]common.Address{}, deploys: map[string]deployState{}, lastBatch: map[string]string{}, batchPaused: map[string]time.Time{},
		held: map[string]time.Time{}}
}

// Add marks a pool as having work: the next Tick looks at it.
func (k *PoolKeeper) Add(poolID string) {
	k.mu.Lock()
	k.active[poolID] = struct{}{}
	k.mu.Unlock()
}

// Has reports whether the keeper looks after the pool.
func (k *PoolKeeper) Has(poolID string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.active[poolID]
	return ok
}

// Active returns how many pools the keeper looks after.
func (k *PoolKeeper) Active() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.active)
}

// Short returns why the pool cannot cover its members ("" when it can, or
// when the keeper has not looked at it).
func (k *PoolKeeper) Short(poolID string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.short[poolID]
}

// Tick looks at every pool with work: it tops up its members where needed
// and forgets the pools that have nothing pending any more.
func (k *PoolKeeper) Tick(ctx context.Context) {
	k.mu.Lock()
	ids := make([]string, 0, len(k.active))
	for id := range k.active {
		ids = append(ids, id)
	}
	k.mu.Unlock()
	sort.Strings(ids)
	for _, id := range ids {
		busy, err := k.keep(ctx, id)
		if err != nil {
			k.cfg.Log.Warn("pool keeper", "pool", id, "network", k.cfg.Network.Name, "err", err)
			continue // tried again next tick
		}
		if !busy {
			k.mu.Lock()
			delete(k.active, id)
			k.mu.Unlock()
		}
	}
}

// topUp is one transfer the treasury owes a member.
type topUp struct {
	member PoolMember
	asset  string
	amount *big.Int
	// work is the member's queued plus in-flight transactions (byNeed).
	work int
}

// key is the top-up's OrderingKey.
func (t topUp) key() string { return TopUpKeyPrefix + t.member.AccountID + ":" + t.asset }

// keep tops up one pool's members; busy reports whether the pool still has
// work (pending transactions or top-ups owed).
func (k *PoolKeeper) keep(ctx context.Context, id string) (busy bool, err error) {
	p, err := k.cfg.Store.PoolByID(ctx, id)
	if errors.Is(err, ErrNotFound) {
		k.forget(id)
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("pool: %w", err)
	}
	loads, err := k.cfg.Store.PoolLoads(ctx, id)
	if err != nil {
		return true, fmt.Errorf("loads: %w", err)
	}
	queued, inFlight := 0, 0
	for _, l := range loads {
		queued, inFlight = queued+l.Queued, inFlight+l.InFlight
	}
	k.cfg.Metrics.PoolMembers(id, p.Network, len(p.Members))
	k.cfg.Metrics.PoolLoad(id, p.Network, queued, inFlight)
	// The pending top-ups are read before the balances: a top-up that
	// ended before this read is in the balances read after it.
	tu, err := k.cfg.Store.PoolTopUps(ctx, id)
	if errors.Is(err, ErrNotFound) {
		k.forget(id)
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("pending top-ups: %w", err)
	}
	owed, err := k.owed(ctx, p, loads)
	if err != nil {
		return true, err
	}
	owed = notPending(owed, tu.Pending)
	byNeed(owed)
	if err := k.pay(ctx, p, owed, tu.Pending); err != nil {
		return true, err
	}
	return queued+inFlight > 0 || len(owed) > 0, nil
}

// forget drops a deleted pool.
func (k *PoolKeeper) forget(id string) {
	k.mu.Lock()
	delete(k.active, id)
	delete(k.short, id)
	k.mu.Unlock()
	k.cfg.Metrics.PoolGone(id, k.cfg.Network.Name)
}

// owed computes the top-ups p's members need, from their balances now.
func (k *PoolKeeper) owed(ctx context.Context, p *Pool, loads []PoolMemberLoad) ([]topUp, error) {
	bal, err := ReadPoolBalances(ctx, k.cfg.Network, p.Members, loadTokens(loads))
	if err != nil {
		return nil, err
	}
	price, err := k.cfg.Network.GasPrice(ctx)
	if err != nil {
		return nil, fmt.Errorf("gas price: %w", err)
	}
	return k.owedOf(p, loads, bal, k.txGas(price)), nil
}

// txGas is the cost of one transaction's gas at price.
func (k *PoolKeeper) txGas(price *big.Int) *big.Int {
	return new(big.Int).Mul(price, new(big.Int).SetUint64(k.cfg.GasPerTx))
}

// loadTokens returns the tokens the loads reserve, sorted.
func loadTokens(loads []PoolMemberLoad) []string {
	set := map[string]struct{}{}
	for _, l := range loads {
		for a := range l.Reserved {
			if a != AssetETH {
				set[a] = struct{}{}
			}
		}
	}
	tokens := make([]string, 0, len(set))
	for a := range set {
		tokens = append(tokens, a)
	}
	sort.Strings(tokens)
	return tokens
}

// owedOf computes the top-ups p's members need from their loads and
// balances, one transaction's gas costing txGas.
func (k *PoolKeeper) owedOf(p *Pool, loads []PoolMemberLoad, bal PoolBalances, txGas *big.Int) []topUp {
	byID := make(map[string]PoolMemberLoad, len(loads))
	for _, l := range loads {
		byID[l.AccountID] = l
	}
	tokens := loadTokens(loads)
	var out []topUp
	for _, m := range p.Members {
		l, b := byID[m.AccountID], bal[m.AccountID]
		if b == nil || b.ETH == nil {
			continue // the node did not answer for it: next tick
		}
		n := int64(l.Queued + l.InFlight)
		low := reservedOf(l, AssetETH)
		low.Add(low, new(big.Int).Mul(txGas, big.NewInt(n+int64(k.cfg.LowWaterTxs))))
		if b.ETH.Cmp(low) < 0 {
			t := topUp{member: m, asset: AssetETH, work: int(n)}
			high := reservedOf(l, AssetETH)
			high.Add(high, new(big.Int).Mul(txGas, big.NewInt(n+int64(k.cfg.HighWaterTxs)*k.headroom(t.key()))))
			t.amount = high.Sub(high, b.ETH)
			out = append(out, t)
		}
		for _, a := range tokens {
			have, need := b.Tokens[a], reservedOf(l, a)
			if have == nil || have.Cmp(need) >= 0 {
				continue
			}
			t := topUp{member: m, asset: a, amount: new(big.Int).Sub(need, have), work: int(n)}
			head := new(big.Int).Mul(need, big.NewInt(int64(k.cfg.HeadroomPercent)*k.headroom(t.key())))
			t.amount.Add(t.amount, head.Div(head, big.NewInt(100)))
			out = append(out, t)
		}
	}
	return out
}

// reservedOf returns a copy of what l's pending transactions move of asset.
func reservedOf(l PoolMemberLoad, asset string) *big.Int {
	if v := l.Reserved[asset]; v != nil {
		return new(big.Int).Set(v)
	}
	return new(big.Int)
}

// notPending drops the top-ups of which one of the same member and asset
// is pending (its key is in pending), and those of an asset of which a
// batch is pending (it may pay any member).
func notPending(owed []topUp, pending []string) []topUp {
	if len(pending) == 0 {
		return owed
	}
	set := make(map[string]struct{}, len(pending))
	for _, key := range pending {
		set[key] = struct{}{}
	}
	out := owed[:0]
	for _, t := range owed {
		_, mine := set[t.key()]
		_, batch := set[TopUpBatchKey(t.asset)]
		if !mine && !batch {
			out = append(out, t)
		}
	}
	return out
}

// noTreasury is the shortfall of a pool without a treasury whose members
// need a top-up.
const noTreasury = "no treasury: members need gas or tokens and nothing refills them"

// PoolLook is what a look at a pool reads of the store and the node,
// that a caller which read it already hands to Assess.
type PoolLook struct {
	// Loads are the members' loads (PoolStore.PoolLoads).
	Loads []PoolMemberLoad
	// Balances are the members' balances of ETH and of (at least) the
	// tokens their loads reserve; a member absent or without ETH is
	// skipped, as when the node does not answer.
	Balances PoolBalances
	// Pending are the keys of the pool's pending top-ups
	// (PoolTopUps.Pending), read before the balances.
	Pending []string
}

// Assess returns why p cannot cover its members now ("" when it can), as
// a look of its keeper would find, from what the caller read (look), and
// pays nothing: GET /pools/{id} on a node that does not run p's keeper
// (cluster mode, where the network's leader runs it). It reads only the
// gas price and the treasury's balances.
func (k *PoolKeeper) Assess(ctx context.Context, p *Pool, look PoolLook) (string, error) {
	price, err := k.cfg.Network.GasPrice(ctx)
	if err != nil {
		return "", fmt.Errorf("gas price: %w", err)
	}
	owed := notPending(k.owedOf(p, look.Loads, look.Balances, k.txGas(price)), look.Pending)
	byNeed(owed)
	_, _, short, err := k.payable(ctx, p, owed)
	return short, err
}
