package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/txengine/txengine/engine/abicodec"
)

// Bounds of a send's inputs.
const (
	// MaxMethodLen bounds a method name or full signature.
	MaxMethodLen = 1024
	// MaxDependsOn bounds the dependencies of one transaction.
	MaxDependsOn = 100
	// MaxWaitTimeout bounds waitTimeout, in seconds: 30 days.
	MaxWaitTimeout = 30 * 24 * 3600
	// MaxCallbackURLLen bounds one callback URL.
	MaxCallbackURLLen = 2048
)

// CheckMethodName refuses a method name or signature longer than
// MaxMethodLen characters as invalid_argument on field "method".
func CheckMethodName(name string) error {
	if utf8.RuneCountInString(name) > MaxMethodLen {
		return Invalid("method", "method is longer than %d characters", MaxMethodLen)
	}
	return nil
}

// SendTarget is the contract a send calls.
type SendTarget struct {
	Network string
	Address common.Address
	ABI     *abi.ABI
	// RawABI is stored on the transaction when Contract is nil (direct
	// use), so the follower can decode its events.
	RawABI json.RawMessage
	BWType string
	// Contract is the registered contract; nil for direct use.
	Contract *Contract
}

// SendOptions are the optional fields of every request that creates a
// transaction (sends and token transfers).
type SendOptions struct {
	// From is an address or an account id of one of the caller's accounts;
	// absent means the caller's default account.
	From      *string
	Callbacks []string
	// WaitForAsset ("ETH", a token contract id or a token address on the
	// same network) and WaitForValue (decimal, smallest unit) go together.
	WaitForAsset *string
	WaitForValue *string
	DependsOn    []string
	// WaitTimeout is how many seconds the conditions may take.
	WaitTimeout *int64
	// Pool is the id of one of the caller's sender pools, in place of
	// From: the pool assigns the sending member (docs/pools.md).
	Pool *string
	// OrderingKey (with Pool only) keeps the sends of one key on one
	// member, in order.
	OrderingKey *string
}

// SendRequest is a call of Method on Target with Args (JSON values) and
// Value wei, asked by the user Owner.
type SendRequest struct {
	Owner   string
	Target  SendTarget
	Method  string
	Args    []json.RawMessage
	Value   *big.Int
	Options SendOptions
	// Asset and AssetValue are what the send moves besides Value: a token
	// transfer's token (EIP-55 address) and amount. Empty for other sends,
	// whose need of a pool member is Value of "ETH".
	Asset      string
	AssetValue *big.Int
}

// SendLookup finds the caller's objects that a send names. Each lookup
// answers not_found on its field for an object that is not the caller's;
// the API implements it over its caches.
type SendLookup interface {
	// Sender resolves from (an address or an account id) to one of
	// owner's accounts; nil means owner's default account.
	Sender(ctx context.Context, owner string, from *string) (*Account, error)
	// OwnContract returns owner's contract id, or not_found on field.
	OwnContract(ctx context.Context, owner, id, field string) (*Contract, error)
	// TransactionByID and AccountByID are the store's (any owner).
	TransactionByID(ctx context.Context, id string) (*Transaction, error)
	AccountByID(ctx context.Context, id string) (*Account, error)
	// OwnPool returns owner's sender pool id, or not_found on field.
	OwnPool(ctx context.Context, owner, id, field string) (*Pool, error)
	// AssignPoolMember gives a send through p the member that covers need
	// (the engine's balancer).
	AssignPoolMember(ctx context.Context, p *Pool, need PoolNeed) (PoolAssignment, error)
}

// Builder is the one builder of transactions: it resolves the method on
// the target, encodes the arguments, checks the value against the method's
// payability, validates the options and returns the transaction, ready for
// Submit. Nothing is stored.
type Builder struct {
	Lookup SendLookup
	Clock  Clock
	// MaxCallbacks bounds the callback URLs of one transaction.
	MaxCallbacks int
	// AllowPrivateCallbacks accepts callback URLs that CheckCallbackHost
	// refuses (local development and tests).
	AllowPrivateCallbacks bool
}

// Build builds the transaction of r; its errors are coded (invalid_argument
// or not_found on the field at fault) or wrapped store failures.
func (b Builder) Build(ctx context.Context, r SendRequest) (*Transaction, error) {
	if err := CheckMethodName(r.Method); err != nil {
		return nil, err
	}
	m, err := abicodec.FindMethod(r.Target.ABI, r.Method)
	if err != nil {
		return nil, CodecError(err)
	}
	data, params, err := abicodec.PackCall(m, r.Args)
	if err != nil {
		return nil, CodecError(err)
	}
	value := r.Value
	if value == nil {
		value = new(big.Int)
	}
	if value.Sign() > 0 && !m.IsPayable() {
		return nil, Invalid("value", "%s is not payable: value must be 0 or absent", m.Sig)
	}
	opts := r.Options
	callbacks, err := b.CallbackURLs(opts.Callbacks)
	if err != nil {
		return nil, err
	}
	asset, assetValue, err := b.waitFor(ctx, r.Owner, r.Target.Network, opts.WaitForAsset, opts.WaitForValue)
	if err != nil {
		return nil, err
	}
	deps, err := b.dependencies(ctx, r.Owner, opts.DependsOn)
	if err != nil {
		return nil, err
	}
	if opts.WaitTimeout != nil && (*opts.WaitTimeout < 1 || *opts.WaitTimeout > MaxWaitTimeout) {
		return nil, Invalid("waitTimeout", "waitTimeout must be a whole number of seconds from 1 to %d", MaxWaitTimeout)
	}
	ps, err := b.poolSend(ctx, r, value)
	if err != nil {
		return nil, err
	}
	from := ps.member()
	if ps == nil {
		if from, err = b.Lookup.Sender(ctx, r.Owner, opts.From); err != nil {
			return nil, err
		}
	}
	tx := &Transaction{
		ID:              NewID(),
		Owner:           r.Owner,
		AccountID:       from.ID,
		Network:         r.Target.Network,
		From:            from.Address,
		ContractAddress: r.Target.Address,
		ContractBWType:  r.Target.BWType,
		Method:          m.RawName,
		Parameters:      params,
		Data:            data,
		Value:           value,
		Status:          StatusNew,
		Created:         b.Clock.Now(),
		Callbacks:       callbacks,
		DependsOn:       deps,
		WaitForAsset:    asset,
		WaitForValue:    assetValue,
	}
	ps.apply(tx)
	if opts.WaitTimeout != nil {
		until := tx.Created.Add(time.Duration(*opts.WaitTimeout) * time.Second)
		tx.WaitUntil = &until
	}
	if ct := r.Target.Contract; ct != nil {
		tx.ContractID, tx.ContractName = ct.ID, ct.Name
	} else {
		tx.ABI = r.Target.RawABI
	}
	return tx, nil
}

