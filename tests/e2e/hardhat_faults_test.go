package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/txengine/txengine/internal/hardhattest"
)

// The fault suite on Hardhat's node (issue 15): the real binary runs
// against a node the test makes misbehave (reorgs within and beyond the
// confirmation depth, a dropped transaction, fee spikes, a refusal in the
// middle of a batch), with several accounts sending, and each case ends
// with hhCheckExactlyOnce: one row per 202, the chain's nonces equal ours,
// one mined transaction per completed row, every transaction ended, token
// balances, callbacks and the transfer index.

// hhGwei is 1 gwei in wei.
var hhGwei = big.NewInt(1_000_000_000)

// hhOpts configures a hhRig.
type hhOpts struct {
	// accounts is how many accounts the rig creates and funds with tokens.
	accounts int
	// confirmations is the network's confirmation depth.
	confirmations int
	// rebroadcast and replace are the network's rebroadcastBlocks and
	// replaceBlocks.
	rebroadcast, replace int
	// maxFeeCap is the network's maxFeePerGasCap in wei ("" none).
	maxFeeCap string
	// inFlight is the network's in-flight window (0: the default).
	inFlight int
}

// hhRig is a Hardhat node, the service configured for it (network
// "hardhat"), the operator's token, funded accounts and a callback
// receiver, and every transfer the test sent through the API.
type hhRig struct {
	t     *testing.T
	node  *hardhattest.Node
	s     *service
	dir   string
	token string // the token's id
	// tokenAddr is the token contract's address.
	tokenAddr common.Address
	// operator is the operator's default account, which holds the supply;
	// operatorBase its nonce on chain before the service started (the
	// deploy).
	operator     string
	operatorBase uint64
	supply       *big.Int
	// accounts are the funded sending accounts (addresses).
	accounts []string
	// funds is what each account received from the operator.
	funds *big.Int
	rc    *hookReceiver
	// secret is the operator's callbackSecret.
	secret string

	mu   sync.Mutex
	sent []hhTx
}

// hhTx is one transfer accepted with 202.
type hhTx struct {
	id, from, to string
	value        *big.Int
}

// hhCallbackPath is where the rig's transfers call back.
const hhCallbackPath = "/cb"

// hhStart starts Hardhat's node and the service configured for it with o,
// deploys the token as an operator would (`txengine token deploy`),
// creates o.accounts accounts (the faucet pays their gas) and gives each
// tokens from the operator's default account. The node automines on
// return, without interval mining.
func hhStart(t *testing.T, o hhOpts) *hhRig {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and Hardhat's node")
	}
	node := hardhattest.Start(t)
	dir := t.TempDir()
	env := append(hardhatEnv(node),
		"TXENGINE_CALLBACKS_ALLOW_PRIVATE=true",
		fmt.Sprintf("TXENGINE_NETWORK_CONFIRMATIONS=%d", o.confirmations))
	if o.confirmations > 0 {
		// Blocks come without transactions, so that everything the setup
		// sends reaches its depth.
		node.SetIntervalMining(250)
	}
	const supply = "1000000000000000000000000"
	holder := deployToken(t, dir, env, "hardhat", "Fault Token", "FLT", supply)
	var base hexutil.Uint64
	if err := node.Call(t.Context(), &base, "eth_getTransactionCount", holder, "latest"); err != nil {
		t.Fatal(err)
	}
	yaml := "networks:\n  - name: hardhat\n    faucetWei: \"1000000000000000000\"\n    gasMarginPercent: 20\n"
	if o.rebroadcast > 0 {
		yaml += fmt.Sprintf("    rebroadcastBlocks: %d\n", o.rebroadcast)
	}
	if o.replace > 0 {
		yaml += fmt.Sprintf("    replaceBlocks: %d\n", o.replace)
	}
	if o.maxFeeCap != "" {
		yaml += fmt.Sprintf("    maxFeePerGasCap: %q\n", o.maxFeeCap)
	}
	if o.inFlight > 0 {
		yaml += fmt.Sprintf("    inFlight: %d\n", o.inFlight)
	}
	cfg := filepath.Join(t.TempDir(), "txengine.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServiceArgs(t, dir, []string{"--config", cfg}, env...)
	tok := operatorToken(t, s, "hardhat")
	r := &hhRig{
		t: t, node: node, s: s, dir: dir, token: tok["id"].(string),
		tokenAddr: common.HexToAddress(tok["address"].(string)),
		operator:  holder.Hex(), operatorBase: uint64(base), supply: bigOf(t, supply),
		funds: new(big.Int).Mul(big.NewInt(1000), big.NewInt(1e18)),
		rc:    newHookReceiver(t, func(string, int) int { return http.StatusOK }),
	}
	r.secret = s.must(200, "GET", "/users/me", s.Token, nil).(map[string]any)["callbackSecret"].(string)
	var funding []string
	for range o.accounts {
		a := s.must(201, "POST", "/accounts", s.Token, nil).(map[string]any)["address"].(string)
		r.accounts = append(r.accounts, a)
		funding = append(funding, r.send(r.operator, a, r.funds, nil))
	}
	for _, id := range funding {
		if tx := s.waitTerminal(id, s.Token, 90*time.Second); tx["status"] != "completed" {
			t.Fatalf("funding transfer %s ended %v: %v", id, tx["status"], tx["error"])
		}
	}
	// The faucet's ETH (gas) reaches every account.
	for _, a := range r.accounts {
		eventually(t, 60*time.Second, "faucet ETH of "+a, func() bool {
			var bal hexutil.Big
			return node.Call(t.Context(), &bal, "eth_getBalance", a, "latest") == nil && (*big.Int)(&bal).Sign() > 0
		})
	}
	if o.confirmations > 0 {
		node.SetIntervalMining(0)
	}
	return r
}

