// Package sim runs the real engine (engine.Sender, engine.Follower) against
// a model chain and a real embedded store, with faults injected on both
// sides and crashes at random points, all decided by one seeded math/rand:
// the simulation of docs/simulation.md. A run is a pure function of its
// seed and configuration, so a failing seed replays (make sim SEED=n).
package sim

import (
	"math/big"
	"math/rand"
	"sort"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Gas of the model's calls: a token transfer uses transferGas, anything
// else (a filler, an outsider's transfer) the intrinsic 21,000.
const (
	transferGas  = 51_000
	intrinsicGas = 21_000
	chainID      = 1337
	gwei         = 1_000_000_000
)

// state is the world after a block: each account's nonce and token balance.
type state struct {
	nonces map[common.Address]uint64
	tokens map[common.Address]int64
}

func (s *state) clone() *state {
	c := &state{nonces: make(map[common.Address]uint64, len(s.nonces)), tokens: make(map[common.Address]int64, len(s.tokens))}
	for k, v := range s.nonces {
		c.nonces[k] = v
	}
	for k, v := range s.tokens {
		c.tokens[k] = v
	}
	return c
}

// block is one block of the canonical chain with its receipts and the
// state after it.
type block struct {
	header   *types.Header
	txs      []*types.Transaction
	receipts []*types.Receipt
	state    *state
}

// Chain is the model chain: a canonical list of blocks, a mempool and an
// ERC-20-like token at Token. It is driven by the simulation (Mine, Reorg,
// Consume...) and answers the engine through a node (node.go). Not safe for
// concurrent use: the simulation runs on one goroutine.
type Chain struct {
	rng    *rand.Rand
	signer types.Signer
	Token  common.Address
	blocks []*block
	byHash map[common.Hash]uint64 // canonical transaction hash -> block number
	pool   *pool
	// fork distinguishes the blocks of each branch (after a reorg).
	fork    uint64
	baseFee *big.Int
	// GasLimit is every block's gas limit.
	GasLimit uint64
	time     uint64
	// keepForeign keeps the transactions signed elsewhere (Consume) of the
	// blocks a reorg drops: their sender sends them again. When false, the
	// rng may drop them like the others, and the chain's nonce of the
	// account goes back below what it was: a gap only a nonce doctor fills.
	keepForeign bool
	// foreign are transactions signed elsewhere that their sender sends
	// again (pool or not) until they are mined.
	foreign []*types.Transaction
}

// NewChain returns a chain at its genesis block where each of holders owns
// tokens of the token at Token.
func NewChain(rng *rand.Rand, holders []common.Address, tokens int64, slots int, gapLimit uint64) *Chain {
	c := &Chain{
		rng: rng, signer: types.LatestSignerForChainID(big.NewInt(chainID)),
		Token:  common.HexToAddress("0x00000000000000000000000000000000000070c3"),
		byHash: map[common.Hash]uint64{}, pool: newPool(slots, gapLimit),
		baseFee: big.NewInt(gwei), GasLimit: 8 * transferGas * 12 / 10, time: 1_700_000_000,
	}
	st := &state{nonces: map[common.Address]uint64{}, tokens: map[common.Address]int64{}}
	for _, h := range holders {
		st.tokens[h] = tokens
	}
	genesis := &types.Header{Number: new(big.Int), GasLimit: c.GasLimit, BaseFee: new(big.Int).Set(c.baseFee), Time: c.time, Difficulty: new(big.Int)}
	c.blocks = []*block{{header: genesis, state: st}}
	return c
}

// Head is the number of the chain's latest block.
func (c *Chain) Head() uint64 { return uint64(len(c.blocks) - 1) }

func (c *Chain) head() *block { return c.blocks[len(c.blocks)-1] }

// NonceOf is addr's nonce at the head.
func (c *Chain) NonceOf(addr common.Address) uint64 { return c.head().state.nonces[addr] }

// Mine makes one block from the pool: for each sender in address order,
// its transactions in nonce order from its chain nonce while their fee cap
// covers the base fee, round after round, until the block's gas is used.
func (c *Chain) Mine() {
	parent := c.head()
	st := parent.state.clone()
	c.time += 2
	h := &types.Header{
		ParentHash: parent.header.Hash(), Number: new(big.Int).SetUint64(c.Head() + 1),
		GasLimit: c.GasLimit, BaseFee: new(big.Int).Set(c.baseFee), Time: c.time,
		Difficulty: new(big.Int), Extra: new(big.Int).SetUint64(c.fork).Bytes(),
	}
	var txs []*types.Transaction
	gas := uint64(0)
	for _, tx := range c.takeForeign(st) {
		txs = append(txs, tx)
		gas += tx.Gas()
	}
	for progress := true; progress; {
		progress = false
		for _, from := range c.pool.senders() {
			tx := c.pool.get(from, st.nonces[from])
			if tx == nil || tx.GasFeeCap().Cmp(h.BaseFee) < 0 || gas+tx.Gas() > h.GasLimit {
				continue
			}
			txs = append(txs, tx)
			gas += tx.Gas()
			st.nonces[from]++
			progress = true
		}
	}
	b := &block{header: h, txs: txs, state: parent.state.clone()}
	b.receipts = c.execute(b)
	h.GasUsed = sumGas(b.receipts)
	hash := h.Hash()
	for i, r := range b.receipts {
		r.BlockHash, r.BlockNumber, r.TransactionIndex = hash, new(big.Int).Set(h.Number), uint(i)
		c.byHash[r.TxHash] = h.Number.Uint64()
	}
	c.blocks = append(c.blocks, b)
	c.pool.prune(b.state.nonces)
	c.moveBaseFee(gas)
}

// execute applies b's transactions to b.state and returns their receipts
// (block fields are set by the caller).
func (c *Chain) execute(b *block) []*types.Receipt {
	out := make([]*types.Receipt, len(b.txs))
	cum := uint64(0)
	for i, tx := range b.txs {
		from := c.sender(tx)
		b.state.nonces[from] = tx.Nonce() + 1
		r := &types.Receipt{Type: tx.Type(), TxHash: tx.Hash(), Status: types.ReceiptStatusSuccessful, GasUsed: intrinsicGas, Logs: []*types.Log{}}
		if t, ok := decodeTransfer(tx.Data()); ok && tx.To() != nil && *tx.To() == c.Token {
			r.GasUsed = transferGas
			if b.state.tokens[from] >= t.amount {
				b.state.tokens[from] -= t.amount
				b.state.tokens[t.to] += t.amount
			} else {
				r.Status = types.ReceiptStatusFailed
			}
		}
		cum += r.GasUsed
		r.CumulativeGasUsed = cum
		out[i] = r
	}
	return out
}

// moveBaseFee moves the base fee as EIP-1559 does, by up to 12.5% per
// block after the gas used against half the limit, with a random push, and
// keeps it between 1 and 8 gwei.
func (c *Chain) moveBaseFee(used uint64) {
	target := int64(c.GasLimit / 2)
	delta := new(big.Int).Mul(c.baseFee, big.NewInt(int64(used)-target))
	delta.Div(delta, big.NewInt(target*8))
	if c.rng.Intn(4) == 0 {
		delta.Add(delta, new(big.Int).Div(c.baseFee, big.NewInt(int64(8-c.rng.Intn(16)|1))))
	}
	c.baseFee.Add(c.baseFee, delta)
	low, high := big.NewInt(gwei), big.NewInt(8*gwei)
	if c.baseFee.Cmp(low) < 0 {
		c.baseFee.Set(low)
	}
	if c.baseFee.Cmp(high) > 0 {
		c.baseFee.Set(high)
	}
}

// Reorg drops the newest depth blocks (never genesis): their transactions
// go back to the pool, except those the rng drops; then it mines depth+1
// blocks of a new branch. It returns the depth applied.
func (c *Chain) Reorg(depth int) int {
	depth = min(depth, len(c.blocks)-1)
	if depth <= 0 {
		return 0
	}
	dropped := c.blocks[len(c.blocks)-depth:]
	c.blocks = c.blocks[:len(c.blocks)-depth]
	c.fork++
	for _, b := range dropped {
		for _, tx := range b.txs {
			delete(c.byHash, tx.Hash())
			switch {
			case c.keepForeign && isForeign(tx):
				c.foreign = append(c.foreign, tx)
			case c.rng.Intn(5) > 0:
				c.pool.put(c.sender(tx), tx)
			}
		}
	}
	for i := 0; i <= depth; i++ {
		c.Mine()
	}
	return depth
}

// stranger is the recipient of the transactions signed elsewhere.
var stranger = common.HexToAddress("0x000000000000000000000000000000000000beef")

// isForeign reports whether tx was signed elsewhere (by Consume).
func isForeign(tx *types.Transaction) bool { return tx.To() != nil && *tx.To() == stranger }

// Consume signs with key a transfer of the account at its chain nonce (the
// key used by someone else) and mines it in the next block, ahead of
// whatever the pool holds at that nonce.
func (c *Chain) Consume(key *keyPair) {
	nonce := c.NonceOf(key.addr)
	tx := types.MustSignNewTx(key.priv, c.signer, &types.DynamicFeeTx{
		ChainID: big.NewInt(chainID), Nonce: nonce, GasTipCap: big.NewInt(gwei), GasFeeCap: big.NewInt(100 * gwei),
		Gas: intrinsicGas, To: &stranger, Value: big.NewInt(1),
	})
	c.pool.put(key.addr, tx)
	c.Mine()
}

// takeForeign returns the foreign transactions that go next on st (their
// nonce is the chain's), applying their nonces to st, and forgets those
// the chain has passed.
func (c *Chain) takeForeign(st *state) []*types.Transaction {
	var out, keep []*types.Transaction
	for _, tx := range c.foreign {
		from := c.sender(tx)
		switch {
		case tx.Nonce() == st.nonces[from]:
			out = append(out, tx)
			st.nonces[from]++
		case tx.Nonce() > st.nonces[from]:
			keep = append(keep, tx)
		}
	}
	c.foreign = keep
	return out
}

// ForgetPool empties the pool (a node restart).
func (c *Chain) ForgetPool() { c.pool = newPool(c.pool.slots, c.pool.gapLimit) }

// DropFromPool drops one transaction of the pool, chosen by the rng
// (eviction); false when the pool is empty.
func (c *Chain) DropFromPool() bool { return c.pool.dropOne(c.rng) }

// sender recovers tx's sender (the model only holds signed transactions).
func (c *Chain) sender(tx *types.Transaction) common.Address {
	from, err := types.Sender(c.signer, tx)
	if err != nil {
		panic("sim: unsigned transaction in the model chain: " + err.Error())
	}
	return from
}

// Canonical calls fn for each transaction of the canonical chain with its
// receipt, in order.
func (c *Chain) Canonical(fn func(from common.Address, tx *types.Transaction, r *types.Receipt)) {
	for _, b := range c.blocks {
		for i, tx := range b.txs {
			fn(c.sender(tx), tx, b.receipts[i])
		}
	}
}

// BlockHash is the hash of canonical block n (false when beyond the head).
func (c *Chain) BlockHash(n uint64) (common.Hash, bool) {
	if n > c.Head() {
		return common.Hash{}, false
	}
	return c.blocks[n].header.Hash(), true
}

func sumGas(rs []*types.Receipt) uint64 {
	if len(rs) == 0 {
		return 0
	}
	return rs[len(rs)-1].CumulativeGasUsed
}

// sortedAddrs returns the keys of m in byte order.
func sortedAddrs[V any](m map[common.Address]V) []common.Address {
	out := make([]common.Address, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i][:]) < string(out[j][:]) })
	return out
}
