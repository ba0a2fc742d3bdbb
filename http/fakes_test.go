package http

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine"
)

// fakeStore is an in-memory Store for the HTTP tests. The real stores pass
// their own contract tests; here only the behaviour the handlers rely on
// matters.
type fakeStore struct {
	mu        sync.Mutex
	users     map[string]*engine.User
	tokens    map[string]string // hex(hash) -> user id
	accounts  []*engine.Account
	contracts []*engine.Contract
	txs       map[string]*engine.Transaction
	seq       map[string]int64 // acceptance order of txs
	pingErr   error
	writes    int
	idem      map[string]*engine.IdempotencyRecord
	transfers []engine.TokenTransfer
	nftOwners []common.Address
}

var _ Store = (*fakeStore)(nil)

func newFakeStore() *fakeStore {
	return &fakeStore{
		users:  map[string]*engine.User{},
		tokens: map[string]string{},
		txs:    map[string]*engine.Transaction{},
	}
}

func (s *fakeStore) writeCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

func (s *fakeStore) CreateUser(_ context.Context, u *engine.User, tokenHash []byte, account *engine.Account) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[u.ID]; ok {
		return engine.ErrConflict
	}
	if err := s.putIdemLocked(u.Idempotency); err != nil {
		return err
	}
	cp := *u
	if cp.Root == "" {
		cp.Root = cp.ID
	}
	cp.Quota, cp.Idempotency = nil, nil
	s.users[u.ID] = &cp
	if tokenHash != nil {
		s.tokens[fmt.Sprintf("%x", tokenHash)] = u.ID
	}
	if account != nil {
		a := *account
		a.Default = true
		s.accounts = append(s.accounts, &a)
	}
	s.writes++
	return nil
}

func (s *fakeStore) UserByTokenHash(_ context.Context, tokenHash []byte) (*engine.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.tokens[fmt.Sprintf("%x", tokenHash)]
	if !ok {
		return nil, fmt.Errorf("user by token: %w", engine.ErrNotFound)
	}
	cp := *s.users[id]
	return &cp, nil
}

// FaucetGrantsSince is none: the fake records no faucet grants (the
// quota tests run on the SQLite store).
func (s *fakeStore) FaucetGrantsSince(context.Context, string, time.Time) (map[string]int, error) {
	return map[string]int{}, nil
}

func (s *fakeStore) UserByID(_ context.Context, id string) (*engine.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok {
		return nil, engine.ErrNotFound
	}
	cp := *u
	return &cp, nil
}

func (s *fakeStore) AddToken(_ context.Context, userID string, tokenHash []byte, idem *engine.IdempotencyRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.putIdemLocked(idem); err != nil {
		return err
	}
	s.tokens[fmt.Sprintf("%x", tokenHash)] = userID
	s.writes++
	return nil
}

func (s *fakeStore) FirstOperator(context.Context) (*engine.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.users {
		if u.Operator {
			cp := *u
			return &cp, nil
		}
	}
	return nil, engine.ErrNotFound
}

func (s *fakeStore) CreateAccount(_ context.Context, a *engine.Account) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.putIdemLocked(a.Idempotency); err != nil {
		return err
	}
	if a.Default {
		for _, o := range s.accounts {
			if o.Owner == a.Owner {
				o.Default = false
			}
		}
	}
	cp := *a
	s.accounts = append(s.accounts, &cp)
	s.writes++
	return nil
}

func (s *fakeStore) AccountByID(_ context.Context, id string) (*engine.Account, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.accounts {
		if a.ID == id {
			cp := *a
			return &cp, nil
		}
	}
	return nil, engine.ErrNotFound
}

func (s *fakeStore) AccountByAddress(_ context.Context, addr common.Address) (*engine.Account, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.accounts {
		if a.Address == addr {
			cp := *a
			return &cp, nil
		}
	}
	return nil, engine.ErrNotFound
}

func (s *fakeStore) DefaultAccount(_ context.Context, owner string) (*engine.Account, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.accounts {
		if a.Owner == owner && a.Default {
			cp := *a
			return &cp, nil
		}
	}
	return nil, engine.ErrNotFound
}

