package engine

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// Defaults of a PoolBalancer.
const (
	// DefaultPoolLoadsEvery is how old a pool's loads may be before a send
	// through it refreshes them (in the background).
	DefaultPoolLoadsEvery = 250 * time.Millisecond
	// DefaultPoolBalancesEvery is how often at most a pool's balances are
	// read again (and only when a new head came, where heads are known).
	DefaultPoolBalancesEvery = time.Second
	// DefaultPoolGasPerTx is the gas a member is expected to spend on one
	// transaction (an ERC-20 transfer to a fresh address costs about 146k
	// on dev chains, which enable every repricing).
	DefaultPoolGasPerTx = 200_000
	// DefaultPoolKeyTTL is how long the balancer remembers the member of
	// an orderingKey it assigned without being asked again; past it the
	// store says whether the key still has pending transactions.
	DefaultPoolKeyTTL = time.Minute
	// poolReadTimeout bounds one read of a pool's loads or balances.
	poolReadTimeout = 10 * time.Second
)

// PoolLoadReader is what the balancer reads of the store.
type PoolLoadReader interface {
	PoolLoads(ctx context.Context, poolID string) ([]PoolMemberLoad, error)
	OrderingKeyMember(ctx context.Context, poolID, key string) (string, bool, error)
}

// PoolBalancerConfig configures a PoolBalancer.
type PoolBalancerConfig struct {
	Store    PoolLoadReader
	Networks map[string]*Network
	Log      *slog.Logger
	// LoadsEvery, BalancesEvery, GasPerTx and KeyTTL: 0 takes the defaults
	// above.
	LoadsEvery    time.Duration
	BalancesEvery time.Duration
	GasPerTx      uint64
	KeyTTL        time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// PoolBalancer assigns members to the sends through pools
// (docs/pools.md): the least loaded member (queued + in flight) that can
// cover the send's value and the gas of one more transaction, ties
// rotating over the slots; when none can, the least loaded one, told to
// wait. Loads come from the store (PoolLoads), refreshed in the background
// at most every LoadsEvery per pool while sends flow, plus the balancer's
// own assignments since; balances from the chain, one batch read per pool
// per new head (at most every BalancesEvery). Only the first send through
// a pool (and the first of an asset, or of an orderingKey the balancer
// does not remember) waits for a read: the steady state calls neither the
// node nor the store. Safe for concurrent use; Close stops its reads.
type PoolBalancer struct {
	cfg    PoolBalancerConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	pools map[string]*poolState
}

// NewPoolBalancer returns a balancer; Close stops its background reads.
func NewPoolBalancer(cfg PoolBalancerConfig) *PoolBalancer {
	if cfg.LoadsEvery <= 0 {
		cfg.LoadsEvery = DefaultPoolLoadsEvery
	}
	if cfg.BalancesEvery <= 0 {
		cfg.BalancesEvery = DefaultPoolBalancesEvery
	}
	if cfg.GasPerTx == 0 {
		cfg.GasPerTx = DefaultPoolGasPerTx
	}
	if cfg.KeyTTL <= 0 {
		cfg.KeyTTL = DefaultPoolKeyTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &PoolBalancer{cfg: cfg, ctx: ctx, cancel: cancel, pools: map[string]*poolState{}}
}

// Close stops the background reads and waits for them.
func (b *PoolBalancer) Close() {
	b.cancel()
	b.wg.Wait()
}

// Forget drops what the balancer knows of a pool (deleted, or resized:
// the next send reads it again).
func (b *PoolBalancer) Forget(poolID string) {
	b.mu.Lock()
	delete(b.pools, poolID)
	b.mu.Unlock()
}

// state returns the pool's state, created on first use.
func (b *PoolBalancer) state(p *Pool) (*poolState, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, ok := b.pools[p.ID]
	if !ok {
		net, ok := b.cfg.Networks[p.Network]
		if !ok {
			return nil, Errorf(CodeUnavailable, "", "network %q is not configured", p.Network)
		}
		st = newPoolState(p.ID, net)
		b.pools[p.ID] = st
	}
	return st, nil
}

// Assign gives the send of need through p a member (p carries its
// members). Its errors are the store's or the node's on the first send
// through the pool (nothing is known yet), or a pool without members.
func (b *PoolBalancer) Assign(ctx context.Context, p *Pool, need PoolNeed) (PoolAssignment, error) {
	if len(p.Members) == 0 {
		return PoolAssignment{}, Errorf(CodeUnavailable, "pool", "pool %s has no members", p.ID)
	}
	st, err := b.state(p)
	if err != nil {
		return PoolAssignment{}, err
	}
	if err := b.prepare(ctx, st, p, need); err != nil {
		return PoolAssignment{}, err
	}
	now := b.cfg.Now()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.setMembers(p.Members)
	idx := -1
	if need.OrderingKey != "" {
		idx = st.keyMember(need.OrderingKey, now, b.cfg.KeyTTL)
	}
	if idx < 0 {
		idx = st.pick(need, b.gasCost(st))
	}
	a := PoolAssignment{Member: st.members[idx].PoolMember, Wait: !st.covers(idx, need, b.gasCost(st))}
	st.assigned(idx, need)
	if need.OrderingKey != "" {
		st.keys[need.OrderingKey] = keyEntry{member: a.Member.AccountID, at: now}
	}
	return a, nil
}

// gasCost returns the gas cost of one transaction of st's network as last
// read (nil: unknown). Callers hold st.mu.
func (b *PoolBalancer) gasCost(st *poolState) *big.Int {
	if st.gasPrice == nil {
		return nil
	}
	st.gasCost.SetUint64(b.cfg.GasPerTx)
	return st.gasCost.Mul(&st.gasCost, st.gasPrice)
}

// prepare makes sure st knows loads, balances (of need's asset) and the
// key's member, reading synchronously what it never read, and starting a
// background refresh of what is stale.
func (b *PoolBalancer) prepare(ctx context.Context, st *poolState, p *Pool, need PoolNeed) error {
	now := b.cfg.Now()
	st.mu.Lock()
	st.setMembers(p.Members)
	loadsKnown, balKnown := !st.loadsAt.IsZero(), !st.balAt.IsZero() && st.hasAsset(need.Asset)
	refreshLoads := loadsKnown && !st.loading && now.Sub(st.loadsAt) >= b.cfg.LoadsEvery
	head, _ := st.net.LastHead()
	refreshBal := balKnown && !st.balancing && now.Sub(st.balAt) >= b.cfg.BalancesEvery && (head == 0 || head != st.balHead)
	if !balKnown && need.Asset != "" && need.Asset != AssetETH {
		st.assets[need.Asset] = struct{}{}
	}
	e, keyKnown := st.keys[need.OrderingKey]
	keyKnown = keyKnown && now.Sub(e.at) < b.cfg.KeyTTL
	if refreshLoads {
		st.loading = true
		st.shift()
	}
	if refreshBal {
		st.balancing = true
	}
	st.mu.Unlock()
	if !loadsKnown {
		if err := b.readLoads(ctx, st, false); err != nil {
			return err
		}
	} else if refreshLoads {
		b.background(func(ctx context.Context) { _ = b.readLoads(ctx, st, true) })
	}
	if !balKnown {
		if err := b.readBalances(ctx, st, p.Members, false); err != nil {
			return err
		}
	} else if refreshBal {
		members := p.Members
		b.background(func(ctx context.Context) { _ = b.readBalances(ctx, st, members, true) })
	}
	if need.OrderingKey != "" && !keyKnown {
		return b.readKey(ctx, st, need.OrderingKey)
	}
	return nil
}

// background runs read on a goroutine the balancer owns, with a deadline.
func (b *PoolBalancer) background(read func(ctx context.Context)) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(b.ctx, poolReadTimeout)
		defer cancel()
		read(ctx)
	}()
}

