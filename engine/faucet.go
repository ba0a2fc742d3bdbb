package engine

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// faucetChain is what a Faucet calls on its network's node: its nonces,
// balances, fees, an estimate and broadcasts.
type faucetChain interface {
	NonceReader
	PendingNonceAt(ctx context.Context, account common.Address) (uint64, error)
	BalanceReader
	feeSource
	ethereum.GasEstimator
	ethereum.TransactionSender
}

// chain returns the network's node as the faucet uses it.
func (f *Faucet) chain() faucetChain { return f.net.Chain }

// Faucet gives new accounts ETH for gas from a funded key of the network.
// It is not safe for concurrent use; the faucet actor owns it.
//
// It funds in batches: one call reads the balances of every address asked
// in one JSON-RPC batch, estimates the gas of one value transfer for all of
// them (a plain transfer to an account without code costs every such
// recipient alike), and broadcasts the transfers in one batch. It keeps at
// most FaucetMaxInFlight of its own transfers unconfirmed, so funding
// thousands of new accounts at once neither fills the node's pool nor has
// the faucet's transfers refused: the addresses beyond that wait for the
// next call (FundSome returns them).
type Faucet struct {
	net    *Network
	key    *ecdsa.PrivateKey
	from   common.Address
	amount *big.Int

	// next is the nonce after the faucet's last send, at sentAt. A node's
	// pending nonce can lag a send just accepted (geth updates its pool's
	// nonces asynchronously): funding two accounts in quick succession
	// then reused a nonce ("replacement transaction underpriced") and left
	// the second account without gas. next is trusted only for
	// nonceMemory after a send, so a send the node dropped cannot hold the
	// faucet ahead of the chain for long.
	next   uint64
	sentAt time.Time
	// funded holds the addresses the faucet sent to within fundedMemory,
	// with when: their balance reads zero until the transfer is mined, and
	// asking again meanwhile must not pay them twice.
	funded map[common.Address]time.Time
}

// Bounds of the faucet's batches.
const (
	// nonceMemory is how long the faucet prefers its own count of sent
	// transactions to a lower pending nonce of the node.
	nonceMemory = 10 * time.Second
	// fundedMemory is how long an address the faucet sent to is not paid
	// again (its transfer is mined within a few blocks, or dropped).
	fundedMemory = 2 * time.Minute
	// FaucetMaxInFlight bounds the faucet's unconfirmed transfers (a
	// fraction of geth's default pool of 5,120 pending slots).
	FaucetMaxInFlight = 1024
)

// NewFaucet returns the faucet of net paying amount wei per account.
func NewFaucet(net *Network, key *ecdsa.PrivateKey, amount *big.Int) *Faucet {
	return &Faucet{net: net, key: key, from: crypto.PubkeyToAddress(key.PublicKey), amount: amount,
		funded: map[common.Address]time.Time{}}
}

// Address is the faucet's address.
func (f *Faucet) Address() common.Address { return f.from }

// Key is the faucet's private key (used at start-up to deploy the demo token).
func (f *Faucet) Key() *ecdsa.PrivateKey { return f.key }

// Fund tops up every address of to whose balance is below half the faucet
// amount to at least the amount, waiting (until ctx ends) while the faucet
// has FaucetMaxInFlight transfers unconfirmed. It returns the hashes of the
// transactions sent.
func (f *Faucet) Fund(ctx context.Context, to []common.Address) ([]common.Hash, error) {
	var hashes []common.Hash
	backoff := Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second}
	for attempt := 1; len(to) > 0; attempt++ {
		h, later, err := f.FundSome(ctx, to)
		hashes = append(hashes, h...)
		if err != nil {
			return hashes, err
		}
		if len(later) == 0 {
			break
		}
		to = later
		select {
		case <-ctx.Done():
			return hashes, fmt.Errorf("faucet: %d addresses not funded: %w", len(to), ctx.Err())
		case <-time.After(backoff.Wait(attempt, 0)):
		}
	}
	return hashes, nil
}

// FundSome is Fund without waiting: it funds what the faucet's room for
// unconfirmed transfers allows and returns the addresses to ask for again
// later (the rest, and those the node refused for capacity). An error means
// the node failed; none of the addresses not in hashes was funded then.
func (f *Faucet) FundSome(ctx context.Context, to []common.Address) (hashes []common.Hash, later []common.Address, err error) {
	now := time.Now()
	for a, at := range f.funded {
		if now.Sub(at) > fundedMemory {
			delete(f.funded, a)
		}
	}
	to = f.unfunded(to)
	if len(to) == 0 {
		return nil, nil, nil
	}
	nonce, room, err := f.nonce(ctx)
	if err != nil {
		return nil, nil, err
	}
	if room <= 0 {
		return nil, to, nil
	}
	need, err := f.needing(ctx, to)
	if err != nil {
		return nil, nil, err
	}
	if len(need) > room {
		need, later = need[:room], append(later, need[room:]...)
	}
	if len(need) == 0 {
		return nil, later, nil
	}
	signed, err := f.sign(ctx, need, nonce)
	if err != nil {
		return nil, nil, err
	}
	errs, err := SendAll(ctx, f.chain(), signed)
	if err != nil {
		// The outcome of every send is unknown: the next call reads the
		// node's nonce and balances again.
		f.next = 0
		return nil, nil, fmt.Errorf("faucet send: %w", err)
	}
	for i, tx := range signed {
		if kind := ClassifyNodeError(errs[i]); kind != NodeOK && kind != NodeAlreadyKnown {
			// This one and the ones after it (their nonces follow it)
			// are asked again; the next call signs from this nonce.
			f.next, f.sentAt = tx.Nonce(), time.Now()
			switch {
			case kind == NodeNonceTooLow:
				f.next = 0 // used elsewhere: the node's pending nonce decides
			case !capacityRefusal(kind):
				err = fmt.Errorf("faucet send to %s: %w", need[i].Hex(), errs[i])
			}
			return hashes, append(need[i:], later...), err
		}
		hashes = append(hashes, tx.Hash())
		f.funded[need[i]] = now
		f.next, f.sentAt = tx.Nonce()+1, now
	}
	return hashes, later, nil
}