// hhAddress returns a fresh random address, lower case.
func hhAddress() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return strings.ToLower(common.BytesToAddress(b).Hex())
}

// send posts a transfer of value from an account to to (extra fields
// added to the body) with the rig's callback, expects 202 and records it.
// It may be called from any goroutine.
func (r *hhRig) send(from, to string, value *big.Int, extra map[string]any) string {
	body := map[string]any{"from": from, "to": to, "value": value.String(), "callbacks": []string{r.rc.URL + hhCallbackPath}}
	for k, v := range extra {
		body[k] = v
	}
	res, err := r.s.try("POST", "/tokens/"+r.token+"/transfers", r.s.Token, body)
	if err != nil {
		r.t.Errorf("transfer from %s: %v", from, err)
		return ""
	}
	if res.Status != 202 {
		r.t.Errorf("transfer from %s: %d %s, want 202", from, res.Status, res.Raw)
		return ""
	}
	id, _ := res.Body["data"].(map[string]any)["id"].(string)
	r.mu.Lock()
	r.sent = append(r.sent, hhTx{id: id, from: from, to: to, value: new(big.Int).Set(value)})
	r.mu.Unlock()
	return id
}

// burst sends n transfers from each of froms at once (one client per
// account, in order within an account) to perAccount fresh recipients of
// that account taken in turn, values 1, 2, 3... token units, and returns
// their ids.
//
// Recipients are not shared between accounts: an ERC-20 transfer to an
// address without tokens costs about 17,000 gas more (a storage slot
// written from zero) than the gas margin covers, so a transaction signed
// when another account's transfer had funded its recipient runs out of gas
// if a reorg or a dropped transaction makes the chain mine it first.
func (r *hhRig) burst(froms []string, n, perAccount int) []string {
	r.t.Helper()
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	for ai, from := range froms {
		recipients := make([]string, perAccount)
		for i := range recipients {
			recipients[i] = hhAddress()
		}
		wg.Go(func() {
			for i := range n {
				id := r.send(from, recipients[i%len(recipients)], big.NewInt(int64(ai*100+i+1)), nil)
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if r.t.Failed() {
		r.t.FailNow()
	}
	return ids
}

// tx returns the transaction id as the API shows it now.
func (r *hhRig) tx(id string) map[string]any {
	r.t.Helper()
	return r.s.must(200, "GET", "/transactions/"+id, r.s.Token, nil).(map[string]any)
}

// waitAll waits until every one of ids satisfies ok (given its record).
func (r *hhRig) waitAll(ids []string, timeout time.Duration, what string, ok func(tx map[string]any) bool) map[string]map[string]any {
	r.t.Helper()
	out := map[string]map[string]any{}
	eventually(r.t, timeout, what, func() bool {
		for _, id := range ids {
			tx := r.tx(id)
			if !ok(tx) {
				return false
			}
			out[id] = tx
		}
		return true
	})
	return out
}

// hhSubmitted reports whether a transaction is submitted with a hash.
func hhSubmitted(tx map[string]any) bool {
	return tx["status"] == "submitted" && tx["transactionHash"] != nil
}

// receipt returns the node's receipt of hash, nil when it has none.
func (r *hhRig) receipt(hash string) map[string]any {
	r.t.Helper()
	var rec map[string]any
	if err := r.node.Call(r.t.Context(), &rec, "eth_getTransactionReceipt", hash); err != nil {
		r.t.Fatal(err)
	}
	return rec
}

// chainTx returns the node's view of a signed transaction (nil: unknown).
func (r *hhRig) chainTx(hash string) map[string]any {
	r.t.Helper()
	var tx map[string]any
	if err := r.node.Call(r.t.Context(), &tx, "eth_getTransactionByHash", hash); err != nil {
		r.t.Fatal(err)
	}
	return tx
}

// baseFee returns the base fee of the node's latest block.
func (r *hhRig) baseFee() *big.Int {
	r.t.Helper()
	var b struct {
		BaseFee *hexutil.Big `json:"baseFeePerGas"`
	}
	if err := r.node.Call(r.t.Context(), &b, "eth_getBlockByNumber", "latest", false); err != nil {
		r.t.Fatal(err)
	}
	return (*big.Int)(b.BaseFee)
}

// hhBig parses a hex quantity of a node's answer.
func hhBig(t *testing.T, v any) *big.Int {
	t.Helper()
	s, _ := v.(string)
	n, err := hexutil.DecodeBig(s)
	if err != nil {
		t.Fatalf("%v is not a hex quantity: %v", v, err)
	}
	return n
}

// mineEach mines n blocks one evm_mine at a time. Not hardhat_mine:
// after evm_revert, Hardhat 2.29.1 serves the blocks of a hardhat_mine range
// from its third on with parentHash 0x00…00, a chain no follower can walk.
func (r *hhRig) mineEach(n int) {
	r.t.Helper()
	for range n {
		if err := r.node.Call(r.t.Context(), nil, "evm_mine"); err != nil {
			r.t.Fatal(err)
		}
	}
}

// hhResult is what hhCheckExactlyOnce counted.
type hhResult struct {
	accepted, completed, failed int
	lost, duplicated, stuck     int
}

// hhCheckExactlyOnce waits (the node must be mining) until every transfer
// the rig accepted has ended, then checks exactly-once end to end:
//   - every accepted transaction ended completed, or failed with the code
//     wantFailed names for it (any other failure is an error), with an
//     error code and message;
//   - one row per 202: each sending account's transactions (GET
//     /transactions?from=) are exactly those accepted from it;
//   - for each account, the chain's nonce equals its first nonce plus the
//     number of its transactions holding a nonce, which are unique and
//     contiguous;
//   - one mined transaction per completed row: the receipt of its stored
//     hash has status 1, in the block the record names, which is canonical;
//     a failed row holding a nonce has a mined filler (a 0-value transfer
//     to itself);
//   - each holder's token balance is what the completed transfers moved;
//   - a callback arrived for every transaction with its final status, and
//     none with another (receivers dedupe by id and status);
//   - the transfer index lists each completed transfer once, in the block
//     of its receipt, and no failed one.
func hhCheckExactlyOnce(t *testing.T, r *hhRig, wantFailed map[string]string, timeout time.Duration) hhResult {
	t.Helper()
	r.mu.Lock()
	sent := append([]hhTx(nil), r.sent...)
	r.mu.Unlock()
	var res hhResult
	res.accepted = len(sent)
	deadline := time.Now().Add(timeout)
	final := map[string]map[string]any{}
	for _, tr := range sent {
		var tx map[string]any
		for {
			tx = r.tx(tr.id)
			if st := tx["status"]; st == "completed" || st == "failed" {
				break
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		final[tr.id] = tx
		switch tx["status"] {
		case "completed":
			res.completed++
			if code, ok := wantFailed[tr.id]; ok {
				t.Errorf("transaction %s completed, want failed %s", tr.id, code)
			}
		case "failed":
			res.failed++
			e, _ := tx["error"].(map[string]any)
			code, _ := e["code"].(string)
			msg, _ := e["message"].(string)
			if code == "" || msg == "" {
				t.Errorf("transaction %s failed without a clear error: %v", tr.id, tx["error"])
			}
			if want, ok := wantFailed[tr.id]; !ok || want != code {
				res.lost++
				t.Errorf("transaction %s failed %s (%s), want %s", tr.id, code, msg, map[bool]string{true: "failed " + want, false: "completed"}[ok])
			}
		default:
			res.stuck++
			t.Errorf("transaction %s still %v after %s (hash %v, nonce %v, error %v)", tr.id, tx["status"], timeout, tx["transactionHash"], tx["nonce"], tx["error"])
		}
	}

	// One row per 202, per sending account.
	byFrom := map[string][]hhTx{}
	for _, tr := range sent {
		k := strings.ToLower(tr.from)
		byFrom[k] = append(byFrom[k], tr)
	}
	for from, txs := range byFrom {
		rows := r.listFrom(from)
		want := map[string]bool{}
		for _, tr := range txs {
			want[tr.id] = true
		}
		for _, id := range rows {
			if !want[id] {
				res.duplicated++
				t.Errorf("account %s has transaction %s that no 202 returned", from, id)
			}
			delete(want, id)
		}
		for id := range want {
			res.lost++
			t.Errorf("account %s does not list accepted transaction %s", from, id)
		}
	}

	// Nonces: ours are the chain's.
	for from, txs := range byFrom {
		base := uint64(0)
		if strings.EqualFold(from, r.operator) {
			base = r.operatorBase
		}
		seen := map[uint64]string{}
		for _, tr := range txs {
			n, ok := final[tr.id]["nonce"].(float64)
			if !ok {
				continue
			}
			if other, dup := seen[uint64(n)]; dup {
				res.duplicated++
				t.Errorf("account %s: transactions %s and %s share nonce %d", from, other, tr.id, uint64(n))
			}
			seen[uint64(n)] = tr.id
		}
		var chainNonce hexutil.Uint64
		if err := r.node.Call(t.Context(), &chainNonce, "eth_getTransactionCount", from, "latest"); err != nil {
			t.Fatal(err)
		}
		if uint64(chainNonce) != base+uint64(len(seen)) {
			t.Errorf("account %s: the chain's nonce is %d, want %d + %d transactions holding a nonce", from, uint64(chainNonce), base, len(seen))
			if uint64(chainNonce) > base+uint64(len(seen)) {
				res.duplicated++
			}
		}
		for n := base; n < base+uint64(len(seen)); n++ {
			if _, ok := seen[n]; !ok {
				t.Errorf("account %s: no transaction holds nonce %d (nonces %v)", from, n, hhKeys(seen))
			}
		}
	}

	// One mined transaction per row that holds a nonce, in a canonical block.
	hashes := map[string]string{}
	for _, tr := range sent {
		tx := final[tr.id]
		hash, _ := tx["transactionHash"].(string)
		if tx["nonce"] == nil || hash == "" || (tx["status"] != "completed" && tx["status"] != "failed") {
			continue
		}
		if other, dup := hashes[hash]; dup {
			t.Errorf("transactions %s and %s share hash %s", other, tr.id, hash)
		}
		hashes[hash] = tr.id
		rec := r.receipt(hash)
		if rec == nil {
			t.Errorf("transaction %s (%v): the node has no receipt of its hash %s", tr.id, tx["status"], hash)
			continue
		}
		num := hhBig(t, rec["blockNumber"]).Uint64()
		var block struct {
			Hash common.Hash `json:"hash"`
		}
		if err := r.node.Call(t.Context(), &block, "eth_getBlockByNumber", hexutil.Uint64(num), false); err != nil {
			t.Fatal(err)
		}
		if !strings.EqualFold(block.Hash.Hex(), rec["blockHash"].(string)) {
			t.Errorf("transaction %s: its receipt is in block %s, not the canonical block %d (%s)", tr.id, rec["blockHash"], num, block.Hash.Hex())
		}
		if tx["status"] == "completed" {
			if rec["status"] != "0x1" {
				t.Errorf("completed transaction %s: receipt status %v", tr.id, rec["status"])
			}
			if bn, _ := tx["blockNumber"].(float64); uint64(bn) != num {
				t.Errorf("completed transaction %s: blockNumber %v, its receipt says %d", tr.id, tx["blockNumber"], num)
			}
			continue
		}
		// Failed holding a nonce: its nonce was filled.
		if to, _ := rec["to"].(string); !strings.EqualFold(to, tr.from) || hhBig(t, rec["gasUsed"]).Uint64() != 21000 {
			t.Errorf("failed transaction %s holds nonce %v but its hash %s is not a filler: to %v, gas %v", tr.id, tx["nonce"], hash, rec["to"], rec["gasUsed"])
		}
	}

	// Token balances.
	want := map[string]*big.Int{strings.ToLower(r.operator): new(big.Int).Set(r.supply)}
	add := func(addr string, v *big.Int) {
		k := strings.ToLower(addr)
		if want[k] == nil {
			want[k] = new(big.Int)
		}
		want[k].Add(want[k], v)
	}
	for _, tr := range sent {
		add(tr.to, new(big.Int))
		if final[tr.id]["status"] == "completed" {
			add(tr.to, tr.value)
			add(tr.from, new(big.Int).Neg(tr.value))
		}
	}
	for addr, v := range want {
		got := r.s.must(200, "GET", "/tokens/"+r.token+"/balances/"+addr, r.s.Token, nil)
		if got != v.String() {
			t.Errorf("%s holds %v tokens, want %s (the completed transfers)", addr, got, v)
			if g, ok := new(big.Int).SetString(fmt.Sprint(got), 10); ok && g.Cmp(v) > 0 && !strings.EqualFold(addr, r.operator) {
				res.duplicated++
			}
		}
	}

	// Callbacks: one per end, with the final status (at least once).
	type key struct{ id, status string }
	ended := 0
	for _, tr := range sent {
		if st := final[tr.id]["status"]; st == "completed" || st == "failed" {
			ended++
		}
	}
	var got map[key]int
	collect := func() {
		got = map[key]int{}
		for _, h := range r.rc.at(hhCallbackPath) {
			var p struct {
				Transaction struct {
					ID     string `json:"id"`
					Status string `json:"status"`
				} `json:"transaction"`
			}
			if err := json.Unmarshal(h.body, &p); err != nil {
				t.Fatalf("callback body %s: %v", h.body, err)
			}
			got[key{p.Transaction.ID, p.Transaction.Status}]++
		}
	}
	cbDeadline := time.Now().Add(30 * time.Second)
	for {
		collect()
		n := 0
		for _, tr := range sent {
			if st, _ := final[tr.id]["status"].(string); (st == "completed" || st == "failed") && got[key{tr.id, st}] > 0 {
				n++
			}
		}
		if n == ended || time.Now().After(cbDeadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	repeats := 0
	for _, tr := range sent {
		st, _ := final[tr.id]["status"].(string)
		if (st == "completed" || st == "failed") && got[key{tr.id, st}] == 0 {
			t.Errorf("no %s callback of transaction %s", st, tr.id)
		}
		for k, n := range got {
			if k.id == tr.id && k.status != st {
				t.Errorf("transaction %s ended %s but a callback said %s", tr.id, st, k.status)
			}
			if k.id == tr.id && n > 1 {
				repeats += n - 1
			}
		}
	}
	if hooks := r.rc.at(hhCallbackPath); len(hooks) > 0 {
		verifySignature(t, r.secret, hooks[len(hooks)-1])
	}

	// The transfer index: each completed transfer once, none of the failed.
	// The index follows the chain on its own cursor: wait until it lists
	// every completed transfer in the block of its receipt (once a reorg
	// rewound it, the same hash comes back in a new block).
	idxDeadline := time.Now().Add(30 * time.Second)
	var idx map[string][]map[string]any
	for {
		idx = r.index()
		caughtUp := true
		for _, tr := range sent {
			tx := final[tr.id]
			if tx["status"] != "completed" {
				continue
			}
			e := idx[strings.ToLower(tx["transactionHash"].(string))]
			if len(e) != 1 || e[0]["blockNumber"] != tx["blockNumber"] {
				caughtUp = false
			}
		}
		if caughtUp || time.Now().After(idxDeadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, tr := range sent {
		tx := final[tr.id]
		hash, _ := tx["transactionHash"].(string)
		entries := idx[strings.ToLower(hash)]
		switch {
		case hash == "":
		case tx["status"] == "completed":
			if len(entries) != 1 {
				res.duplicated += max(len(entries)-1, 0)
				t.Errorf("the transfer index lists completed transfer %s (%s) %d times: %v", tr.id, hash, len(entries), entries)
				continue
			}
			e := entries[0]
			bn, _ := tx["blockNumber"].(float64)
			if !strings.EqualFold(e["to"].(string), tr.to) || e["value"] != tr.value.String() || e["blockNumber"] != bn {
				t.Errorf("transfer index entry %v of %s: want to %s value %s block %v", e, tr.id, tr.to, tr.value, bn)
			}
		case len(entries) > 0:
			t.Errorf("the transfer index lists %s transfer %s: %v", tx["status"], tr.id, entries)
		}
	}
	t.Logf("exactly once: %d accepted, %d completed, %d failed (as wanted: %d), %d stuck, %d lost, %d duplicated; %d callbacks (%d repeated)",
		res.accepted, res.completed, res.failed, len(wantFailed), res.stuck, res.lost, res.duplicated, len(r.rc.at(hhCallbackPath)), repeats)
	return res
}

// hhKeys returns the sorted keys of m.
func hhKeys(m map[uint64]string) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// listFrom returns the ids of the operator's transactions sent from addr,
// every page.
func (r *hhRig) listFrom(addr string) []string {
	r.t.Helper()
	var ids []string
	cursor := ""
	for {
		path := "/transactions?limit=1000&from=" + addr
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		res := r.s.call("GET", path, r.s.Token, nil)
		if res.Status != 200 {
			r.t.Fatalf("GET %s: %d %s", path, res.Status, res.Raw)
		}
		for _, it := range res.Body["data"].([]any) {
			ids = append(ids, it.(map[string]any)["id"].(string))
		}
		next, _ := res.Body["next"].(string)
		if next == "" {
			return ids
		}
		cursor = next
	}
}

// index returns the token's transfer index (every page) by lower-case
// transaction hash.
func (r *hhRig) index() map[string][]map[string]any {
	r.t.Helper()
	out := map[string][]map[string]any{}
	cursor := ""
	for {
		path := "/tokens/" + r.token + "/transfers?limit=1000"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		res := r.s.call("GET", path, r.s.Token, nil)
		if res.Status != 200 {
			r.t.Fatalf("GET %s: %d %s", path, res.Status, res.Raw)
		}
		for _, it := range res.Body["data"].([]any) {
			e := it.(map[string]any)
			k := strings.ToLower(e["transactionHash"].(string))
			out[k] = append(out[k], e)
		}
		next, _ := res.Body["next"].(string)
		if next == "" {
			return out
		}
		cursor = next
	}
}

// hhWantResult fails the test unless nothing was lost, duplicated or stuck.
func hhWantResult(t *testing.T, res hhResult) {
	t.Helper()
	if res.lost != 0 || res.duplicated != 0 || res.stuck != 0 {
		t.Fatalf("lost %d, duplicated %d, stuck %d; want 0", res.lost, res.duplicated, res.stuck)
	}
}

// TestHardhatFaultReorgWithinDepth: with a confirmation depth of 3, a
// burst from three accounts is mined in one block, which a reorg then
// replaces (evm_revert to a snapshot taken before, and two empty blocks
// mined: a different chain, higher). The transactions, never final, are
// sent again and complete exactly once on the new chain.
func TestHardhatFaultReorgWithinDepth(t *testing.T) {
	r := hhStart(t, hhOpts{accounts: 3, confirmations: 3, rebroadcast: 2, replace: 6})
	r.node.SetAutomine(false)
	snap := r.node.Snapshot()
	forkAt := r.node.Head()
	ids := r.burst(r.accounts, 3, 2)
	before := r.waitAll(ids, 60*time.Second, "the burst submitted", hhSubmitted)
	r.node.Mine(1)
	for id, tx := range before {
		if rec := r.receipt(tx["transactionHash"].(string)); rec == nil {
			t.Fatalf("transaction %s not mined by the block the test mined", id)
		}
	}
	// Not final (depth 3): the service must not complete any.
	time.Sleep(1500 * time.Millisecond)
	for _, id := range ids {
		if st := r.tx(id)["status"]; st != "submitted" {
			t.Fatalf("transaction %s is %v with 0 confirmations of 3", id, st)
		}
	}
	r.node.Revert(snap)
	r.mineEach(2)
	for id, tx := range before {
		if rec := r.receipt(tx["transactionHash"].(string)); rec != nil {
			t.Fatalf("transaction %s still mined after the reorg: %v", id, rec)
		}
	}
	t.Logf("reorg at block %d: the burst's block %d replaced, head %d", forkAt, forkAt+1, r.node.Head())
	r.node.SetIntervalMining(300)
	res := hhCheckExactlyOnce(t, r, nil, 90*time.Second)
	hhWantResult(t, res)
	for _, id := range ids {
		tx := r.tx(id)
		if bn := uint64(tx["blockNumber"].(float64)); bn <= forkAt+2 {
			t.Errorf("transaction %s completed in block %d, not after the reorg (block %d)", id, bn, forkAt+2)
		}
	}
}

// TestHardhatFaultReorgBeyondDepth: with a confirmation depth of 1, a
// burst from three accounts completes (callbacks sent, transfers indexed),
// then a reorg replaces every block it was in with a longer chain of empty
// blocks. The completed transactions go back to submitted, are sent again
// from their signed bytes and complete again: exactly once on chain, once
// in the index, callbacks at least once (same id and status).
func TestHardhatFaultReorgBeyondDepth(t *testing.T) {
	r := hhStart(t, hhOpts{accounts: 3, confirmations: 1, rebroadcast: 2, replace: 6})
	snap := r.node.Snapshot()
	forkAt := r.node.Head()
	r.node.SetIntervalMining(300)
	ids := r.burst(r.accounts, 3, 2)
	first := r.waitAll(ids, 60*time.Second, "the burst completed", func(tx map[string]any) bool { return tx["status"] == "completed" })
	eventually(t, 30*time.Second, "callbacks and index of the burst", func() bool {
		idx := r.index()
		for _, id := range ids {
			n := 0
			for _, h := range r.rc.at(hhCallbackPath) {
				if strings.Contains(string(h.body), id) {
					n++
				}
			}
			if n == 0 || len(idx[strings.ToLower(first[id]["transactionHash"].(string))]) == 0 {
				return false
			}
		}
		return true
	})
	r.node.SetIntervalMining(0)
	oldHead := r.node.Head()
	r.node.Revert(snap)
	r.mineEach(int(oldHead-forkAt) + 2)
	t.Logf("reorg at block %d: blocks %d..%d replaced, head %d", forkAt, forkAt+1, oldHead, r.node.Head())
	// The service sees the reorg: the burst leaves completed.
	eventually(t, 30*time.Second, "the reorged transactions back to submitted", func() bool {
		for _, id := range ids {
			if r.tx(id)["status"] != "completed" {
				return true
			}
		}
		return false
	})
	r.node.SetIntervalMining(300)
	res := hhCheckExactlyOnce(t, r, nil, 90*time.Second)
	hhWantResult(t, res)
	for _, id := range ids {
		tx := r.tx(id)
		if bn := uint64(tx["blockNumber"].(float64)); bn <= forkAt {
			t.Errorf("transaction %s completed in block %d, on the old chain (fork at %d)", id, bn, forkAt)
		}
		rec := r.receipt(tx["transactionHash"].(string))
		if old := first[id]; rec["blockHash"] == old["events"].([]any)[0].(map[string]any)["blockHash"] {
			t.Errorf("transaction %s still in its orphaned block %v", id, rec["blockHash"])
		}
	}
}

// TestHardhatFaultDroppedTransaction: mining paused, three accounts send;
// the node forgets (hardhat_dropTransaction) the lowest pending transaction
// of one account and the last of another. Once blocks come again, the
// service sends them again after rebroadcastBlocks blocks (as they are:
// same hash) and every transaction completes once.
func TestHardhatFaultDroppedTransaction(t *testing.T) {
	// Replacement only after 30 blocks: account actors check their
	// in-flight transactions every 5 s, 10 blocks here, so the first check
	// after the drop sends the signed bytes again rather than a new version.
	r := hhStart(t, hhOpts{accounts: 3, rebroadcast: 2, replace: 30})
	r.node.SetAutomine(false)
	byAccount := make([][]string, len(r.accounts))
	for i, a := range r.accounts {
		to := hhAddress() // not shared: see burst
		for j := range 2 {
			byAccount[i] = append(byAccount[i], r.send(a, to, big.NewInt(int64(10*i+j+1)), nil))
		}
	}
	var all []string
	for _, ids := range byAccount {
		all = append(all, ids...)
	}
	submitted := r.waitAll(all, 60*time.Second, "every transfer submitted", hhSubmitted)
	dropped := []string{byAccount[0][0], byAccount[1][1]}
	for _, id := range dropped {
		h := common.HexToHash(submitted[id]["transactionHash"].(string))
		if !r.node.DropTransaction(h) {
			t.Fatalf("the node did not hold %s (%s) to drop it", id, h.Hex())
		}
	}
	droppedAt := r.node.Head()
	r.node.SetIntervalMining(500)
	res := hhCheckExactlyOnce(t, r, nil, 90*time.Second)
	hhWantResult(t, res)
	for _, id := range dropped {
		tx := r.tx(id)
		if tx["transactionHash"] != submitted[id]["transactionHash"] {
			t.Errorf("dropped transaction %s completed as %v, want its signed bytes sent again (%v)", id, tx["transactionHash"], submitted[id]["transactionHash"])
		}
		if bn := uint64(tx["blockNumber"].(float64)); bn < droppedAt+2 {
			t.Errorf("dropped transaction %s mined in block %d, %d blocks after the drop; want at least rebroadcastBlocks (2)", id, bn, bn-droppedAt)
		}
	}
}

// TestHardhatFaultFeeSpike: mining paused, two accounts send, then the base
// fee jumps far above the fee cap they were signed with
// (hardhat_setNextBlockBaseFeePerGas) and blocks come empty. Within the
// network's maxFeePerGasCap the stuck transactions are replaced with higher
// fees after replaceBlocks blocks and complete; with a cap below the spike
// they are held at the cap (not failed) and complete once the base fee
// falls under it.
func TestHardhatFaultFeeSpike(t *testing.T) {
	spike := new(big.Int).Mul(big.NewInt(100), hhGwei)
	t.Run("bumped", func(t *testing.T) {
		limit := new(big.Int).Mul(big.NewInt(1000), hhGwei)
		r := hhStart(t, hhOpts{accounts: 2, rebroadcast: 2, replace: 3, maxFeeCap: limit.String()})
		ids, firstHash, first := hhSpike(t, r, spike)
		res := hhCheckExactlyOnce(t, r, nil, 90*time.Second)
		hhWantResult(t, res)
		for _, id := range ids {
			tx := r.tx(id)
			h := tx["transactionHash"].(string)
			if h == firstHash[id] {
				t.Errorf("transaction %s completed with the version signed before the spike; want a replacement", id)
			}
			// The version mined was signed with a higher fee cap than the
			// first, within the cap, into a block whose base fee the first
			// could not pay.
			fee := hhBig(t, r.chainTx(h)["maxFeePerGas"])
			old := first[id]
			var block struct {
				BaseFee *hexutil.Big `json:"baseFeePerGas"`
			}
			if err := r.node.Call(t.Context(), &block, "eth_getBlockByNumber", hexutil.Uint64(uint64(tx["blockNumber"].(float64))), false); err != nil {
				t.Fatal(err)
			}
			if fee.Cmp(old) <= 0 || fee.Cmp(limit) > 0 || (*big.Int)(block.BaseFee).Cmp(old) <= 0 {
				t.Errorf("transaction %s mined at maxFeePerGas %s in a block of base fee %s; want above the first version's %s, at most the cap %s, and a base fee the first could not pay", id, fee, block.BaseFee, old, limit)
			}
			t.Logf("transaction %s: signed at maxFeePerGas %s, replaced at %s, mined at base fee %s", id, old, fee, (*big.Int)(block.BaseFee))
		}
	})
	t.Run("held-at-cap", func(t *testing.T) {
		limit := new(big.Int).Mul(big.NewInt(10), hhGwei)
		r := hhStart(t, hhOpts{accounts: 2, rebroadcast: 2, replace: 3, maxFeeCap: limit.String()})
		// Higher: the base fee takes about 25 blocks (10 s) to fall under
		// the cap, time to see the transactions held there.
		ids, _, _ := hhSpike(t, r, new(big.Int).Mul(spike, big.NewInt(3)))
		// While the base fee is above the cap, the transactions wait at the
		// cap: a version at exactly the cap, none above, none failed.
		atCap := map[string]bool{}
		eventually(t, 60*time.Second, "replacements at the cap", func() bool {
			for _, id := range ids {
				tx := r.tx(id)
				if tx["status"] != "submitted" {
					t.Fatalf("transaction %s is %v while the base fee (%s) is above the cap: %v", id, tx["status"], r.baseFee(), tx["error"])
				}
				if c := r.chainTx(tx["transactionHash"].(string)); c != nil && hhBig(t, c["maxFeePerGas"]).Cmp(limit) == 0 {
					atCap[id] = true
				}
			}
			return len(atCap) == len(ids)
		})
		if bf := r.baseFee(); bf.Cmp(limit) <= 0 {
			t.Fatalf("the base fee %s fell under the cap before the test saw the transactions held", bf)
		}
		t.Logf("held at the cap %s with the base fee at %s", limit, r.baseFee())
		res := hhCheckExactlyOnce(t, r, nil, 120*time.Second)
		hhWantResult(t, res)
		for _, id := range ids {
			h := r.tx(id)["transactionHash"].(string)
			if fee := hhBig(t, r.chainTx(h)["maxFeePerGas"]); fee.Cmp(limit) > 0 {
				t.Errorf("transaction %s mined at maxFeePerGas %s, above the cap %s", id, fee, limit)
			}
		}
	})
}

// hhSpike pauses mining, sends two transfers from each account, waits
// until they are submitted, raises the next block's base fee to spike and
// mines a block every 400 ms. It returns the ids, and the hash and
// maxFeePerGas each was first signed with.
func hhSpike(t *testing.T, r *hhRig, spike *big.Int) ([]string, map[string]string, map[string]*big.Int) {
	t.Helper()
	r.node.SetAutomine(false)
	var ids []string
	for i, a := range r.accounts {
		to := hhAddress() // not shared: see burst
		for j := range 2 {
			ids = append(ids, r.send(a, to, big.NewInt(int64(10*i+j+1)), nil))
		}
	}
	hashes, fees := map[string]string{}, map[string]*big.Int{}
	for id, tx := range r.waitAll(ids, 60*time.Second, "every transfer submitted", hhSubmitted) {
		hashes[id] = tx["transactionHash"].(string)
		fees[id] = hhBig(t, r.chainTx(hashes[id])["maxFeePerGas"])
		if fees[id].Cmp(spike) >= 0 {
			t.Fatalf("transaction %s signed at maxFeePerGas %s, not below the spike %s", id, fees[id], spike)
		}
	}
	r.node.SetNextBlockBaseFeePerGas(spike)
	r.node.Mine(1)
	if bf := r.baseFee(); bf.Cmp(spike) != 0 {
		t.Fatalf("base fee after the spike %s, want %s", bf, spike)
	}
	r.node.SetIntervalMining(400)
	return ids, hashes, fees
}

// TestHardhatFaultMidBatchRejection: account A's four transfers wait on a
// transfer of account B (dependsOn) and so go to the node in one batch,
// the second of them to a fresh address (more gas) after the block gas
// limit was lowered between their gas limits: the node refuses that one
// for good (exceeds the block gas limit) and takes the next ones. It fails
// with the node's reason, a filler takes its nonce, the later ones
// complete, and A's next transfer completes: no account jams.
func TestHardhatFaultMidBatchRejection(t *testing.T) {
	r := hhStart(t, hhOpts{accounts: 2, rebroadcast: 2, replace: 6})
	a, b := r.accounts[0], r.accounts[1]
	holder := hhAddress() // holds tokens: a transfer to it is cheap
	if tx := r.s.waitTerminal(r.send(b, holder, big.NewInt(1), nil), r.s.Token, 60*time.Second); tx["status"] != "completed" {
		t.Fatalf("transfer to the holder: %v %v", tx["status"], tx["error"])
	}
	fresh := hhAddress()
	small, big1 := r.estimate(a, holder), r.estimate(a, fresh)
	const margin = 20 // gasMarginPercent of hhStart's configuration
	signedSmall, signedBig := small+small*margin/100, big1+big1*margin/100
	gasLimit := big1 + (signedBig-big1)/2
	if gasLimit <= signedSmall || gasLimit <= big1 {
		t.Fatalf("estimates %d (small) and %d (big) leave no block gas limit that refuses only the big one", small, big1)
	}
	t.Logf("estimates: %d to a holder, %d to a fresh address; block gas limit %d", small, big1, gasLimit)

	r.node.SetAutomine(false)
	gate := r.send(b, holder, big.NewInt(2), nil)
	r.waitAll([]string{gate}, 60*time.Second, "the gate submitted", hhSubmitted)
	dep := map[string]any{"dependsOn": []string{gate}}
	batch := []string{
		r.send(a, holder, big.NewInt(3), dep),
		r.send(a, fresh, big.NewInt(4), dep),
		r.send(a, holder, big.NewInt(5), dep),
		r.send(a, holder, big.NewInt(6), dep),
	}
	r.waitAll(batch, 30*time.Second, "the batch waiting", func(tx map[string]any) bool { return tx["status"] == "waiting" || tx["status"] == "new" })
	r.node.SetBlockGasLimit(gasLimit)
	r.node.SetIntervalMining(300)
	refused := batch[1]
	done := r.waitAll([]string{refused}, 60*time.Second, "the refused transfer failed", func(tx map[string]any) bool { return tx["status"] == "failed" })
	e, _ := done[refused]["error"].(map[string]any)
	if e["code"] != "invalid" || !strings.Contains(strings.ToLower(fmt.Sprint(e["message"])), "gas limit") {
		t.Errorf("refused transfer failed with %v, want invalid with the node's words on the block gas limit", e)
	}
	if done[refused]["nonce"] == nil {
		t.Errorf("the refused transfer holds no nonce: it was not refused mid-batch (%v)", done[refused])
	}
	// The account goes on.
	after := r.send(a, holder, big.NewInt(7), nil)
	r.waitAll([]string{after}, 60*time.Second, "A's next transfer completed", func(tx map[string]any) bool { return tx["status"] == "completed" })
	res := hhCheckExactlyOnce(t, r, map[string]string{refused: "invalid"}, 90*time.Second)
	hhWantResult(t, res)
}

// estimate returns the node's gas estimate of a 1-unit token transfer
// from from to to.
func (r *hhRig) estimate(from, to string) uint64 {
	r.t.Helper()
	data := "0xa9059cbb" + strings.Repeat("0", 24) + strings.TrimPrefix(strings.ToLower(to), "0x") + fmt.Sprintf("%064x", 1)
	var gas hexutil.Uint64
	ctx, cancel := context.WithTimeout(r.t.Context(), 10*time.Second)
	defer cancel()
	if err := r.node.Call(ctx, &gas, "eth_estimateGas", map[string]any{"from": from, "to": r.tokenAddr, "data": data}); err != nil {
		r.t.Fatal(err)
	}
	return uint64(gas)
}
