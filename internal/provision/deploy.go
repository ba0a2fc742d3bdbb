package provision

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"log/slog"
	"math/big"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/contracts"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm"
)

// ContractStore is what deployment needs of the store.
type ContractStore interface {
	CreateContract(ctx context.Context, c *engine.Contract) error
	ListContracts(ctx context.Context, f engine.ContractFilter) ([]*engine.Contract, error)
}

// Deployment describes a built-in contract to deploy and register.
type Deployment struct {
	Artifact contracts.Artifact
	// Args are the constructor's arguments.
	Args []any
	// Name, Type (engine.TypeERC20, ...) and Owner (a user id) are those of
	// the registration.
	Name, Type, Owner string
	// After, when set, runs once the contract is mined at addr, before it
	// is registered (a first mint, say).
	After func(ctx context.Context, addr common.Address) error
}

// Deploy deploys d on net, paid by key, and registers it to d.Owner. After
// a hard kill an embedded chain may come back without the block of an
// earlier deployment: the same key and nonce then deploy again at the same
// address, and the registration already stored for it is returned.
func Deploy(ctx context.Context, store ContractStore, net *engine.Network, key *ecdsa.PrivateKey, d Deployment) (*engine.Contract, error) {
	data, err := d.Artifact.DeployData(d.Args...)
	if err != nil {
		return nil, fmt.Errorf("deploy %s: %w", d.Name, err)
	}
	head, err := net.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("deploy %s on %s: head: %w", d.Name, net.Name, err)
	}
	addr, _, err := evm.Deploy(ctx, net.Chain, key, data)
	if err != nil {
		return nil, fmt.Errorf("deploy %s on %s: %w", d.Name, net.Name, err)
	}
	if d.After != nil {
		if err := d.After(ctx, addr); err != nil {
			return nil, fmt.Errorf("deploy %s on %s: %w", d.Name, net.Name, err)
		}
	}
	registered, err := store.ListContracts(ctx, engine.ContractFilter{Owner: d.Owner, Network: net.Name, Types: []string{d.Type}})
	if err != nil {
		return nil, fmt.Errorf("register %s %s on %s: %w", d.Name, addr.Hex(), net.Name, err)
	}
	for _, c := range registered {
		if c.Address == addr {
			return c, nil
		}
	}
	c := &engine.Contract{
		ID: engine.NewID(), Owner: d.Owner, Name: d.Name, Network: net.Name, Address: addr,
		ABI: d.Artifact.ABI, BWType: d.Type, BWVer: "1", Block: head.Number.Uint64(), Created: engine.SystemClock{}.Now(),
	}
	if err := store.CreateContract(ctx, c); err != nil {
		return nil, fmt.Errorf("register %s %s on %s: %w", d.Name, addr.Hex(), net.Name, err)
	}
	return c, nil
}

// Token describes an ERC-20 to deploy.
type Token struct {
	Name, Symbol string
	// Supply is minted to Holder (in the token's smallest unit, 18 decimals).
	Supply *big.Int
	Holder common.Address
	// Owner is the user the contract is registered to.
	Owner string
}

// DeployToken deploys the built-in ERC-20 on net, paid by key, and registers
// it to t.Owner as a token of type erc20.
func DeployToken(ctx context.Context, store ContractStore, net *engine.Network, key *ecdsa.PrivateKey, t Token) (*engine.Contract, error) {
	if t.Supply == nil || t.Supply.Sign() < 0 {
		return nil, fmt.Errorf("deploy token: supply must be a non-negative amount")
	}
	return Deploy(ctx, store, net, key, Deployment{
		Artifact: contracts.ERC20(), Args: []any{t.Name, t.Symbol, t.Supply, t.Holder},
		Name: t.Name, Type: engine.TypeERC20, Owner: t.Owner,
	})
}

// demoSupply is the demo token's supply: one million tokens of 18 decimals.
var demoSupply = new(big.Int).Mul(big.NewInt(1_000_000), new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil))

// systemNFTName is the registered name of the embedded default's System NFT.
const systemNFTName = "System NFT"

// EnsureDemo sets up the embedded default's contracts on dev, paid by
// faucet and registered to the operator, unless live ones are registered
// already: the demo ERC-20 (its supply to the operator's default account)
// and the System NFT, whose token 1 goes to that account (the treasury,
// whose demo tokens then do not count as circulating). It returns the
// System NFT's address.
func EnsureDemo(ctx context.Context, store ContractStore, dev *engine.Network, faucet *engine.Faucet, op *Operator, log *slog.Logger) (common.Address, error) {
	live, err := HasLiveToken(ctx, store, dev, op.User.ID)
	if err != nil {
		return common.Address{}, fmt.Errorf("demo token: %w", err)
	}
	if !live {
		c, err := DeployToken(ctx, store, dev, faucet.Key(), Token{
			Name: "Demo Token", Symbol: "DEMO", Supply: demoSupply, Holder: op.Account.Address, Owner: op.User.ID,
		})
		if err != nil {
			return common.Address{}, fmt.Errorf("demo token: %w", err)
		}
		log.Info("deployed demo token", "address", c.Address.Hex(), "contract", c.ID)
	}
	nft, deployed, err := ensureSystemNFT(ctx, store, dev, faucet, op)
	if err != nil {
		return common.Address{}, fmt.Errorf("system NFT: %w", err)
	}
	if deployed {
		log.Info("deployed system NFT", "address", nft.Address.Hex(), "contract", nft.ID)
	}
	return nft.Address, nil
}

// ensureSystemNFT returns the operator's System NFT on dev, deploying it
// (and minting token 1 to the operator's default account) when none is
// registered or the registered one's code is not on the chain (a dev chain
// that lost blocks); deployed says which.
func ensureSystemNFT(ctx context.Context, store ContractStore, dev *engine.Network, faucet *engine.Faucet, op *Operator) (c *engine.Contract, deployed bool, err error) {
	existing, err := store.ListContracts(ctx, engine.ContractFilter{Owner: op.User.ID, Network: dev.Name, Types: []string{engine.TypeERC721}})
	if err != nil {
		return nil, false, err
	}
	for _, c := range existing {
		if c.Name != systemNFTName {
			continue
		}
		if _, err := dev.Chain.CallContract(ctx, ethereum.CallMsg{To: &c.Address, Data: common.FromHex("0x06fdde03")}, nil); err == nil {
			return c, false, nil // name() answers: the contract is there
		}
	}
	art := contracts.SystemNFT()
	parsed, err := art.ParsedABI()
	if err != nil {
		return nil, false, err
	}
	c, err = Deploy(ctx, store, dev, faucet.Key(), Deployment{
		Artifact: art, Args: []any{systemNFTName, "SYS", faucet.Address()},
		Name: systemNFTName, Type: engine.TypeERC721, Owner: op.User.ID,
		After: func(ctx context.Context, addr common.Address) error {
			mint, err := parsed.Pack("mint", op.Account.Address, big.NewInt(1))
			if err != nil {
				return err
			}
			if _, err := evm.Transact(ctx, dev.Chain, faucet.Key(), &addr, nil, mint); err != nil {
				return fmt.Errorf("mint: %w", err)
			}
			return nil
		},
	})
	return c, err == nil, err
}