// readLoads reads the pool's loads from the store into st (bg: a
// background refresh, whose failure is logged and retried by a later send).
func (b *PoolBalancer) readLoads(ctx context.Context, st *poolState, bg bool) error {
	ctx, cancel := context.WithTimeout(ctx, poolReadTimeout)
	defer cancel()
	loads, err := b.cfg.Store.PoolLoads(ctx, st.id)
	at := b.cfg.Now()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.loading = false
	if err != nil {
		if bg {
			b.cfg.Log.Warn("pool loads", "pool", st.id, "err", err)
		}
		return fmt.Errorf("loads of pool %s: %w", st.id, err)
	}
	st.setLoads(loads, at, b.cfg.KeyTTL)
	return nil
}

// readKey asks the store for the member of a key the balancer does not
// remember.
func (b *PoolBalancer) readKey(ctx context.Context, st *poolState, key string) error {
	ctx, cancel := context.WithTimeout(ctx, poolReadTimeout)
	defer cancel()
	member, ok, err := b.cfg.Store.OrderingKeyMember(ctx, st.id, key)
	if err != nil {
		return fmt.Errorf("orderingKey member of pool %s: %w", st.id, err)
	}
	if ok {
		st.mu.Lock()
		if e, known := st.keys[key]; !known || b.cfg.Now().Sub(e.at) >= b.cfg.KeyTTL {
			st.keys[key] = keyEntry{member: member, at: b.cfg.Now()}
		}
		st.mu.Unlock()
	}
	return nil
}

