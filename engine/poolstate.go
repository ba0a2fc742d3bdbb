package engine

import (
	"math/big"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// poolState is what a PoolBalancer knows of one pool. Its fields are
// guarded by mu, which is never held across a read of the store or node.
type poolState struct {
	id  string
	net *Network

	mu      sync.Mutex
	members []memberState
	byID    map[string]int
	// loadsAt is when the loads were last read (zero: never); loading is
	// set while a read is in flight (one at a time).
	loadsAt time.Time
	loading bool
	// balAt and balHead are when and at which head the balances were last
	// read; balancing is set while a read is in flight.
	balAt     time.Time
	balHead   uint64
	balancing bool
	// assets are the tokens whose balances are read; readAssets those the
	// last read covered.
	assets     map[string]struct{}
	readAssets map[string]struct{}
	gasPrice   *big.Int
	// gasCost and scratch are reused under mu (no allocation per send).
	gasCost, scratch big.Int
	keys             map[string]keyEntry
	// next is the slot the rotation among equally loaded members starts at.
	next int
}

// keyEntry is the member an orderingKey was last assigned to, and when.
type keyEntry struct {
	member string
	at     time.Time
}

// memberState is one member's load and balances as the balancer sees them.
type memberState struct {
	PoolMember
	// queued, inFlight and reserved are the store's, as last read.
	queued, inFlight int
	reserved         map[string]*big.Int
	// own counts the balancer's assignments since the last refresh started
	// (cur) and in the interval before it (prev, which the store may not
	// have seen committed yet), with their values by asset.
	ownCur, ownPrev       int
	ownCurVal, ownPrevVal map[string]*big.Int
	eth                   *big.Int
	tokens                map[string]*big.Int
}

func newPoolState(id string, net *Network) *poolState {
	return &poolState{id: id, net: net, byID: map[string]int{}, assets: map[string]struct{}{},
		readAssets: map[string]struct{}{}, keys: map[string]keyEntry{}}
}

// setMembers makes the members those of the pool (its latest version),
// keeping what is known of the members that stay.
func (st *poolState) setMembers(ms []PoolMember) {
	if len(ms) == len(st.members) {
		same := true
		for i := range ms {
			if ms[i].AccountID != st.members[i].AccountID {
				same = false
				break
			}
		}
		if same {
			return
		}
	}
	old, oldIdx := st.members, st.byID
	st.members = make([]memberState, len(ms))
	st.byID = make(map[string]int, len(ms))
	for i, m := range ms {
		if j, ok := oldIdx[m.AccountID]; ok {
			st.members[i] = old[j]
		} else {
			st.members[i] = memberState{reserved: map[string]*big.Int{}, ownCurVal: map[string]*big.Int{}, ownPrevVal: map[string]*big.Int{}}
		}
		st.members[i].PoolMember = m
		st.byID[m.AccountID] = i
	}
	st.next %= len(ms)
}

// hasAsset reports whether the last balance read covered asset.
func (st *poolState) hasAsset(asset string) bool {
	if asset == "" || asset == AssetETH {
		return true
	}
	_, ok := st.readAssets[asset]
	return ok
}

// shift starts a new interval of own assignments (a refresh of the loads
// starts): the current one becomes the previous, the previous is dropped.
func (st *poolState) shift() {
	for i := range st.members {
		m := &st.members[i]
		m.ownPrev, m.ownCur = m.ownCur, 0
		m.ownPrevVal, m.ownCurVal = m.ownCurVal, m.ownPrevVal
		for _, v := range m.ownCurVal {
			v.SetInt64(0)
		}
	}
}

// setLoads records the store's loads, read at at, and forgets the
// orderingKeys not used for keyTTL.
func (st *poolState) setLoads(loads []PoolMemberLoad, at time.Time, keyTTL time.Duration) {
	for i := range st.members {
		m := &st.members[i]
		m.queued, m.inFlight = 0, 0
		clear(m.reserved)
	}
	for _, l := range loads {
		i, ok := st.byID[l.AccountID]
		if !ok {
			continue
		}
		m := &st.members[i]
		m.queued, m.inFlight = l.Queued, l.InFlight
		for a, v := range l.Reserved {
			m.reserved[a] = v
		}
	}
	st.loadsAt = at
	for k, e := range st.keys {
		if at.Sub(e.at) >= keyTTL {
			delete(st.keys, k)
		}
	}
}

// setBalances records balances of the tokens assets, read at head.
func (st *poolState) setBalances(bal PoolBalances, assets []string, at time.Time, head uint64) {
	for i := range st.members {
		m := &st.members[i]
		if b, ok := bal[m.AccountID]; ok {
			m.eth, m.tokens = b.ETH, b.Tokens
		}
	}
	clear(st.readAssets)
	for _, a := range assets {
		st.readAssets[a] = struct{}{}
	}
	st.balAt, st.balHead = at, head
}

// load is member i's queued and in-flight transactions, with the
// balancer's own assignments the store may not count yet.
func (st *poolState) load(i int) int {
	m := &st.members[i]
	return m.queued + m.inFlight + m.ownCur + m.ownPrev
}

// pick returns the least loaded member that covers need, ties going to
// the first from the rotation's start, unless it carries more than
// poolCoverSlack over the least loaded member; else the least loaded one.
func (st *poolState) pick(need PoolNeed, gasCost *big.Int) int {
	n := len(st.members)
	best, bestAny := -1, -1
	for k := 0; k < n; k++ {
		i := (st.next + k) % n
		l := st.load(i)
		if bestAny < 0 || l < st.load(bestAny) {
			bestAny = i
		}
		if (best < 0 || l < st.load(best)) && st.covers(i, need, gasCost) {
			best = i
		}
	}
	if best >= 0 && st.load(best) <= st.load(bestAny)+poolCoverSlack {
		return best
	}
	return bestAny
}

// poolCoverSlack is how much more load a member that covers a send may
// carry than the least loaded member before the send goes to the least
// loaded one anyway (to wait there for its top-up): about what one member
// moves in a block on a busy node (16 pending per sender). Without it a
// burst piles onto the members that happen to hold funds while the others
// are topped up, and those members drain alone at the end.
const poolCoverSlack = 16

// free sets st.scratch to what member i holds of asset beyond what its
// pending transactions reserve (balance nil: false).
func (st *poolState) free(i int, asset string, balance *big.Int) bool {
	if balance == nil {
		return false
	}
	m := &st.members[i]
	st.scratch.Set(balance)
	for _, v := range []*big.Int{m.reserved[asset], m.ownCurVal[asset], m.ownPrevVal[asset]} {
		if v != nil {
			st.scratch.Sub(&st.scratch, v)
		}
	}
	return true
}

// covers reports whether member i can pay need's value and the gas of one
// more transaction (gasCost nil: unknown, any ETH beyond the reserved).
func (st *poolState) covers(i int, need PoolNeed, gasCost *big.Int) bool {
	m := &st.members[i]
	hasValue := need.Value != nil && need.Value.Sign() > 0
	if hasValue && need.Asset != AssetETH && need.Asset != "" {
		if !st.free(i, need.Asset, m.tokens[need.Asset]) || st.scratch.Cmp(need.Value) < 0 {
			return false
		}
	}
	if !st.free(i, AssetETH, m.eth) {
		return false
	}
	if hasValue && (need.Asset == AssetETH || need.Asset == "") {
		st.scratch.Sub(&st.scratch, need.Value)
	}
	if gasCost == nil {
		return st.scratch.Sign() >= 0
	}
	return st.scratch.Cmp(gasCost) >= 0
}

// waitFor returns what a transaction given member i, which cannot cover
// need, waits for: the token when the member lacks it, else ETH for the
// value (when ETH) and the gas of one transaction.
func (st *poolState) waitFor(i int, need PoolNeed, gasCost *big.Int) (string, *big.Int) {
	m := &st.members[i]
	hasValue := need.Value != nil && need.Value.Sign() > 0
	isETH := need.Asset == AssetETH || need.Asset == ""
	if hasValue && !isETH && (!st.free(i, need.Asset, m.tokens[need.Asset]) || st.scratch.Cmp(need.Value) < 0) {
		return need.Asset, new(big.Int).Set(need.Value)
	}
	v := new(big.Int)
	if hasValue && isETH {
		v.Set(need.Value)
	}
	if gasCost != nil {
		v.Add(v, gasCost)
	}
	return AssetETH, v
}

// assigned counts an assignment of need to member i at now, and moves the
// rotation past it.
func (st *poolState) assigned(i int, need PoolNeed) {
	m := &st.members[i]
	m.ownCur++
	if need.Value != nil && need.Value.Sign() > 0 {
		asset := need.Asset
		if asset == "" {
			asset = AssetETH
		}
		v, ok := m.ownCurVal[asset]
		if !ok {
			v = new(big.Int)
			m.ownCurVal[asset] = v
		}
		v.Add(v, need.Value)
	}
	st.next = (i + 1) % len(st.members)
}

// keyMember returns the index of the member key was last assigned to
// within keyTTL, or -1.
func (st *poolState) keyMember(key string, now time.Time, keyTTL time.Duration) int {
	e, ok := st.keys[key]
	if !ok || now.Sub(e.at) >= keyTTL {
		return -1
	}
	i, ok := st.byID[e.member]
	if !ok {
		return -1
	}
	return i
}

// poolSpends are the values that the transactions sent through a pool
// and admitted in one pump of a member move, by asset.
type poolSpends map[string]*big.Int

// add counts tx's value when it was sent through a pool.
func (p *poolSpends) add(tx *Transaction) {
	if tx.PoolID == "" || tx.PoolValue == nil || tx.PoolValue.Sign() <= 0 {
		return
	}
	if *p == nil {
		*p = poolSpends{}
	}
	k := AssetKey(tx.PoolAsset)
	v, ok := (*p)[k]
	if !ok {
		v = new(big.Int)
		(*p)[k] = v
	}
	v.Add(v, tx.PoolValue)
}

// AssetKey normalises an asset: "ETH", or a token's EIP-55 address.
func AssetKey(asset string) string {
	if asset == "" || asset == AssetETH {
		return AssetETH
	}
	return common.HexToAddress(asset).Hex()
}
