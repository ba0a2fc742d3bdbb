package engine

import (
	"math/big"
	"sync"
	"time"
)

// A transaction is signed with a fee cap of twice the base fee plus the
// tip (MaxFeePerGas), which keeps it includable through six full blocks:
// each raises the base fee by at most 1/8. A burst longer than that (10,000
// transfers to new holders fill 25 blocks of 60M gas) outgrew it: the
// transactions signed at its start could no longer pay the base fee when
// their turn came, geth left them in its pool, and the blocks went full,
// empty, full, empty as the base fee fell back under their cap and rose
// again (the block log of `make bench-shapes SHAPES=pg.fresh`). So a
// transaction's cap covers the blocks it waits for too: the gas of the
// network's transactions in flight ahead of it, over the block's gas,
// each of those blocks raising the base fee by 1/8 (feeCapAhead). A cap is
// a bound, not a price: the transaction pays the base fee of its block and
// its tip.

// maxBlocksAhead bounds the blocks a fee cap covers beyond MaxFeePerGas's
// six: 1.125^20 ≈ 10.5, so a cap is at most about 21 × the base fee plus
// the tip (and Network.MaxFeePerGasCap when set).
const maxBlocksAhead = 20

// backlogTTL is how long an account's note of its in-flight gas counts
// towards its network's backlog without a newer one: an account whose
// transactions completed may not pump again to say so.
const backlogTTL = 30 * time.Second

// backlog is the gas of a network's transactions in flight, as each
// account's last pump noted it (noteBacklog), with their sum kept as notes
// change: a pump reads it without walking every account's note.
type backlog struct {
	mu     sync.Mutex
	notes  map[string]backlogNote
	total  uint64
	pruned time.Time
}

// backlogNote is one account's in-flight gas and when it was noted.
type backlogNote struct {
	gas uint64
	at  time.Time
}

// noteBacklog records that account has gas of transactions in flight on
// the network (0: none).
func (n *Network) noteBacklog(account string, gas uint64, now time.Time) {
	b := &n.backlog
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total -= b.notes[account].gas
	if gas == 0 {
		delete(b.notes, account)
		return
	}
	if b.notes == nil {
		b.notes = map[string]backlogNote{}
	}
	b.notes[account] = backlogNote{gas: gas, at: now}
	b.total += gas
}

// backlogAhead returns the in-flight gas the other accounts of the network
// noted (account's own is not counted). Notes older than backlogTTL are
// dropped by a sweep at most once a second, so one counts at most a second
// past its TTL.
func (n *Network) backlogAhead(account string, now time.Time) uint64 {
	b := &n.backlog
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.pruned) >= time.Second {
		b.pruned = now
		for id, note := range b.notes {
			if now.Sub(note.at) > backlogTTL {
				b.total -= note.gas
				delete(b.notes, id)
			}
		}
	}
	return b.total - b.notes[account].gas
}

// feeCapAhead is MaxFeePerGas(baseFee, tip) for a transaction with
// gasAhead of gas before it: the base fee may rise by 1/8 in each of the
// ⌊gasAhead / blockGas⌋ full blocks before its own (at most
// maxBlocksAhead), and the six of MaxFeePerGas's margin after.
func feeCapAhead(baseFee, tip *big.Int, gasAhead, blockGas uint64) *big.Int {
	blocks := uint64(0)
	if blockGas > 0 {
		blocks = min(gasAhead/blockGas, maxBlocksAhead)
	}
	fee, step := new(big.Int).Set(baseFee), new(big.Int)
	for range blocks {
		fee.Add(fee, step.Rsh(fee, 3)) // × 1.125, as EIP-1559's largest step
	}
	return MaxFeePerGas(fee, tip)
}