// readBalances reads the members' ETH and token balances (the assets st
// has seen) and the network's gas price, in one batch.
func (b *PoolBalancer) readBalances(ctx context.Context, st *poolState, members []PoolMember, bg bool) error {
	ctx, cancel := context.WithTimeout(ctx, poolReadTimeout)
	defer cancel()
	st.mu.Lock()
	assets := make([]string, 0, len(st.assets))
	for a := range st.assets {
		assets = append(assets, a)
	}
	st.mu.Unlock()
	head, _ := st.net.LastHead()
	bal, err := ReadPoolBalances(ctx, st.net, members, assets)
	var price *big.Int
	if err == nil {
		price, err = st.net.GasPrice(ctx)
	}
	at := b.cfg.Now()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.balancing = false
	if err != nil {
		if bg {
			b.cfg.Log.Warn("pool balances", "pool", st.id, "err", err)
		}
		return fmt.Errorf("balances of pool %s: %w", st.id, err)
	}
	st.setBalances(bal, assets, at, head)
	st.gasPrice = price
	return nil
}

// PoolBalances are the balances of a pool's members, by account id: ETH
// (nil: the node did not answer) and tokens by EIP-55 address.
type PoolBalances map[string]*MemberBalances

// MemberBalances are one member's balances.
type MemberBalances struct {
	ETH    *big.Int
	Tokens map[string]*big.Int
}

// ReadPoolBalances reads the ETH balance and the balances of tokens (EIP-55
// addresses) of members, in one round trip where the node batches.
func ReadPoolBalances(ctx context.Context, net *Network, members []PoolMember, tokens []string) (PoolBalances, error) {
	qs := make([]BalanceQuery, 0, len(members)*(1+len(tokens)))
	for _, m := range members {
		qs = append(qs, BalanceQuery{ETH: true, Holder: m.Address})
		for _, t := range tokens {
			qs = append(qs, BalanceQuery{Token: common.HexToAddress(t), Holder: m.Address})
		}
	}
	vals, errs, err := Balances(ctx, net.Chain, qs)
	if err != nil {
		return nil, fmt.Errorf("read balances of %d members: %w", len(members), err)
	}
	out := make(PoolBalances, len(members))
	i := 0
	for _, m := range members {
		mb := &MemberBalances{Tokens: make(map[string]*big.Int, len(tokens))}
		if errs == nil || errs[i] == nil {
			mb.ETH = vals[i]
		}
		i++
		for _, t := range tokens {
			if errs == nil || errs[i] == nil {
				mb.Tokens[t] = vals[i]
			}
			i++
		}
		out[m.AccountID] = mb
	}
	return out, nil
}

// GasPrice returns the price per gas the engine signs with on the network
// (twice the base fee plus the tip, or the legacy gas price; capped by
// MaxFeePerGasCap), from the network's fee quote (cached for FeeQuoteTTL).
func (n *Network) GasPrice(ctx context.Context) (*big.Int, error) {
	q, err := n.cachedFees(ctx, func(ctx context.Context) (feeQuote, error) { return quoteFees(ctx, n.Chain) })
	if err != nil {
		return nil, err
	}
	if q.baseFee == nil {
		price, _ := n.CapFees(q.gasPrice, nil)
		return price, nil
	}
	feeCap, _ := n.CapFees(MaxFeePerGas(q.baseFee, q.tip), q.tip)
	return feeCap, nil
}