// CallbackURLs validates callback URLs: absolute http(s), bounded in
// number and length, and (unless AllowPrivateCallbacks) not aimed at an
// address callbacks may not reach, by name or literally (CheckCallbackHost;
// the dispatcher checks resolved names when it connects).
func (b Builder) CallbackURLs(urls []string) ([]string, error) {
	if len(urls) > b.MaxCallbacks {
		return nil, Invalid("callbacks", "at most %d callbacks are allowed", b.MaxCallbacks)
	}
	for _, raw := range urls {
		if len(raw) > MaxCallbackURLLen {
			return nil, Invalid("callbacks", "a callback URL is longer than %d characters", MaxCallbackURLLen)
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
			return nil, Invalid("callbacks", "callback %q is not an absolute http(s) URL", raw)
		}
		if b.AllowPrivateCallbacks {
			continue
		}
		if err := CheckCallbackHost(u.Hostname()); err != nil {
			return nil, Invalid("callbacks", "callback %q is refused: %v", raw, err)
		}
	}
	return urls, nil
}

// waitFor validates waitForAsset and waitForValue, which go together. The
// asset is stored normalized: "ETH" or the token's EIP-55 address.
func (b Builder) waitFor(ctx context.Context, owner, network string, asset, value *string) (string, *big.Int, error) {
	switch {
	case asset == nil && value == nil:
		return "", nil, nil
	case asset == nil:
		return "", nil, Invalid("waitForAsset", "waitForAsset is required with waitForValue")
	case value == nil:
		return "", nil, Invalid("waitForValue", "waitForValue is required with waitForAsset")
	}
	amount, err := ParseAmount("waitForValue", *value)
	if err != nil {
		return "", nil, err
	}
	a := strings.TrimSpace(*asset)
	switch {
	case strings.EqualFold(a, AssetETH):
		return AssetETH, amount, nil
	case IsAddressLike(a):
		addr, err := ParseAddress("waitForAsset", a)
		if err != nil {
			return "", nil, err
		}
		return addr.Hex(), amount, nil
	}
	id, err := uuid.Parse(a)
	if err != nil || len(a) != 36 {
		return "", nil, Invalid("waitForAsset", `waitForAsset must be "ETH", a token contract id or a token address`)
	}
	ct, err := b.Lookup.OwnContract(ctx, owner, id.String(), "waitForAsset")
	if err != nil {
		return "", nil, err
	}
	if !ct.IsToken() {
		return "", nil, Invalid("waitForAsset", "contract %s is not a token", ct.ID)
	}
	if ct.Network != network {
		return "", nil, Invalid("waitForAsset", "token %s is on network %s, the transaction on %s", ct.ID, ct.Network, network)
	}
	return ct.Address.Hex(), amount, nil
}

// dependencies validates dependsOn: ids of transactions of owner
// (requested by owner or sent from one of owner's accounts). Duplicates
// are dropped; unknown and foreign ids are not found.
func (b Builder) dependencies(ctx context.Context, owner string, ids []string) ([]string, error) {
	if ids == nil {
		return nil, nil
	}
	if len(ids) > MaxDependsOn {
		return nil, Invalid("dependsOn", "at most %d dependencies are allowed", MaxDependsOn)
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(ids))
	for _, raw := range ids {
		id, err := uuid.Parse(raw)
		if err != nil || len(raw) != 36 {
			return nil, Invalid("dependsOn", "dependsOn must list transaction ids; %q is not one", raw)
		}
		key := id.String()
		if seen[key] {
			continue
		}
		seen[key] = true
		dep, err := b.Lookup.TransactionByID(ctx, key)
		if IsNotFound(err) {
			return nil, Errorf(CodeNotFound, "dependsOn", "transaction %s not found", key)
		}
		if err != nil {
			return nil, fmt.Errorf("dependency %s: %w", key, err)
		}
		if dep.Owner != owner {
			a, err := b.Lookup.AccountByID(ctx, dep.AccountID)
			if err != nil && !IsNotFound(err) {
				return nil, fmt.Errorf("dependency %s: account: %w", key, err)
			}
			if err != nil || a.Owner != owner {
				return nil, Errorf(CodeNotFound, "dependsOn", "transaction %s not found", key)
			}
		}
		out = append(out, key)
	}
	return out, nil
}