func (s *fakeStore) ListAccounts(_ context.Context, owner string) ([]*engine.Account, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*engine.Account
	for _, a := range s.accounts {
		if a.Owner == owner {
			cp := *a
			out = append(out, &cp)
		}
	}
	return out, nil
}

func (s *fakeStore) SetDefaultAccount(_ context.Context, owner, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.accounts {
		if a.Owner == owner {
			a.Default = a.ID == id
		}
	}
	s.writes++
	return nil
}

func (s *fakeStore) CreateContract(_ context.Context, c *engine.Contract) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.putIdemLocked(c.Idempotency); err != nil {
		return err
	}
	cp := *c
	s.contracts = append(s.contracts, &cp)
	s.writes++
	return nil
}

func (s *fakeStore) ContractByID(_ context.Context, id string) (*engine.Contract, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.contracts {
		if c.ID == id {
			cp := *c
			return &cp, nil
		}
	}
	return nil, fmt.Errorf("contract %s: %w", id, engine.ErrNotFound)
}

func (s *fakeStore) ListContracts(_ context.Context, f engine.ContractFilter) ([]*engine.Contract, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*engine.Contract
	for _, c := range s.contracts {
		if f.Owner != "" && c.Owner != f.Owner || f.Network != "" && c.Network != f.Network {
			continue
		}
		if len(f.Types) > 0 && !slices.Contains(f.Types, c.BWType) {
			continue
		}
		if f.Text != "" && !strings.Contains(strings.ToLower(c.Name+" "+c.Address.Hex()), strings.ToLower(f.Text)) {
			continue
		}
		cp := *c
		out = append(out, &cp)
	}
	return out, nil
}

func (s *fakeStore) TransactionByID(_ context.Context, id string) (*engine.Transaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, ok := s.txs[id]
	if !ok {
		return nil, engine.ErrNotFound
	}
	cp := *tx
	return &cp, nil
}

func (s *fakeStore) putTransaction(tx *engine.Transaction) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.putIdemLocked(tx.Idempotency); err != nil {
		return err
	}
	cp := *tx
	s.txs[tx.ID] = &cp
	if s.seq == nil {
		s.seq = map[string]int64{}
	}
	if _, known := s.seq[tx.ID]; !known {
		s.seq[tx.ID] = int64(len(s.seq) + 1)
	}
	return nil
}

func (s *fakeStore) Ping(context.Context) error { return s.pingErr }

// fakeEngine records Submit calls and stores what it accepts in the store,
// as the account actor does.
type fakeEngine struct {
	mu        sync.Mutex
	store     *fakeStore
	submitted []*engine.Transaction
	created   []*engine.Account
	settled   []string
	checked   []string
	submitErr error
}

func (e *fakeEngine) CheckInFlight(accountID, network string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.checked = append(e.checked, accountID+"@"+network)
}

func (e *fakeEngine) Submit(_ context.Context, tx *engine.Transaction) (*engine.Transaction, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.submitErr != nil {
		return nil, e.submitErr
	}
	cp := *tx
	if err := e.store.putTransaction(&cp); err != nil {
		return nil, err
	}
	e.submitted = append(e.submitted, &cp)
	return &cp, nil
}

func (e *fakeEngine) AccountCreated(_ context.Context, a *engine.Account) {
	e.mu.Lock()
	defer e.mu.Unlock()
	cp := *a
	e.created = append(e.created, &cp)
}

func (e *fakeEngine) Settled(_ context.Context, ids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settled = append(e.settled, ids...)
}

func (e *fakeEngine) submissions() []*engine.Transaction {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.submitted)
}

// fakeChain answers the ERC-20 reads of one token and the latest header.
type fakeChain struct {
	mu       sync.Mutex
	token    common.Address
	name     string
	symbol   string
	decimals uint8
	supply   *big.Int
	balances map[common.Address]*big.Int
	callErr  error
	headErr  error
	calls    int
}

