package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/txengine/txengine/contracts"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm"
	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/internal/rpcproxy"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// poolStack is the service on PostgreSQL and geth --dev behind a busy
// mempool, as issue 30 reproduces a public chain: geth with a public node's
// account slots (16) and, in front of its HTTP endpoint (the service's
// calls and broadcasts), rpcproxy.BusyMempool refusing a sender's 17th
// pending transaction with geth's own "txpool is full" (a dev node's pool
// is never full, so geth would take it). The operator's default account
// holds the token's supply and 1,000 ETH: it is the pools' treasury.
type poolStack struct {
	node     *gethtest.Node
	proxy    *rpcproxy.Proxy
	chain    *ethclient.Client // geth itself, not the proxy
	env      []string
	dir      string
	s        *service
	token    string         // the token's id
	tokenAt  common.Address // and address
	treasury poolAccount    // the operator's default account
}

// poolAccount is an account as the tests use it.
type poolAccount struct {
	id      string
	address common.Address
}

func startPoolStack(t *testing.T) *poolStack {
	t.Helper()
	node := gethtest.Start(t, gethtest.TxPool(gethtest.PoolLimits{AccountSlots: rpcproxy.DefaultSlots}))
	proxy := rpcproxy.Start(t, node.HTTPURL)
	proxy.BusyMempool(rpcproxy.DefaultSlots)
	var env []string
	for _, e := range gethEnv(node) {
		if strings.HasPrefix(e, "TXENGINE_NETWORK_HTTP_URL=") {
			e = "TXENGINE_NETWORK_HTTP_URL=" + proxy.URL()
		}
		env = append(env, e)
	}
	env = append(env, "TXENGINE_DATABASE_URL="+pgtest.New(t))
	st := &poolStack{node: node, proxy: proxy, env: env, dir: t.TempDir()}
	holder := deployToken(t, st.dir, env, "geth", "Test Token", "TT", "1000000000000000000000000")
	var err error
	if st.chain, err = ethclient.Dial(node.HTTPURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.chain.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := evm.Transact(ctx, st.chain, node.FaucetKey, &holder, new(big.Int).Mul(big.NewInt(1000), big.NewInt(1e18)), nil); err != nil {
		t.Fatalf("fund the treasury: %v", err)
	}
	st.s = startService(t, st.dir, env...)
	tok := operatorToken(t, st.s, "geth")
	st.token, st.tokenAt = tok["id"].(string), common.HexToAddress(tok["address"].(string))
	def := st.s.must(200, "GET", "/accounts/default", st.s.Token, nil).(map[string]any)
	st.treasury = poolAccount{id: def["id"].(string), address: common.HexToAddress(def["address"].(string))}
	if st.treasury.address != holder {
		t.Fatalf("default account %v, token holder %v", st.treasury.address, holder)
	}
	return st
}

// restart starts the service again on the same data and database.
func (st *poolStack) restart(t *testing.T) {
	t.Helper()
	st.s = startService(t, st.dir, st.env...)
}

// createPool creates a pool of size members whose treasury is the
// default account, and returns its id and members (by address).
func (st *poolStack) createPool(t *testing.T, name string, size int) (string, map[common.Address]poolAccount) {
	t.Helper()
	p := st.s.must(201, "POST", "/pools", st.s.Token, map[string]any{"name": name, "network": "geth", "size": size, "treasury": st.treasury.id}).(map[string]any)
	members := map[common.Address]poolAccount{}
	for _, m := range p["members"].([]any) {
		m := m.(map[string]any)
		a := poolAccount{id: m["account"].(string), address: common.HexToAddress(m["address"].(string))}
		members[a.address] = a
	}
	if len(members) != size || p["size"] != float64(size) {
		t.Fatalf("POST /pools of %d: %v", size, p)
	}
	return p["id"].(string), members
}

// poolSent is one accepted transfer of a pool test, and how it ended.
type poolSent struct {
	id, to, key string
	value       int
	tx          map[string]any // the transaction once ended
}

// sendPool sends n transfers of the token, value first+i to a fresh
// address each, with extra in the body (pool, from), from clients
// concurrent clients; with keys > 0 the i-th has orderingKey "k<i%keys>"
// and each key's transfers are sent by one client, one after the other
// (request order). Every transfer must be accepted (it fails t
// otherwise, without stopping: it may run on another goroutine).
func (st *poolStack) sendPool(t *testing.T, n, first, clients, keys int, extra map[string]any) []*poolSent {
	t.Helper()
	out := make([]*poolSent, n)
	for i := range out {
		out[i] = &poolSent{to: randomAddress(), value: first + i}
		if keys > 0 {
			out[i].key = fmt.Sprintf("k%d", i%keys)
		}
	}
	lanes := make([][]*poolSent, max(clients, keys))
	for i, p := range out {
		lane := i % len(lanes)
		if keys > 0 {
			lane = i % keys
		}
		lanes[lane] = append(lanes[lane], p)
	}
	var wg sync.WaitGroup
	for _, lane := range lanes {
		wg.Go(func() {
			for _, p := range lane {
				body := map[string]any{"to": p.to, "value": fmt.Sprint(p.value)}
				for k, v := range extra {
					body[k] = v
				}
				if p.key != "" {
					body["orderingKey"] = p.key
				}
				r, err := st.s.try("POST", "/tokens/"+st.token+"/transfers", st.s.Token, body)
				if err != nil || r.Status != 202 {
					t.Errorf("transfer %d: %v %d %s", p.value, err, r.Status, r.Raw)
					return
				}
				p.id = r.Body["data"].(map[string]any)["id"].(string)
			}
		})
	}
	wg.Wait()
	return out
}

// waitEnded waits until every transfer ended and keeps its view; each must
// have completed.
func (st *poolStack) waitEnded(t *testing.T, sent []*poolSent, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for _, p := range sent {
		p.tx = st.s.waitTerminal(p.id, st.s.Token, time.Until(deadline))
		if p.tx["status"] != "completed" {
			t.Errorf("transfer %s (%d) ended %v: %v", p.id, p.value, p.tx["status"], p.tx["error"])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// mined is a transaction as the node has it.
type mined struct {
	from         common.Address
	nonce        uint64
	block, index uint64
}

// onChain reads each transfer's transaction and receipt from geth itself:
// mined with status 1, signed by the view's from with the view's nonce, in
// the view's block; and every recipient holds exactly its value of the
// token (nothing lost, nothing paid twice).
func (st *poolStack) onChain(t *testing.T, sent []*poolSent) map[string]mined {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := map[string]mined{}
	for _, p := range sent {
		hash := common.HexToHash(p.tx["transactionHash"].(string))
		tx, _, err := st.chain.TransactionByHash(ctx, hash)
		if err != nil {
			t.Fatalf("transfer %s: %s on the node: %v", p.id, hash, err)
		}
		rc, err := st.chain.TransactionReceipt(ctx, hash)
		if err != nil || rc.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("transfer %s: receipt %+v, %v", p.id, rc, err)
		}
		from, err := types.Sender(types.LatestSignerForChainID(tx.ChainId()), tx)
		if err != nil {
			t.Fatal(err)
		}
		m := mined{from: from, nonce: tx.Nonce(), block: rc.BlockNumber.Uint64(), index: uint64(rc.TransactionIndex)}
		if from != common.HexToAddress(p.tx["from"].(string)) || m.nonce != uint64(p.tx["nonce"].(float64)) || m.block != uint64(p.tx["blockNumber"].(float64)) {
			t.Fatalf("transfer %s: on the node from %v nonce %d block %d; the service says %v", p.id, from, m.nonce, m.block, p.tx)
		}
		out[p.id] = m
		got := st.s.must(200, "GET", "/tokens/"+st.token+"/balances/"+p.to, st.s.Token, nil)
		if got != fmt.Sprint(p.value) {
			t.Fatalf("%s holds %v of the token, want exactly %d (transfer %s)", p.to, got, p.value, p.id)
		}
	}
	return out
}

// checkMembers checks the pool's side of sent: each transfer names the
// pool, came from one of its members, and per member the nonces of its
// transfers on the node are exactly 0..k-1 and the member's confirmed
// nonce is k (it sent nothing else: no transfer twice). It returns the
// transfers per member.
func (st *poolStack) checkMembers(t *testing.T, poolID string, members map[common.Address]poolAccount, sent []*poolSent, chain map[string]mined) map[common.Address]int {
	t.Helper()
	nonces := map[common.Address][]uint64{}
	for _, p := range sent {
		m := chain[p.id]
		if p.tx["pool"] != poolID {
			t.Fatalf("transfer %s: pool %v, want %s", p.id, p.tx["pool"], poolID)
		}
		if _, ok := members[m.from]; !ok {
			t.Fatalf("transfer %s sent from %v, not a member of the pool", p.id, m.from)
		}
		nonces[m.from] = append(nonces[m.from], m.nonce)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	per := map[common.Address]int{}
	for addr, ns := range nonces {
		slices.Sort(ns)
		for i, n := range ns {
			if n != uint64(i) {
				t.Fatalf("member %v: nonces on the node %v, want 0..%d", addr, ns, len(ns)-1)
			}
		}
		confirmed, err := st.chain.NonceAt(ctx, addr, nil)
		if err != nil || confirmed != uint64(len(ns)) {
			t.Fatalf("member %v: confirmed nonce %d (%v), want %d: it sent what the service does not know", addr, confirmed, err, len(ns))
		}
		per[addr] = len(ns)
	}
	return per
}

// lastBlock is the highest block of the transfers on the node.
func lastBlock(chain map[string]mined) uint64 {
	var last uint64
	for _, m := range chain {
		last = max(last, m.block)
	}
	return last
}

// head is geth's current block.
func (st *poolStack) head(t *testing.T) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := st.chain.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// poolTransactions lists every transaction of the pool (GET
// /transactions?pool=), following the cursor.
func (st *poolStack) poolTransactions(t *testing.T, poolID string) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for {
		q := url.Values{"pool": {poolID}, "limit": {"1000"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := st.s.call("GET", "/transactions?"+q.Encode(), st.s.Token, nil)
		if r.Status != 200 {
			t.Fatalf("GET /transactions?pool=: %d %s", r.Status, r.Raw)
		}
		for _, tx := range r.Body["data"].([]any) {
			out = append(out, tx.(map[string]any))
		}
		next, _ := r.Body["next"].(string)
		if next == "" {
			return out
		}
		cursor = next
	}
}

// topUpsOnChain counts the treasury's transactions on the node in blocks
// from..to by member and asset: ETH sent to a member ("ETH"), the token's
// transfer(member, …) (the token's address), each member a batch of the
// disperser pays (disperseEther, disperseToken), the disperser's deployment
// and approvals ("setup:disperser", "setup:approve"), and anything else
// ("other"); reverted transactions paid nothing and are left out.
func (st *poolStack) topUpsOnChain(t *testing.T, from, to uint64, members map[common.Address]poolAccount) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := map[string]int{}
	for n := from; n <= to; n++ {
		blk, err := st.chain.BlockByNumber(ctx, new(big.Int).SetUint64(n))
		if err != nil {
			t.Fatalf("block %d: %v", n, err)
		}
		for _, tx := range blk.Transactions() {
			sender, err := types.Sender(types.LatestSignerForChainID(tx.ChainId()), tx)
			if err != nil || sender != st.treasury.address {
				continue
			}
			r, err := st.chain.TransactionReceipt(ctx, tx.Hash())
			if err != nil {
				t.Fatalf("receipt of %s: %v", tx.Hash(), err)
			}
			if r.Status != types.ReceiptStatusSuccessful {
				continue // reverted: it paid nothing (the service has it failed)
			}
			for _, k := range topUpKinds(t, tx, st.tokenAt, members) {
				out[k]++
			}
		}
	}
	return out
}

// topUpKinds is what a treasury's transaction pays: "<member
// address>:<asset>" for each member, or its setup kind, or "other".
func topUpKinds(t *testing.T, tx *types.Transaction, token common.Address, members map[common.Address]poolAccount) []string {
	data := tx.Data()
	if tx.To() == nil {
		return []string{"setup:disperser"}
	}
	if *tx.To() == token && len(data) >= 4 && common.Bytes2Hex(data[:4]) == "095ea7b3" {
		return []string{"setup:approve"}
	}
	if len(data) >= 4 {
		if m, err := disperseABI(t).MethodById(data[:4]); err == nil {
			args, err := m.Inputs.Unpack(data[4:])
			if err != nil {
				t.Fatalf("batch %s: %v", tx.Hash(), err)
			}
			asset, rs := "ETH", args[0]
			if m.Name == "disperseToken" {
				asset, rs = args[0].(common.Address).Hex(), args[1]
			}
			var out []string
			for _, r := range rs.([]common.Address) {
				out = append(out, r.Hex()+":"+asset)
			}
			return out
		}
	}
	return []string{topUpKind(tx, token, members)}
}

// topUpKind is "<member address>:<asset>" of a treasury's transaction to
// one member, or "other".
func topUpKind(tx *types.Transaction, token common.Address, members map[common.Address]poolAccount) string {
	data := tx.Data()
	switch {
	case *tx.To() == token && len(data) == 68 && common.Bytes2Hex(data[:4]) == "a9059cbb":
		if m := common.BytesToAddress(data[4:36]); members[m].id != "" {
			return m.Hex() + ":" + token.Hex()
		}
	case len(data) == 0 && members[*tx.To()].id != "":
		return tx.To().Hex() + ":ETH"
	}
	return "other"
}

// disperseABI is the disperser's parsed ABI.
func disperseABI(t *testing.T) *abi.ABI {
	a, err := contracts.Disperse().ParsedABI()
	if err != nil {
		t.Fatal(err)
	}
	return &a
}

// topUpsOfService counts the pool's top-ups the service reports (the
// pool's transactions whose orderingKey starts with engine.TopUpKeyPrefix)
// by "<member address>:<asset>" (a batch once for each member it names),
// or their setup kind (the disperser's deployment, approvals), the
// completed ones apart; every one must have ended.
func (st *poolStack) topUpsOfService(t *testing.T, poolID string, members map[common.Address]poolAccount) (completed, all map[string]int) {
	t.Helper()
	byID := map[string]common.Address{}
	for a, m := range members {
		byID[m.id] = a
	}
	completed, all = map[string]int{}, map[string]int{}
	for _, tx := range st.poolTransactions(t, poolID) {
		key, _ := tx["orderingKey"].(string)
		rest, ok := strings.CutPrefix(key, engine.TopUpKeyPrefix)
		if !ok {
			continue
		}
		for _, k := range serviceTopUpKinds(rest, tx, byID) {
			all[k]++
			if tx["status"] == "completed" {
				completed[k]++
			}
		}
	}
	return completed, all
}

// serviceTopUpKinds is what the service's top-up with key rest (after the
// prefix) pays, as topUpKinds names it.
func serviceTopUpKinds(rest string, tx map[string]any, byID map[string]common.Address) []string {
	switch {
	case rest == "disperser":
		return []string{"setup:disperser"}
	case strings.HasPrefix(rest, "approve:"):
		return []string{"setup:approve"}
	case strings.HasPrefix(rest, "batch:"):
		asset, params := strings.TrimPrefix(rest, "batch:"), tx["parameters"].([]any)
		rs := params[0]
		if asset != "ETH" {
			asset, rs = common.HexToAddress(asset).Hex(), params[1]
		}
		var recipients []string // the view shows an array parameter as JSON text
		if err := json.Unmarshal([]byte(rs.(string)), &recipients); err != nil {
			return []string{"unreadable batch: " + err.Error()}
		}
		var out []string
		for _, r := range recipients {
			out = append(out, common.HexToAddress(r).Hex()+":"+asset)
		}
		return out
	}
	id, asset, _ := strings.Cut(rest, ":")
	if asset != "ETH" {
		asset = common.HexToAddress(asset).Hex()
	}
	return []string{byID[id].Hex() + ":" + asset}
}
