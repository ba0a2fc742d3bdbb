package e2e

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
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
	"github.com/txengine/txengine/internal/rpcproxy"
)

// The long fault cases on Hardhat's node (issue 15): mining paused under a
// burst, a nonce consumed outside the service, an operator abandoning a
// stuck transaction, 12 s blocks with a confirmation depth of 12, and a
// proxy that delays, resets and loses answers. The real binary talks to the
// node through internal/rpcproxy (http; the new-heads subscription goes to
// the node directly), which counts every JSON-RPC call. Several users, each
// with its own custodial account, send 0-value transfers of a token to
// fresh addresses, so each account has its own nonces; every case ends with
// hlCheck: one row per 202, the chain's nonce of each account equal to the
// number of our transactions holding a nonce, nonces 0..n-1, one mined
// transaction per completed row, every transaction ended as the case
// expects and none stuck.

// hlLong is the variable that makes TestHardhatTwelveSecondBlocks send for
// ten minutes instead of two.
const hlLong = "TXENGINE_HARDHAT_LONG"

// hlUser is a user of the service with its own account and its own
// registration of the token.
type hlUser struct {
	name, token, address, contract string

	mu  sync.Mutex
	ids []string // the transactions that got a 202, in order
}

func (u *hlUser) accepted() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.ids...)
}

// hlEnv is one case's node, proxy, service and users.
type hlEnv struct {
	t     *testing.T
	node  *hardhattest.Node
	proxy *rpcproxy.Proxy
	// tcp is the TCP fault proxy between the counting proxy (and the
	// new-heads subscription) and the node when hlOpts.tcp asks for it.
	tcp   *rpcproxy.TCP
	s     *service
	hooks *hookReceiver
	users []*hlUser
}

// hlOpts configures hlStart.
type hlOpts struct {
	users         int
	confirmations int
	// rebroadcast and replace set rebroadcastBlocks and replaceBlocks (0:
	// the service's defaults, 5 and 12).
	rebroadcast, replace int
	// tcp puts toxiproxy (rpcproxy.StartTCP) between the counting proxy
	// and the node, and between the service's subscription and the node.
	tcp bool
}

// hlStart starts Hardhat's node, the counting proxy in front of it, deploys
// a token, runs the service through the proxy with a config file (the keys
// the environment has no shortcut for) and creates o.users funded users.
func hlStart(t *testing.T, o hlOpts) *hlEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and Hardhat's node")
	}
	node := hardhattest.Start(t)
	upstream, ws := node.HTTPURL, node.WSURL
	var tcp *rpcproxy.TCP
	if o.tcp {
		tcp = rpcproxy.StartTCP(t, strings.TrimPrefix(node.HTTPURL, "http://"))
		upstream, ws = tcp.URL("http"), tcp.URL("ws")
	}
	proxy := rpcproxy.Start(t, upstream)
	dir := t.TempDir()
	deployToken(t, dir, hardhatEnv(node), "hardhat", "Fault Token", "FLT", "1000000000000000000000000")

	cfg := fmt.Sprintf("networks:\n  - name: hardhat\n    chainId: %d\n    httpUrl: %s\n    wsUrl: %s\n", hardhattest.ChainID, proxy.URL(), ws)
	if o.rebroadcast > 0 {
		cfg += fmt.Sprintf("    rebroadcastBlocks: %d\n    replaceBlocks: %d\n", o.rebroadcast, o.replace)
	}
	path := filepath.Join(dir, "hl.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"TXENGINE_NETWORK_NAME=hardhat",
		"TXENGINE_NETWORK_FAUCET_KEY=" + hardhattest.FaucetKeyHex,
		fmt.Sprintf("TXENGINE_NETWORK_CONFIRMATIONS=%d", o.confirmations),
		// The callback receiver listens on loopback.
		"TXENGINE_CALLBACKS_ALLOW_PRIVATE=true",
	}
	s := startServiceArgs(t, dir, []string{"--config", path}, env...)
	e := &hlEnv{t: t, node: node, proxy: proxy, tcp: tcp, s: s,
		hooks: newHookReceiver(t, func(string, int) int { return 200 })}

	tokAddr, _ := operatorToken(t, s, "hardhat")["address"].(string)
	if tokAddr == "" {
		t.Fatalf("the operator's token has no address: %v", operatorToken(t, s, "hardhat"))
	}
	for i := range o.users {
		u := s.must(201, "POST", "/users", s.Token, map[string]any{"auth": true, "account": true}).(map[string]any)
		hu := &hlUser{name: fmt.Sprintf("user%d", i), token: u["token"].(string), address: u["account"].(map[string]any)["address"].(string)}
		hu.contract = s.must(201, "PUT", "/contracts", hu.token, map[string]any{
			"name": "flt", "network": "hardhat", "address": tokAddr, "type": "erc20"}).(map[string]any)["id"].(string)
		e.users = append(e.users, hu)
	}
	for _, u := range e.users {
		eventually(t, 60*time.Second, "faucet funds "+u.name, func() bool {
			return s.must(200, "GET", "/accounts/default/balance", u.token, nil).(string) != "0"
		})
	}
	return e
}

