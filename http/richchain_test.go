package http

import (
	"context"
	"fmt"
	"math/big"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/engine"
)

// richChain adds to fakeChain what the contract endpoints use: logs, block
// headers up to a head, transaction counts, fees and batched calls.
type richChain struct {
	*fakeChain
	mu      sync.Mutex
	head    uint64
	logs    []types.Log
	batches int
	// filterCalls counts FilterLogs calls; widest is the widest block
	// range one asked for.
	filterCalls int
	widest      uint64
	// maxRange and maxResults, when set, refuse wider ranges and ranges of
	// more logs as providers do (a log limit that halving cures).
	maxRange, maxResults int
	// tokens answer eth_call as the fake token does; roundTrips counts
	// the node round trips of eth_call (a batch is one), methodCalls the
	// calls per ERC-20 getter; batchErr, when set, refuses every batch.
	tokens      map[common.Address]bool
	roundTrips  int
	methodCalls map[string]int
	batchErr    error
}

// erc20Getters names the selectors of the ERC-20 getters.
var erc20Getters = func() map[string]string {
	m := map[string]string{}
	for _, g := range []string{"name", "symbol", "decimals", "totalSupply"} {
		m[string(crypto.Keccak256([]byte(g + "()"))[:4])] = g
	}
	return m
}()

func (r *richChain) CallContract(ctx context.Context, msg ethereum.CallMsg, n *big.Int) ([]byte, error) {
	r.mu.Lock()
	r.roundTrips++
	r.mu.Unlock()
	return r.answer(ctx, msg, n)
}

// answer answers one eth_call, counted per getter.
func (r *richChain) answer(ctx context.Context, msg ethereum.CallMsg, n *big.Int) ([]byte, error) {
	r.mu.Lock()
	if len(msg.Data) >= 4 {
		if g, ok := erc20Getters[string(msg.Data[:4])]; ok {
			if r.methodCalls == nil {
				r.methodCalls = map[string]int{}
			}
			r.methodCalls[g]++
		}
	}
	if msg.To != nil && r.tokens[*msg.To] {
		to := r.fakeChain.token
		msg.To = &to
	}
	r.mu.Unlock()
	return r.fakeChain.CallContract(ctx, msg, n)
}

func (r *richChain) HeaderByNumber(_ context.Context, n *big.Int) (*types.Header, error) {
	if n != nil && n.Uint64() > r.head {
		return nil, ethereum.NotFound
	}
	num := r.head
	if n != nil {
		num = n.Uint64()
	}
	return &types.Header{Number: new(big.Int).SetUint64(num), Time: 1_800_000_000 + num, GasLimit: 30_000_000,
		GasUsed: 21_000, BaseFee: big.NewInt(1_000), Coinbase: common.HexToAddress("0x00000000000000000000000000000000000000cc")}, nil
}

func (r *richChain) TransactionCount(context.Context, common.Hash) (uint, error) { return 3, nil }
func (r *richChain) SuggestGasPrice(context.Context) (*big.Int, error)           { return big.NewInt(2_000), nil }
func (r *richChain) SuggestGasTipCap(context.Context) (*big.Int, error)          { return big.NewInt(7), nil }

func (r *richChain) FilterLogs(_ context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	r.mu.Lock()
	r.filterCalls++
	width := q.ToBlock.Uint64() - q.FromBlock.Uint64() + 1
	r.widest = max(r.widest, width)
	r.mu.Unlock()
	if r.maxRange > 0 && width > uint64(r.maxRange) {
		return nil, fmt.Errorf("exceed maximum block range: %d", r.maxRange)
	}
	var out []types.Log
	for _, l := range r.logs {
		if l.BlockNumber < q.FromBlock.Uint64() || l.BlockNumber > q.ToBlock.Uint64() {
			continue
		}
		if len(q.Addresses) > 0 && !slices.Contains(q.Addresses, l.Address) {
			continue
		}
		if len(q.Topics) > 0 && len(q.Topics[0]) > 0 && !slices.Contains(q.Topics[0], l.Topics[0]) {
			continue
		}
		out = append(out, l)
	}
	if r.maxResults > 0 && len(out) > r.maxResults {
		return nil, fmt.Errorf("query returned more than %d results", r.maxResults)
	}
	return out, nil
}

func (r *richChain) BatchCall(ctx context.Context, reqs []engine.CallRequest) ([]engine.CallResult, error) {
	r.mu.Lock()
	r.batches++
	r.roundTrips++
	batchErr := r.batchErr
	r.mu.Unlock()
	if batchErr != nil {
		return nil, batchErr
	}
	out := make([]engine.CallResult, len(reqs))
	for i, q := range reqs {
		to := q.To
		data, err := r.answer(ctx, ethereum.CallMsg{From: q.From, To: &to, Data: q.Data}, nil)
		out[i] = engine.CallResult{Data: data, Err: err}
	}
	return out, nil
}

// contractEnv is a testEnv whose dev network runs on a richChain, with a
// response validator.
type contractEnv struct {
	*testEnv
	rich *richChain
	api  *openAPIValidator
}

func newContractEnv(t *testing.T) *contractEnv {
	env := newTestEnv(t)
	rich := &richChain{fakeChain: env.chain, head: 20}
	env.server.networks["dev"].Chain = rich
	return &contractEnv{testEnv: env, rich: rich, api: newOpenAPIValidator(t)}
}

// req sends a request and validates the response against template.
func (e *contractEnv) req(method, template, path, token, body string) *httptest.ResponseRecorder {
	e.t.Helper()
	rec := e.do(method, path, token, body)
	e.api.check(e.t, method, template, httptest.NewRequest(method, path, nil), rec)
	return rec
}
