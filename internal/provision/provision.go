// Package provision holds the set-up work that the txengine command does
// outside the request path: the operator user and its token, funding the
// operator's default account, and deploying and registering ERC-20 tokens.
// It serves both `txengine serve` (bootstrap) and `txengine token deploy`.
package provision

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm"
	"github.com/txengine/txengine/engine/keystore"
)

// OperatorStore is what EnsureOperator needs of the store.
type OperatorStore interface {
	FirstOperator(ctx context.Context) (*engine.User, error)
	CreateUser(ctx context.Context, u *engine.User, tokenHash []byte, account *engine.Account) error
	UserByTokenHash(ctx context.Context, tokenHash []byte) (*engine.User, error)
	AddToken(ctx context.Context, userID string, tokenHash []byte, idem *engine.IdempotencyRecord) error
	DefaultAccount(ctx context.Context, owner string) (*engine.Account, error)
}

// Operator is the operator user, its API token and its default account.
type Operator struct {
	User    *engine.User
	Token   string
	Account *engine.Account
	// Created is true when Token was issued by this call (a new operator,
	// or a token file that was missing or no longer valid): the only time
	// it may be shown; afterwards only the file holds it.
	Created bool
}

// EnsureOperator makes sure the operator user exists with a default account
// and that tokenPath (mode 0600) holds a valid token of it: the token in the
// file is kept when it still authenticates the operator, otherwise a new one
// is issued. An existing operator's account key must open with sealer
// (CheckMasterKey) before anything is written.
func EnsureOperator(ctx context.Context, store OperatorStore, sealer *keystore.KeySealer, tokenPath string) (*Operator, error) {
	op, err := store.FirstOperator(ctx)
	var token string
	created := false
	switch {
	case engine.IsNotFound(err):
		n, err := engine.MakeUser(sealer, engine.NewUserSpec{Operator: true, Token: true, Account: true}, engine.SystemClock{}.Now())
		if err != nil {
			return nil, fmt.Errorf("operator: %w", err)
		}
		if err := store.CreateUser(ctx, n.User, n.TokenHash, n.Account); err != nil {
			return nil, fmt.Errorf("create operator: %w", err)
		}
		op, token, created = n.User, n.Token, true
	case err != nil:
		return nil, fmt.Errorf("find operator: %w", err)
	default:
		acct, err := store.DefaultAccount(ctx, op.ID)
		if err != nil {
			return nil, fmt.Errorf("operator default account: %w", err)
		}
		if err := CheckMasterKey(sealer, acct); err != nil {
			return nil, err
		}
		if b, err := os.ReadFile(tokenPath); err == nil {
			token = strings.TrimSpace(string(b))
			if u, err := store.UserByTokenHash(ctx, keystore.HashToken(token)); err != nil || u.ID != op.ID {
				token = ""
			}
		}
		if token == "" {
			tok, hash, err := keystore.NewToken()
			if err != nil {
				return nil, fmt.Errorf("operator token: %w", err)
			}
			if err := store.AddToken(ctx, op.ID, hash, nil); err != nil {
				return nil, fmt.Errorf("operator token: %w", err)
			}
			token, created = tok, true
		}
	}
	if err := WriteSecretFile(tokenPath, []byte(token+"\n")); err != nil {
		return nil, fmt.Errorf("write operator token: %w", err)
	}
	acct, err := store.DefaultAccount(ctx, op.ID)
	if err != nil {
		return nil, fmt.Errorf("operator default account: %w", err)
	}
	return &Operator{User: op, Token: token, Account: acct, Created: created}, nil
}

// ErrWrongMasterKey is returned (wrapped) by CheckMasterKey when the master
// key does not open the stored account keys.
var ErrWrongMasterKey = errors.New("wrong master key")

// CheckMasterKey opens the sealed key of acct (the operator's default
// account, stored when the data was created) with sealer and drops it. It
// fails with ErrWrongMasterKey when the master key is not the one the
// store's keys were sealed with: the service would accept requests and then
// fail to sign every transaction. The message names the settings, never
// the key.
func CheckMasterKey(sealer *keystore.KeySealer, acct *engine.Account) error {
	plain, err := sealer.OpenAccountKey(acct.Address, acct.EncryptedKey)
	clear(plain)
	if err != nil {
		return fmt.Errorf("%w: the master key does not decrypt the account keys in this store (operator account %s); "+
			"start with the master key the store was created with (masterKey / TXENGINE_MASTER_KEY, or <data dir>/master.key when unset), "+
			"or with it among the previous master keys (previousMasterKeys / TXENGINE_PREVIOUS_MASTER_KEYS, or <data dir>/master.key.previous) while keys are rotated",
			ErrWrongMasterKey, acct.Address.Hex())
	}
	return nil
}

// WriteSecretFile writes data to path with mode 0600, atomically, creating
// path's directory (mode 0700) when it does not exist yet: with
// database.url and masterKey set, nothing else creates the data dir before
// the operator token is written there.
func WriteSecretFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// FundAndWait tops addrs up from faucet and waits until the funding
// transactions are mined.
func FundAndWait(ctx context.Context, net *engine.Network, faucet *engine.Faucet, addrs ...common.Address) error {
	hashes, err := faucet.Fund(ctx, addrs)
	if err != nil {
		return fmt.Errorf("fund on %s: %w", net.Name, err)
	}
	for _, h := range hashes {
		if _, err := evm.WaitMined(ctx, net.Chain, h); err != nil {
			return fmt.Errorf("fund on %s: %w", net.Name, err)
		}
	}
	return nil
}

// HasLiveToken reports whether owner has an ERC-20 registered on net whose
// code is on the chain (a dev chain that lost blocks may have lost it).
func HasLiveToken(ctx context.Context, store ContractStore, net *engine.Network, owner string) (bool, error) {
	existing, err := store.ListContracts(ctx, engine.ContractFilter{Owner: owner, Network: net.Name, Types: []string{engine.TypeERC20}})
	if err != nil {
		return false, fmt.Errorf("list tokens: %w", err)
	}
	for _, c := range existing {
		// totalSupply() succeeds only where the token's code is.
		if _, err := engine.ReadTokenInfo(ctx, net.Chain, c.Address); err == nil {
			return true, nil
		}
	}
	return false, nil
}
