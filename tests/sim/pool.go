package sim

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/binary"
	"math/big"
	"math/rand"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// pool is the model's mempool: per sender, one transaction per nonce, at
// most slots per sender.
type pool struct {
	slots int
	// gapLimit is how far above the chain's nonce a transaction may be
	// (geth queues up to 64 per account; Hardhat's automine none).
	gapLimit uint64
	byFrom   map[common.Address]map[uint64]*types.Transaction
}

func newPool(slots int, gapLimit uint64) *pool {
	return &pool{slots: slots, gapLimit: gapLimit, byFrom: map[common.Address]map[uint64]*types.Transaction{}}
}

func (p *pool) senders() []common.Address { return sortedAddrs(p.byFrom) }

func (p *pool) get(from common.Address, nonce uint64) *types.Transaction {
	return p.byFrom[from][nonce]
}

// put stores tx at its nonce, replacing what was there.
func (p *pool) put(from common.Address, tx *types.Transaction) {
	m := p.byFrom[from]
	if m == nil {
		m = map[uint64]*types.Transaction{}
		p.byFrom[from] = m
	}
	m[tx.Nonce()] = tx
}

// has reports whether the pool holds tx itself (same hash).
func (p *pool) has(from common.Address, tx *types.Transaction) bool {
	old := p.byFrom[from][tx.Nonce()]
	return old != nil && old.Hash() == tx.Hash()
}

// remove drops the transaction of from at nonce.
func (p *pool) remove(from common.Address, nonce uint64) {
	delete(p.byFrom[from], nonce)
	if len(p.byFrom[from]) == 0 {
		delete(p.byFrom, from)
	}
}

// highest is the highest nonce of from's transactions in the pool.
func (p *pool) highest(from common.Address) uint64 {
	var top uint64
	for n := range p.byFrom[from] {
		top = max(top, n)
	}
	return top
}

// count is how many transactions of from the pool holds.
func (p *pool) count(from common.Address) int { return len(p.byFrom[from]) }

// prune drops the transactions whose nonce the chain has passed.
func (p *pool) prune(nonces map[common.Address]uint64) {
	for from, m := range p.byFrom {
		for n := range m {
			if n < nonces[from] {
				delete(m, n)
			}
		}
		if len(m) == 0 {
			delete(p.byFrom, from)
		}
	}
}

// dropOne drops one transaction chosen by rng; false when empty.
func (p *pool) dropOne(rng *rand.Rand) bool {
	senders := p.senders()
	if len(senders) == 0 {
		return false
	}
	from := senders[rng.Intn(len(senders))]
	m := p.byFrom[from]
	nonces := make([]uint64, 0, len(m))
	for n := range m {
		nonces = append(nonces, n)
	}
	sortUint64(nonces)
	p.remove(from, nonces[rng.Intn(len(nonces))])
	return true
}

func sortUint64(s []uint64) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// bumped reports whether v is at least 10% above old (what nodes require
// of a replacement).
func bumped(v, old *big.Int) bool {
	want := new(big.Int).Mul(old, big.NewInt(110))
	return new(big.Int).Mul(v, big.NewInt(100)).Cmp(want) >= 0
}

// transfer is the call of the model's token: transfer(to, amount) with a
// memo that identifies the request, so executions can be counted.
type transfer struct {
	to     common.Address
	amount int64
	memo   uint64
}

// transferSelector is the 4-byte selector of transfer(address,uint256).
var transferSelector = []byte{0xa9, 0x05, 0x9c, 0xbb}

// encode is the call data: selector, recipient, amount, memo (one word each).
func (t transfer) encode() []byte {
	out := append([]byte{}, transferSelector...)
	out = append(out, common.LeftPadBytes(t.to[:], 32)...)
	out = append(out, common.LeftPadBytes(big.NewInt(t.amount).Bytes(), 32)...)
	var memo [32]byte
	binary.BigEndian.PutUint64(memo[24:], t.memo)
	return append(out, memo[:]...)
}

// decodeTransfer decodes what encode made.
func decodeTransfer(data []byte) (transfer, bool) {
	if len(data) != 4+3*32 || !bytes.Equal(data[:4], transferSelector) {
		return transfer{}, false
	}
	return transfer{
		to:     common.BytesToAddress(data[4:36]),
		amount: new(big.Int).SetBytes(data[36:68]).Int64(),
		memo:   binary.BigEndian.Uint64(data[92:100]),
	}, true
}

// keyPair is an account's key.
type keyPair struct {
	priv *ecdsa.PrivateKey
	addr common.Address
}

// newKey derives a key from rng (deterministic per seed).
func newKey(rng *rand.Rand) *keyPair {
	for {
		var b [32]byte
		rng.Read(b[:])
		priv, err := crypto.ToECDSA(b[:])
		if err == nil {
			return &keyPair{priv: priv, addr: crypto.PubkeyToAddress(priv.PublicKey)}
		}
	}
}