// hlSend sends one 0-value transfer from u to a fresh address with a
// callback; it may run on any goroutine. It returns the transaction's id on
// a 202 and records it in u.
func (e *hlEnv) hlSend(u *hlUser) (string, error) {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	r, err := e.s.try("POST", "/tokens/"+u.contract+"/transfers", u.token, map[string]any{
		"to": common.BytesToAddress(b).Hex(), "value": "0", "callbacks": []string{e.hooks.URL + "/cb"}})
	if err != nil {
		return "", err
	}
	if r.Status != 202 {
		return "", fmt.Errorf("transfer from %s: %d %s", u.name, r.Status, r.Raw)
	}
	id, _ := r.Body["data"].(map[string]any)["id"].(string)
	u.mu.Lock()
	u.ids = append(u.ids, id)
	u.mu.Unlock()
	return id, nil
}

// hlBurst sends n transfers from each user, two clients per user, and
// fails the test on any answer but 202.
func (e *hlEnv) hlBurst(n int) {
	e.t.Helper()
	for _, err := range e.hlBurstErrs(n) {
		e.t.Error(err)
	}
	if e.t.Failed() {
		e.t.FailNow()
	}
}

// hlBurstErrs is hlBurst for any goroutine: it returns the failures.
func (e *hlEnv) hlBurstErrs(n int) []error {
	var wg sync.WaitGroup
	errs := make(chan error, n*len(e.users))
	for _, u := range e.users {
		work := make(chan struct{}, n)
		for range n {
			work <- struct{}{}
		}
		close(work)
		for range 2 {
			wg.Go(func() {
				for range work {
					if _, err := e.hlSend(u); err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// hlTx reads a transaction of u (as u: the operator sees only its own)
// without failing the test.
func (e *hlEnv) hlTx(u *hlUser, id string) (map[string]any, error) {
	r, err := e.s.try("GET", "/transactions/"+id, u.token, nil)
	if err != nil {
		return nil, err
	}
	if r.Status != 200 {
		return nil, fmt.Errorf("GET /transactions/%s: %d %s", id, r.Status, r.Raw)
	}
	tx, _ := r.Body["data"].(map[string]any)
	return tx, nil
}

// hlWaitSubmitted waits until every transaction of ids (u's) has left new
// (and waiting): each is submitted (or further) with a nonce. It returns
// them.
func (e *hlEnv) hlWaitSubmitted(u *hlUser, ids []string, timeout time.Duration) []map[string]any {
	e.t.Helper()
	out := make([]map[string]any, len(ids))
	eventually(e.t, timeout, "transactions submitted", func() bool {
		for i, id := range ids {
			tx, err := e.hlTx(u, id)
			if err != nil {
				e.t.Fatal(err)
			}
			if tx["status"] == "new" || tx["status"] == "waiting" || tx["nonce"] == nil || tx["transactionHash"] == nil {
				return false
			}
			out[i] = tx
		}
		return true
	})
	return out
}

// hlSummary is what hlCheck found.
type hlSummary struct {
	accepted, completed, failed int
	// lost counts transactions that ended otherwise than expected,
	// duplicated nonces held twice or transactions mined twice, stuck
	// transactions that had not ended by the deadline.
	lost, duplicated, stuck int
}

// hlCheck waits until every accepted transaction has ended and checks,
// per account, the promise that a nonce never drifts: the transactions
// holding a nonce hold 0..n-1 once each, the chain's nonce is n, each
// completed one is mined on chain with its nonce from its account, each
// failed one failed with the code failures names for it (others must
// complete), and each got its callback. It fails the test on any breach
// and returns the figures.
func (e *hlEnv) hlCheck(timeout time.Duration, failures map[string]string) hlSummary {
	e.t.Helper()
	t := e.t
	deadline := time.Now().Add(timeout)
	var sum hlSummary
	ended := map[string]map[string]any{}
	for _, u := range e.users {
		held := map[uint64]string{}
		for _, id := range u.accepted() {
			sum.accepted++
			var tx map[string]any
			for {
				var err error
				if tx, err = e.hlTx(u, id); err != nil {
					t.Fatal(err)
				}
				if st := tx["status"]; st == "completed" || st == "failed" || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if n, ok := tx["nonce"].(float64); ok {
				if other, dup := held[uint64(n)]; dup {
					sum.duplicated++
					t.Errorf("%s: transactions %s and %s both hold nonce %d", u.name, other, id, uint64(n))
				}
				held[uint64(n)] = id
			}
			errObj, _ := tx["error"].(map[string]any)
			switch tx["status"] {
			case "completed":
				sum.completed++
				if want := failures[id]; want != "" {
					sum.lost++
					t.Errorf("%s: transaction %s completed, want failed %s", u.name, id, want)
				}
				e.hlOnChain(u, tx)
			case "failed":
				sum.failed++
				if want := failures[id]; want == "" || errObj == nil || errObj["code"] != want {
					sum.lost++
					t.Errorf("%s: transaction %s failed %v, want %s", u.name, id, tx["error"], map[bool]string{true: "completed", false: "failed " + want}[want == ""])
				}
			default:
				sum.stuck++
				t.Errorf("%s: transaction %s still %v after %s", u.name, id, tx["status"], timeout)
				continue
			}
			ended[id] = tx
		}
		nonces := make([]uint64, 0, len(held))
		for n := range held {
			nonces = append(nonces, n)
		}
		sort.Slice(nonces, func(i, j int) bool { return nonces[i] < nonces[j] })
		for i, n := range nonces {
			if n != uint64(i) {
				t.Errorf("%s: the nonces held are %v, want 0..%d without gaps", u.name, nonces, len(nonces)-1)
				break
			}
		}
		var chainNonce hexutil.Uint64
		if err := e.node.Call(t.Context(), &chainNonce, "eth_getTransactionCount", u.address, "latest"); err != nil {
			t.Fatal(err)
		}
		if uint64(chainNonce) != uint64(len(held)) {
			t.Errorf("%s: the chain's nonce is %d, %d of our transactions hold a nonce", u.name, chainNonce, len(held))
		}
	}
	// Every ended transaction called its callback with its final record.
	seen := func() map[string]string {
		out := map[string]string{}
		for _, k := range e.hooks.at("/cb") {
			var p struct {
				Transaction struct{ ID, Status string } `json:"transaction"`
			}
			if json.Unmarshal(k.body, &p) == nil {
				out[p.Transaction.ID] = p.Transaction.Status
			}
		}
		return out
	}
	cbDeadline := time.Now().Add(30 * time.Second)
	for {
		got, missing := seen(), 0
		for id, tx := range ended {
			if got[id] != tx["status"] {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(cbDeadline) {
			t.Errorf("%d of %d ended transactions got no callback with their final status", missing, len(ended))
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("hlCheck: %d accepted, %d completed, %d failed (%d expected to); lost %d, duplicated %d, stuck %d",
		sum.accepted, sum.completed, sum.failed, len(failures), sum.lost, sum.duplicated, sum.stuck)
	return sum
}

// hlOnChain checks that the node holds a successful receipt of tx's hash,
// from u's account with tx's nonce.
func (e *hlEnv) hlOnChain(u *hlUser, tx map[string]any) {
	e.t.Helper()
	var receipt map[string]any
	if err := e.node.Call(e.t.Context(), &receipt, "eth_getTransactionByHash", tx["transactionHash"]); err != nil || receipt == nil {
		e.t.Errorf("%s: completed transaction %v: the node does not know its hash %v (%v)", u.name, tx["id"], tx["transactionHash"], err)
		return
	}
	var n hexutil.Uint64
	_ = n.UnmarshalText([]byte(receipt["nonce"].(string)))
	if !strings.EqualFold(receipt["from"].(string), u.address) || float64(n) != tx["nonce"] {
		e.t.Errorf("%s: completed transaction %v: the chain has it from %v with nonce %d, the service says nonce %v", u.name, tx["id"], receipt["from"], n, tx["nonce"])
	}
	if err := e.node.Call(e.t.Context(), &receipt, "eth_getTransactionReceipt", tx["transactionHash"]); err != nil || receipt == nil || receipt["status"] != "0x1" {
		e.t.Errorf("%s: completed transaction %v: receipt %v (%v)", u.name, tx["id"], receipt, err)
	}
}

// hlLogCalls logs the calls per method of st, and per block when blocks > 0.
func hlLogCalls(t *testing.T, what string, st rpcproxy.Stats, blocks uint64) {
	t.Helper()
	methods := make([]string, 0, len(st.Calls))
	total := 0
	for m, n := range st.Calls {
		methods = append(methods, m)
		total += n
	}
	sort.Strings(methods)
	var b strings.Builder
	for _, m := range methods {
		fmt.Fprintf(&b, "\n  %-28s %6d", m, st.Calls[m])
		if blocks > 0 {
			fmt.Fprintf(&b, "  %7.2f/block", float64(st.Calls[m])/float64(blocks))
		}
	}
	perBlock := ""
	if blocks > 0 {
		perBlock = fmt.Sprintf(", %.2f calls and %.2f HTTP requests per block over %d blocks", float64(total)/float64(blocks), float64(st.Requests)/float64(blocks), blocks)
	}
	t.Logf("%s: %d calls in %d HTTP requests (%d batches)%s; faults: %d refused, %d reset, %d answers lost, %d delayed%s",
		what, total, st.Requests, st.Batches, perBlock, st.Refused, st.Reset, st.Lost, st.Delayed, b.String())
}

// hlTotal is the number of calls in st.
func hlTotal(st rpcproxy.Stats) int {
	n := 0
	for _, c := range st.Calls {
		n += c
	}
	return n
}

// TestHardhatPausedMining: mining stops (no automine, no interval) for 30 s
// while a burst from four accounts is accepted; every transfer is sent and
// waits in the node's pool. The service does not storm the node while no
// block comes (its care of in-flight transactions counts blocks, not
// seconds), and when mining resumes every transfer completes exactly once.
func TestHardhatPausedMining(t *testing.T) {
	const users, each, pause = 4, 10, 30 * time.Second
	e := hlStart(t, hlOpts{users: users, rebroadcast: 2, replace: 4})
	e.node.SetAutomine(false)
	e.proxy.ResetStats()
	start := time.Now()
	e.hlBurst(each)
	for _, u := range e.users {
		e.hlWaitSubmitted(u, u.accepted(), time.Until(start.Add(pause)))
	}
	time.Sleep(time.Until(start.Add(pause)))
	st := e.proxy.Stats()
	paused := time.Since(start)
	hlLogCalls(t, fmt.Sprintf("paused %s", paused.Round(time.Second)), st, 0)

	e.node.SetIntervalMining(1000)
	sum := e.hlCheck(2*time.Minute, nil)
	if sum.failed != 0 || sum.completed != users*each {
		t.Errorf("%d completed, %d failed; want all %d completed", sum.completed, sum.failed, users*each)
	}
	// The bound: sending a transfer costs its estimate and its send,
	// with the fee and nonce reads shared by the account's batch (4 per
	// transfer is generous), and while no block comes the watcher's
	// safety-net poll reads the head about twice a second for the whole
	// service, whatever the number of accounts (4 per second is generous).
	// A storm (a resend or a nonce read per poll and account) would be
	// several times that. Measured: 163 calls in 30 s for 40 transfers
	// (40 estimates, 40 sends, 76 head reads, 4 nonce reads).
	bound := 4*users*each + 4*int(paused.Seconds())
	if got := hlTotal(st); got > bound {
		t.Errorf("%d JSON-RPC calls during the %s pause, want at most %d", got, paused.Round(time.Second), bound)
	}
	if n := st.Calls["eth_sendRawTransaction"]; n != users*each {
		t.Errorf("%d eth_sendRawTransaction during the pause for %d transfers: sent again while no block came", n, users*each)
	}
}

// TestHardhatConsumedNonce: the key of an account is used elsewhere while
// its five transfers wait in the pool: the node forgets them
// (hardhat_dropTransaction) and the account's nonce moves past them
// (hardhat_setNonce, once the other accounts' transfers are mined: Hardhat
// wants an empty pool), as if other transactions of the key had been mined.
// Those five fail with nonce_consumed (callbacks sent), the other
// accounts' transfers complete, and the account is not jammed: later
// transfers from it complete with the next nonces.
func TestHardhatConsumedNonce(t *testing.T) {
	e := hlStart(t, hlOpts{users: 3, rebroadcast: 2, replace: 4})
	a := e.users[0]
	e.node.SetAutomine(false)
	for range 3 {
		if _, err := e.hlSend(a); err != nil {
			t.Fatal(err)
		}
	}
	e.hlBurst(2)
	ids := a.accepted()
	txs := e.hlWaitSubmitted(a, ids, 60*time.Second)
	failures := map[string]string{}
	for _, tx := range txs {
		if !e.node.DropTransaction(common.HexToHash(tx["transactionHash"].(string))) {
			t.Fatalf("the node did not hold %v", tx["transactionHash"])
		}
		failures[tx["id"].(string)] = "nonce_consumed"
	}
	// Hardhat sets a nonce only with an empty pool: the other accounts'
	// transfers go into a block first.
	for _, u := range e.users[1:] {
		e.hlWaitSubmitted(u, u.accepted(), 60*time.Second)
	}
	e.node.Mine(1)
	e.node.SetNonce(common.HexToAddress(a.address), uint64(len(ids)))
	e.node.SetIntervalMining(500)
	sum := e.hlCheck(90*time.Second, failures)
	if sum.failed != len(ids) {
		t.Errorf("%d failed, want the %d whose nonces were consumed", sum.failed, len(ids))
	}
	for range 3 {
		if _, err := e.hlSend(a); err != nil {
			t.Fatal(err)
		}
	}
	sum = e.hlCheck(60*time.Second, failures)
	if sum.completed != sum.accepted-len(ids) {
		t.Errorf("after the consumed nonces: %d of %d completed", sum.completed, sum.accepted-len(ids))
	}
}

// TestHardhatAbandon: a transfer is stuck (mining off, the node forgot it)
// with two later transfers of its account behind it; an operator abandons
// it (202), mining resumes: its nonce is filled, it fails abandoned, the
// two behind it and later ones complete.
func TestHardhatAbandon(t *testing.T) {
	e := hlStart(t, hlOpts{users: 2, rebroadcast: 2, replace: 4})
	a := e.users[0]
	e.node.SetAutomine(false)
	for range 3 {
		if _, err := e.hlSend(a); err != nil {
			t.Fatal(err)
		}
	}
	e.hlBurst(2)
	txs := e.hlWaitSubmitted(a, a.accepted()[:3], 60*time.Second)
	var stuck map[string]any
	for _, tx := range txs {
		if tx["nonce"].(float64) == 0 {
			stuck = tx
		}
	}
	if stuck == nil {
		t.Fatalf("no transfer of %s holds nonce 0: %v", a.name, txs)
	}
	// Dropped before it is abandoned: only the filler can take its nonce.
	if !e.node.DropTransaction(common.HexToHash(stuck["transactionHash"].(string))) {
		t.Fatalf("the node did not hold %v", stuck["transactionHash"])
	}
	id := stuck["id"].(string)
	got := e.s.must(202, "POST", "/transactions/"+id+"/abandon", e.s.Token, nil).(map[string]any)
	if got["id"] != id {
		t.Fatalf("abandon answered %v", got)
	}
	e.node.SetIntervalMining(500)
	failures := map[string]string{id: "abandoned"}
	e.hlCheck(90*time.Second, failures)
	for range 2 {
		if _, err := e.hlSend(a); err != nil {
			t.Fatal(err)
		}
	}
	sum := e.hlCheck(60*time.Second, failures)
	if sum.failed != 1 || sum.completed != sum.accepted-1 {
		t.Errorf("%d completed, %d failed of %d; want one abandoned", sum.completed, sum.failed, sum.accepted)
	}
}

// TestHardhatProxyFaults: during a burst from four accounts toxiproxy
// delays every answer of the node by 20 ± 10 ms and, for three seconds,
// resets every connection (the http calls and the new-heads subscription)
// 100 ms after it sent data; the counting proxy adds 30 ms to every request,
// resets the connection of the first request sending a transaction (the
// node never sees it), and loses the answers of the next two (the node took
// them, the service cannot tell) and of one receipts request. Every
// transfer completes exactly once.
func TestHardhatProxyFaults(t *testing.T) {
	const users, each = 4, 8
	e := hlStart(t, hlOpts{users: users, rebroadcast: 2, replace: 4, tcp: true})
	e.proxy.ResetStats()
	e.tcp.Latency(20*time.Millisecond, 10*time.Millisecond)
	e.proxy.Delay("", 30*time.Millisecond)
	e.proxy.ResetOn("eth_sendRawTransaction", 1)
	e.proxy.LoseAnswer("eth_sendRawTransaction", 2)
	e.proxy.LoseAnswer("eth_getTransactionReceipt", 1)
	// Hardhat mines a block per transaction; a transaction the node never
	// got is sent again after rebroadcastBlocks blocks, which need more
	// transactions: interval mining keeps blocks coming.
	e.node.SetIntervalMining(500)
	done := make(chan []error, 1)
	go func() { done <- e.hlBurstErrs(each) }()
	time.Sleep(200 * time.Millisecond)
	e.tcp.ResetPeer(100 * time.Millisecond)
	time.Sleep(3 * time.Second)
	e.tcp.Clear()
	e.tcp.Latency(20*time.Millisecond, 10*time.Millisecond)
	for _, err := range <-done {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	sum := e.hlCheck(2*time.Minute, nil)
	st := e.proxy.Stats()
	hlLogCalls(t, "proxy faults (and 3 s of toxiproxy reset_peer)", st, 0)
	if sum.completed != users*each {
		t.Errorf("%d of %d completed", sum.completed, users*each)
	}
	if st.Reset < 1 || st.Lost < 3 {
		t.Errorf("faults injected: %d resets, %d answers lost; want 1 and 3", st.Reset, st.Lost)
	}
}

// TestHardhatTwelveSecondBlocks: a block every 12 s, confirmations 12,
// four accounts each sending a transfer every 4 s for two minutes (ten with
// TXENGINE_HARDHAT_LONG=1; give go test -timeout 30m). It reports the
// JSON-RPC calls per block, overall and per method, while sending, and
// asserts no storm: every transfer is sent exactly once (its nonce moves
// every block, so nothing is rebroadcast, and nothing mined is re-signed),
// and the calls per block stay under a bound linear in the accounts. Once
// sending stops, blocks come every 500 ms to reach the depth sooner, and
// every transfer completes exactly once.
func TestHardhatTwelveSecondBlocks(t *testing.T) {
	const users, every = 4, 4 * time.Second
	run := 2 * time.Minute
	if os.Getenv(hlLong) == "1" {
		run = 10 * time.Minute
	}
	e := hlStart(t, hlOpts{users: users, confirmations: 12})
	e.node.SetAutomine(false)
	e.node.SetIntervalMining(12000)
	e.proxy.ResetStats()
	head0 := e.node.Head()
	stop := time.Now().Add(run)
	var wg sync.WaitGroup
	for _, u := range e.users {
		wg.Go(func() {
			tick := time.NewTicker(every)
			defer tick.Stop()
			for time.Now().Before(stop) {
				if _, err := e.hlSend(u); err != nil {
					t.Error(err)
					return
				}
				<-tick.C
			}
		})
	}
	wg.Wait()
	steady := e.proxy.Stats()
	blocks := e.node.Head() - head0
	hlLogCalls(t, fmt.Sprintf("12 s blocks for %s", run), steady, blocks)

	e.node.SetIntervalMining(500)
	sum := e.hlCheck(3*time.Minute, nil)
	final := e.proxy.Stats()
	hlLogCalls(t, "until every transfer completed", final, 0)
	if sum.completed != sum.accepted {
		t.Errorf("%d of %d completed", sum.completed, sum.accepted)
	}
	if n := final.Calls["eth_sendRawTransaction"]; n != sum.accepted {
		t.Errorf("%d eth_sendRawTransaction for %d transfers: sent again or re-signed although every nonce moved each block", n, sum.accepted)
	}
	// The bound: per block each account sends three transfers (estimate
	// and send each, fee reads shared), and the head is read about three
	// times a second whatever the number of accounts (the watcher's
	// safety-net poll, the transfer indexer, fee quotes): 36 reads per 12 s
	// block. Measured over two minutes with four accounts: 66.5 calls per
	// block (37.5 eth_getBlockByNumber, 12 eth_estimateGas, 12
	// eth_sendRawTransaction, 3 eth_maxPriorityFeePerGas, 1 eth_getLogs,
	// 0.8 eth_getTransactionCount); over ten minutes 77.8 per block (39.7
	// head and block reads, 12.2 estimates, 12.2 sends, 9.2 receipts: one
	// per transfer, 3.1 tip quotes, 1 eth_getLogs, 0.3 nonce reads), and
	// exactly one eth_sendRawTransaction per transfer. 25 calls per account
	// and block leaves
	// room for a slow machine; a resend per block and transaction would
	// not fit.
	if blocks > 0 {
		if per := float64(hlTotal(steady)) / float64(blocks); per > 25*users {
			t.Errorf("%.1f JSON-RPC calls per block, want at most %d", per, 25*users)
		}
	}
}
