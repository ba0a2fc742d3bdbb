package engine

import (
	"context"
	"fmt"
	"math/big"
	"sync"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
)

// TokenStatic is what an ERC-20 token says about itself that does not
// change once deployed: a reader may keep it per (network, address).
type TokenStatic struct {
	Name     string
	Symbol   string
	Decimals uint8
}

// TokenRead asks for one token's TokenInfo: all of it, or with Static
// known, its totalSupply alone.
type TokenRead struct {
	Address common.Address
	Static  *TokenStatic
}

// TokenReads is the outcome of ReadTokenInfos: per token its info or its
// error (as ReadTokenInfo returns them).
type TokenReads struct {
	Infos []TokenInfo
	Errs  []error
}

// tokenCallParallel bounds the single calls of ReadTokenInfos when the
// chain is no BatchCaller.
const tokenCallParallel = 8

// tokenMethods are the getters a TokenRead without Static calls, in the
// order ReadTokenInfo calls them (the first failure is the token's error).
var tokenMethods = []string{"name", "symbol", "decimals", "totalSupply"}

// ReadTokenInfos reads every token of reads with eth_call at the latest
// block in one round trip: a JSON-RPC batch when chain is a BatchCaller
// (the batch split as the chain splits batches; a chain whose node refuses
// batches makes the calls one each itself: evm.Client does). When chain
// cannot batch, each call goes on its own, tokenCallParallel at a time. A
// token's failure is its own (in Errs); the error is the batch's as a whole
// (node down, timeout).
func ReadTokenInfos(ctx context.Context, chain ethereum.ContractCaller, reads []TokenRead) (TokenReads, error) {
	var reqs []CallRequest
	first := make([]int, len(reads)) // index of each token's first request
	for i, r := range reads {
		first[i] = len(reqs)
		methods := tokenMethods
		if r.Static != nil {
			methods = tokenMethods[3:]
		}
		for _, m := range methods {
			data, err := erc20Reader.Pack(m)
			if err != nil {
				return TokenReads{}, fmt.Errorf("pack %s: %w", m, err)
			}
			reqs = append(reqs, CallRequest{To: r.Address, Data: data})
		}
	}
	out := TokenReads{Infos: make([]TokenInfo, len(reads)), Errs: make([]error, len(reads))}
	var res []CallResult
	if bc, ok := chain.(BatchCaller); ok && len(reqs) > 0 {
		var err error
		if res, err = bc.BatchCall(ctx, reqs); err != nil {
			return TokenReads{}, fmt.Errorf("read %d tokens: %w", len(reads), err)
		}
		if len(res) != len(reqs) {
			return TokenReads{}, fmt.Errorf("read %d tokens: batch of %d eth_call: %d results", len(reads), len(reqs), len(res))
		}
	} else {
		res = CallConcurrently(ctx, chain, reqs, tokenCallParallel)
	}
	for i, r := range reads {
		out.Infos[i], out.Errs[i] = decodeTokenInfo(r, res[first[i]:])
	}
	return out, nil
}

// CallConcurrently performs reqs as single eth_calls at the latest block,
// at most parallel at once (the fallback for a node that cannot batch);
// each result holds its call's data or error.
func CallConcurrently(ctx context.Context, chain ethereum.ContractCaller, reqs []CallRequest, parallel int) []CallResult {
	out := make([]CallResult, len(reqs))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			to := r.To
			data, err := chain.CallContract(ctx, ethereum.CallMsg{From: r.From, To: &to, Data: r.Data}, nil)
			out[i] = CallResult{Data: data, Err: err}
		})
	}
	wg.Wait()
	return out
}

// decodeTokenInfo decodes the results of r's calls (res starts at them),
// failing as ReadTokenInfo does on the first call that failed.
func decodeTokenInfo(r TokenRead, res []CallResult) (TokenInfo, error) {
	next := 0
	answer := func(method string) ([]byte, error) {
		c := res[next]
		next++
		if c.Err != nil {
			return nil, fmt.Errorf("token %s: %s: %w", r.Address.Hex(), method, c.Err)
		}
		if len(c.Data) == 0 {
			return nil, fmt.Errorf("token %s: %s: empty answer: %w", r.Address.Hex(), method, ErrNotToken)
		}
		return c.Data, nil
	}
	var info TokenInfo
	if r.Static != nil {
		info.Name, info.Symbol, info.Decimals = r.Static.Name, r.Static.Symbol, r.Static.Decimals
	} else {
		for _, f := range []struct {
			method string
			dst    *string
		}{{"name", &info.Name}, {"symbol", &info.Symbol}} {
			raw, err := answer(f.method)
			if err != nil {
				return TokenInfo{}, err
			}
			if *f.dst, err = decodeString(r.Address, f.method, raw); err != nil {
				return TokenInfo{}, err
			}
		}
		raw, err := answer("decimals")
		if err != nil {
			return TokenInfo{}, err
		}
		out, err := erc20Reader.Unpack("decimals", raw)
		if err != nil || len(out) != 1 {
			return TokenInfo{}, fmt.Errorf("token %s: decimals: %w", r.Address.Hex(), ErrNotToken)
		}
		dec, ok := out[0].(uint8)
		if !ok {
			return TokenInfo{}, fmt.Errorf("token %s: decimals: %w", r.Address.Hex(), ErrNotToken)
		}
		info.Decimals = dec
	}
	raw, err := answer("totalSupply")
	if err != nil {
		return TokenInfo{}, err
	}
	out, err := erc20Reader.Unpack("totalSupply", raw)
	if err != nil || len(out) != 1 {
		return TokenInfo{}, fmt.Errorf("token %s: totalSupply: %w", r.Address.Hex(), ErrNotToken)
	}
	supply, ok := out[0].(*big.Int)
	if !ok {
		return TokenInfo{}, fmt.Errorf("token %s: totalSupply: %w", r.Address.Hex(), ErrNotToken)
	}
	info.TotalSupply = supply
	return info, nil
}
