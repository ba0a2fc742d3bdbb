package http

import (
	"bytes"
	"context"
	"errors"
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

// fakeEngine records Submit calls and stores what it accepts in the store,
// as the account actor does.
type fakeEngine struct {
	mu        sync.Mutex
	store     *testStore
	submitted []*engine.Transaction
	created   []*engine.Account
	settled   []string
	checked   []string
	submitErr error
	// stuck is what NonceStuck answers, by account@network.
	stuck map[string]engine.NonceHealth
	// assign, when set, answers AssignPoolMember; needs records what it
	// was asked.
	assign func(p *engine.Pool, need engine.PoolNeed) (engine.PoolAssignment, error)
	needs  []engine.PoolNeed
	// poolStatus is what PoolStatus answers; poolsChanged records
	// PoolChanged.
	poolStatus   engine.PoolStatus
	poolsChanged []engine.Pool
	// poolShort is what PoolShort answers, by pool id.
	poolShort map[string]string
}

// NonceStuck answers from e.stuck, as actors.System does from its book.
func (e *fakeEngine) NonceStuck(accountID, network string) (engine.NonceHealth, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h, ok := e.stuck[accountID+"@"+network]
	return h, ok
}

func (e *fakeEngine) CheckInFlight(accountID, network string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.checked = append(e.checked, accountID+"@"+network)
}

func (e *fakeEngine) Submit(ctx context.Context, tx *engine.Transaction) (*engine.Transaction, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.submitErr != nil {
		return nil, e.submitErr
	}
	cp := *tx
	if err := e.store.InsertTransactions(ctx, []*engine.Transaction{&cp}); err != nil {
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
// It implements what the Server reads (chainReader); the rest of a node
// (estimates, broadcasts, receipts) the Server never calls.
type fakeChain struct {
	engine.Node // not called

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
	// nonce answers NonceAt when set (nil: "not in fake"); nonceHangs
	// makes NonceAt wait for its context instead.
	nonce      *uint64
	nonceHangs bool
}

var _ chainReader = (*fakeChain)(nil)

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
func (f *fakeChain) NonceAt(ctx context.Context, _ common.Address, _ *big.Int) (uint64, error) {
	f.mu.Lock()
	nonce, hangs := f.nonce, f.nonceHangs
	f.mu.Unlock()
	if hangs {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	if nonce == nil {
		return 0, errors.New("not in fake")
	}
	return *nonce, nil
}
func (f *fakeChain) BalanceAt(context.Context, common.Address, *big.Int) (*big.Int, error) {
	return nil, errors.New("not in fake")
}
func (f *fakeChain) SuggestGasPrice(context.Context) (*big.Int, error) {
	return nil, errors.New("not in fake")
}
func (f *fakeChain) SuggestGasTipCap(context.Context) (*big.Int, error) {
	return nil, errors.New("not in fake")
}

// fixedClock is a Clock that stands still.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// bytesEqual is bytes.Equal, named for readability in assertions.
func bytesEqual(a, b []byte) bool { return bytes.Equal(a, b) }