// unfunded returns the addresses of to, once each, that the faucet did not
// send to within fundedMemory.
func (f *Faucet) unfunded(to []common.Address) []common.Address {
	out := make([]common.Address, 0, len(to))
	seen := make(map[common.Address]bool, len(to))
	for _, a := range to {
		if _, sent := f.funded[a]; !sent && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// nonce returns the nonce of the faucet's next transfer and how many more
// it may have unconfirmed.
func (f *Faucet) nonce(ctx context.Context) (next uint64, room int, err error) {
	pending, err := f.chain().PendingNonceAt(ctx, f.from)
	if err != nil {
		return 0, 0, fmt.Errorf("faucet nonce: %w", err)
	}
	if f.next > pending && time.Since(f.sentAt) < nonceMemory {
		pending = f.next
	}
	mined, err := f.chain().NonceAt(ctx, f.from, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("faucet mined nonce: %w", err)
	}
	inFlight := 0
	if pending > mined {
		inFlight = int(min(pending-mined, uint64(FaucetMaxInFlight)))
	}
	return pending, FaucetMaxInFlight - inFlight, nil
}

// needing returns the addresses of to whose balance is below half the
// faucet amount, read in one batch.
func (f *Faucet) needing(ctx context.Context, to []common.Address) ([]common.Address, error) {
	qs := make([]BalanceQuery, len(to))
	for i, a := range to {
		qs[i] = BalanceQuery{ETH: true, Holder: a}
	}
	bals, errs, err := Balances(ctx, f.chain(), qs)
	if err != nil {
		return nil, fmt.Errorf("faucet balances: %w", err)
	}
	half := new(big.Int).Rsh(f.amount, 1)
	need := make([]common.Address, 0, len(to))
	for i, a := range to {
		if errs[i] != nil {
			return nil, fmt.Errorf("faucet balance of %s: %w", a.Hex(), errs[i])
		}
		if bals[i] == nil || bals[i].Cmp(half) < 0 {
			need = append(need, a)
		}
	}
	return need, nil
}

// errNoFunds is the faucet's own balance being too low to pay.
var errNoFunds = errors.New("faucet: its own balance cannot pay the transfer")

// sign returns the transfers to to, with nonces from nonce on. The gas of
// the first is estimated and used for all: each pays the same value to an
// address without code (a new custodial account), which costs alike.
func (f *Faucet) sign(ctx context.Context, to []common.Address, nonce uint64) ([]*types.Transaction, error) {
	head, err := f.chain().HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("faucet head: %w", err)
	}
	gas, err := f.chain().EstimateGas(ctx, ethereum.CallMsg{From: f.from, To: &to[0], Value: f.amount})
	if err != nil {
		if ClassifyNodeError(err) == NodeInsufficientFunds {
			return nil, errNoFunds
		}
		return nil, fmt.Errorf("faucet estimate: %w", err)
	}
	var tip, price *big.Int
	if head.BaseFee != nil {
		if tip, err = f.chain().SuggestGasTipCap(ctx); err != nil {
			return nil, fmt.Errorf("faucet tip: %w", err)
		}
	} else if price, err = f.chain().SuggestGasPrice(ctx); err != nil {
		return nil, fmt.Errorf("faucet gas price: %w", err)
	}
	signer := types.LatestSignerForChainID(f.net.ChainID)
	out := make([]*types.Transaction, len(to))
	for i := range to {
		addr := to[i]
		var unsigned *types.Transaction
		if head.BaseFee != nil {
			unsigned = types.NewTx(&types.DynamicFeeTx{ChainID: f.net.ChainID, Nonce: nonce + uint64(i), GasTipCap: tip,
				GasFeeCap: MaxFeePerGas(head.BaseFee, tip), Gas: gas, To: &addr, Value: f.amount})
		} else {
			unsigned = types.NewTx(&types.LegacyTx{Nonce: nonce + uint64(i), GasPrice: price, Gas: gas, To: &addr, Value: f.amount})
		}
		if out[i], err = types.SignTx(unsigned, signer, f.key); err != nil {
			return nil, fmt.Errorf("faucet sign: %w", err)
		}
	}
	return out, nil
}