var _ engine.Chain = (*fakeChain)(nil)

// testERC20ABI is the ABI registered with test tokens.
const testERC20ABI = `[
 {"type":"function","name":"name","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"string"}]},
 {"type":"function","name":"symbol","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"string"}]},
 {"type":"function","name":"decimals","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint8"}]},
 {"type":"function","name":"totalSupply","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint256"}]},
 {"type":"function","name":"balanceOf","stateMutability":"view","inputs":[{"name":"account","type":"address"}],"outputs":[{"name":"","type":"uint256"}]},
 {"type":"function","name":"transfer","stateMutability":"nonpayable","inputs":[{"name":"to","type":"address"},{"name":"value","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]},
 {"type":"event","name":"Transfer","anonymous":false,"inputs":[{"name":"from","type":"address","indexed":true},{"name":"to","type":"address","indexed":true},{"name":"value","type":"uint256","indexed":false}]}
]`

func (f *fakeChain) CallContract(_ context.Context, msg ethereum.CallMsg, _ *big.Int) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.callErr != nil {
		return nil, f.callErr
	}
	if msg.To == nil || *msg.To != f.token {
		return nil, nil // no code at the address
	}
	parsed, err := abi.JSON(strings.NewReader(testERC20ABI))
	if err != nil {
		return nil, err
	}
	if len(msg.Data) < 4 {
		return nil, errors.New("execution reverted")
	}
	m, err := parsed.MethodById(msg.Data[:4])
	if err != nil {
		return nil, errors.New("execution reverted")
	}
	switch m.Name {
	case "name":
		return m.Outputs.Pack(f.name)
	case "symbol":
		return m.Outputs.Pack(f.symbol)
	case "decimals":
		return m.Outputs.Pack(f.decimals)
	case "totalSupply":
		return m.Outputs.Pack(f.supply)
	case "balanceOf":
		args, err := m.Inputs.Unpack(msg.Data[4:])
		if err != nil {
			return nil, err
		}
		bal := f.balances[args[0].(common.Address)]
		if bal == nil {
			bal = new(big.Int)
		}
		return m.Outputs.Pack(bal)
	}
	return nil, errors.New("execution reverted")
}

func (f *fakeChain) HeaderByNumber(context.Context, *big.Int) (*types.Header, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.headErr != nil {
		return nil, f.headErr
	}
	return &types.Header{Number: big.NewInt(7)}, nil
}

func (f *fakeChain) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeChain) ChainID(context.Context) (*big.Int, error) { return big.NewInt(1337), nil }
func (f *fakeChain) NonceAt(context.Context, common.Address, *big.Int) (uint64, error) {
	return 0, errors.New("not in fake")
}
func (f *fakeChain) PendingNonceAt(context.Context, common.Address) (uint64, error) {
	return 0, errors.New("not in fake")
}
func (f *fakeChain) BalanceAt(context.Context, common.Address, *big.Int) (*big.Int, error) {
	return nil, errors.New("not in fake")
}
func (f *fakeChain) EstimateGas(context.Context, ethereum.CallMsg) (uint64, error) {
	return 0, errors.New("not in fake")
}
func (f *fakeChain) SuggestGasPrice(context.Context) (*big.Int, error) {
	return nil, errors.New("not in fake")
}
func (f *fakeChain) SuggestGasTipCap(context.Context) (*big.Int, error) {
	return nil, errors.New("not in fake")
}
func (f *fakeChain) SendTransaction(context.Context, *types.Transaction) error {
	return errors.New("not in fake")
}
func (f *fakeChain) BlockReceipts(context.Context, uint64) ([]*types.Receipt, error) {
	return nil, errors.New("not in fake")
}
func (f *fakeChain) TransactionReceipt(context.Context, common.Hash) (*types.Receipt, error) {
	return nil, errors.New("not in fake")
}

// fixedClock is a Clock that stands still.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// bytesEqual is bytes.Equal, named for readability in assertions.
func bytesEqual(a, b []byte) bool { return bytes.Equal(a, b) }
