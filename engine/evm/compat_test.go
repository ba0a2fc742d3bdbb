package evm

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm/evmtest"
	"github.com/txengine/txengine/internal/gethtest"
)

// strictNode is a JSON-RPC server over http that behaves like Hardhat's
// node (hardhat@2) in the two ways that broke the client, and forwards
// every other request to a real backend:
//   - a call object (eth_call, eth_estimateGas) holding both "data" and
//     "input" is refused with "duplicate field `data`";
//   - eth_getBlockReceipts is refused as a method it does not support.
//
// It counts the requests by method, batched or not.
type strictNode struct {
	backend *rpc.Client
	// noReceiptFor makes eth_getTransactionReceipt answer null for these
	// hashes, as a node that has a block but not yet indexed its receipts.
	noReceiptFor map[common.Hash]bool

	mu    sync.Mutex
	calls map[string]int
}

type rpcRequest struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

type rpcErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcErrorBody   `json:"error,omitempty"`
}

// startStrictNode serves a strictNode in front of backend until the test ends.
func startStrictNode(t *testing.T, backend *rpc.Client) (*strictNode, string) {
	t.Helper()
	n := &strictNode{backend: backend, calls: map[string]int{}, noReceiptFor: map[common.Hash]bool{}}
	srv := httptest.NewServer(n)
	t.Cleanup(srv.Close)
	return n, srv.URL
}

// count returns how many requests of method the node received.
func (n *strictNode) count(method string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls[method]
}

func (n *strictNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		var reqs []rpcRequest
		if err := json.Unmarshal(b, &reqs); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resps := make([]rpcResponse, len(reqs))
		for i, req := range reqs {
			resps[i] = n.serve(r.Context(), req)
		}
		_ = json.NewEncoder(w).Encode(resps)
		return
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_ = json.NewEncoder(w).Encode(n.serve(r.Context(), req))
}

func (n *strictNode) serve(ctx context.Context, req rpcRequest) rpcResponse {
	n.mu.Lock()
	n.calls[req.Method]++
	n.mu.Unlock()
	resp := rpcResponse{JSONRPC: "2.0", ID: req.ID}
	switch req.Method {
	case "eth_getBlockReceipts":
		// Hardhat 2.29.1's answer.
		resp.Error = &rpcErrorBody{Code: -32004, Message: "Method eth_getBlockReceipts is not supported"}
		return resp
	case "eth_call", "eth_estimateGas":
		var obj map[string]json.RawMessage
		if len(req.Params) > 0 && json.Unmarshal(req.Params[0], &obj) == nil {
			_, data := obj["data"]
			_, input := obj["input"]
			if data && input {
				resp.Error = &rpcErrorBody{Code: -32602, Message: "Errors encountered in param 0: duplicate field `data`"}
				return resp
			}
		}
	case "eth_getTransactionReceipt":
		var h common.Hash
		if len(req.Params) == 1 && json.Unmarshal(req.Params[0], &h) == nil && n.noReceiptFor[h] {
			resp.Result = json.RawMessage("null")
			return resp
		}
	}
	args := make([]any, len(req.Params))
	for i, p := range req.Params {
		args[i] = p
	}
	var result json.RawMessage
	if err := n.backend.CallContext(ctx, &result, req.Method, args...); err != nil {
		resp.Error = &rpcErrorBody{Code: -32000, Message: err.Error()}
		var re rpc.Error
		if errors.As(err, &re) {
			resp.Error.Code = re.ErrorCode()
		}
		var de rpc.DataError
		if errors.As(err, &de) {
			resp.Error.Data = de.ErrorData()
		}
		return resp
	}
	resp.Result = result
	return resp
}

// signTransfers signs count token transfers of one unit each from key to
// fresh addresses, with consecutive nonces from the account's pending one.
func signTransfers(ctx context.Context, t *testing.T, chain *Client, key *ecdsa.PrivateKey, tk token, count int) []*types.Transaction {
	t.Helper()
	from := crypto.PubkeyToAddress(key.PublicKey)
	nonce, err := chain.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	id, err := chain.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	signer := types.LatestSignerForChainID(id)
	txs := make([]*types.Transaction, count)
	for i := range txs {
		data := tk.pack("transfer", common.BigToAddress(big.NewInt(int64(0x1000+i))), big.NewInt(1))
		gas, err := chain.EstimateGas(ctx, ethereum.CallMsg{From: from, To: &tk.addr, Data: data})
		if err != nil {
			t.Fatalf("estimate transfer %d: %v", i, err)
		}
		txs[i], err = types.SignNewTx(key, signer, &types.DynamicFeeTx{
			ChainID: id, Nonce: nonce + uint64(i), GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9),
			Gas: gas * 2, To: &tk.addr, Data: data,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return txs
}

// TestHardhatLikeNode: against a node that refuses call objects with both
// "data" and "input" and does not serve eth_getBlockReceipts, the client's
// calls, estimates and balance batches succeed and read the data, and
// BlockReceipts falls back to receipts by transaction hash after asking
// eth_getBlockReceipts once, returning what eth_getBlockReceipts returns.
// The strict node forwards to go-ethereum's simulated backend.
func TestHardhatLikeNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	key := mustKey(t)
	sim := evmtest.Start(t, 5*time.Millisecond, crypto.PubkeyToAddress(key.PublicKey))
	direct, err := Dial(ctx, sim.IPC)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	checkStrictNode(ctx, t, direct, key, sim.Pause)
}

// TestHardhatLikeNodeOnGeth: the same in front of a real geth --dev, which
// also serves the client directly (eth_getBlockReceipts, "data" alone).
func TestHardhatLikeNodeOnGeth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	node := gethtest.Start(t)
	direct, err := Dial(ctx, node.HTTPURL)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	checkStrictNode(ctx, t, direct, node.FaucetKey, nil)
}

// checkStrictNode runs the client through a strictNode in front of direct,
// with key's account funded; pause, when not nil, stops and resumes mining
// so that several transactions share a block.
func checkStrictNode(ctx context.Context, t *testing.T, direct *Client, key *ecdsa.PrivateKey, pause func(bool)) {
	owner := crypto.PubkeyToAddress(key.PublicKey)
	node, url := startStrictNode(t, direct.RPC())
	client, err := Dial(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	// Deploy and transfer through the strict node: eth_estimateGas with
	// data, eth_call of balanceOf.
	supply := ether(1_000_000)
	tk := deployToken(ctx, t, client, key, supply)
	if got := tk.balanceOf(ctx, client, owner); got.Cmp(supply) != 0 {
		t.Fatalf("balanceOf through the strict node = %s, want %s", got, supply)
	}
	pending, err := client.PendingCallContract(ctx, ethereum.CallMsg{To: &tk.addr, Data: tk.pack("balanceOf", owner)})
	if err != nil || new(big.Int).SetBytes(pending).Cmp(supply) != 0 {
		t.Fatalf("pending balanceOf = %x, %v; want %s", pending, err, supply)
	}
	// The estimate is the one geth makes with the data read: a transfer
	// estimated without its data would revert or cost 21,000-odd gas.
	msg := ethereum.CallMsg{From: owner, To: &tk.addr, Data: tk.pack("transfer", common.HexToAddress("0xbeef"), big.NewInt(5))}
	viaStrict, err := client.EstimateGas(ctx, msg)
	if err != nil {
		t.Fatalf("EstimateGas through the strict node: %v", err)
	}
	viaGeth, err := direct.EstimateGas(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	if viaStrict != viaGeth || viaStrict <= 21_000+1_000 {
		t.Fatalf("estimate through the strict node %d, direct %d: want equal and above a plain transfer", viaStrict, viaGeth)
	}
	gas, errs, err := client.BatchEstimateGas(ctx, []ethereum.CallMsg{msg, msg})
	if err != nil || errs[0] != nil || errs[1] != nil || gas[0] != viaGeth {
		t.Fatalf("BatchEstimateGas = %v, %v, %v; want %d twice", gas, errs, err, viaGeth)
	}
	res, err := client.BatchCall(ctx, []engine.CallRequest{{From: owner, To: tk.addr, Data: tk.pack("balanceOf", owner)}})
	if err != nil || res[0].Err != nil || new(big.Int).SetBytes(res[0].Data).Cmp(supply) != 0 {
		t.Fatalf("BatchCall = %+v, %v; want the supply", res, err)
	}
	bals, balErrs, err := client.BatchBalances(ctx, []engine.BalanceQuery{{Holder: owner, Token: tk.addr}, {Holder: owner, ETH: true}})
	if err != nil || balErrs[0] != nil || balErrs[1] != nil || bals[0].Cmp(supply) != 0 || bals[1].Sign() <= 0 {
		t.Fatalf("BatchBalances = %v, %v, %v; want the supply and some ETH", bals, balErrs, err)
	}

	// Several transfers in one block, sent through the strict node.
	if pause != nil {
		pause(true)
	}
	txs := signTransfers(ctx, t, client, key, tk, 5)
	sendErrs, err := client.BatchSendTransactions(ctx, txs)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range sendErrs {
		if e != nil {
			t.Fatalf("send %d: %v", i, e)
		}
	}
	if pause != nil {
		pause(false)
	}
	var blocks []uint64
	for _, tx := range txs {
		r, err := WaitMined(ctx, client, tx.Hash())
		if err != nil {
			t.Fatal(err)
		}
		if len(blocks) == 0 || blocks[len(blocks)-1] != r.BlockNumber.Uint64() {
			blocks = append(blocks, r.BlockNumber.Uint64())
		}
	}
	head, err := client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pause != nil && len(blocks) != 1 {
		t.Fatalf("the paused chain mined the transfers in blocks %v, want one block", blocks)
	}
	t.Logf("transfers mined in blocks %v", blocks)
	transferBlocks := len(blocks)
	// The transfers' blocks, the genesis block and the head.
	blocks = append(blocks, 0, head.Number.Uint64())
	for i, number := range blocks {
		want, err := direct.BlockReceipts(ctx, number)
		if err != nil {
			t.Fatalf("direct eth_getBlockReceipts of %d: %v", number, err)
		}
		got, err := client.BlockReceipts(ctx, number)
		if err != nil {
			t.Fatalf("BlockReceipts of %d through the strict node: %v", number, err)
		}
		if i == 0 && transferBlocks == 1 && len(want) != len(txs) {
			t.Fatalf("block %d has %d receipts, want %d", number, len(want), len(txs))
		}
		wantJSON, _ := json.Marshal(want)
		gotJSON, _ := json.Marshal(got)
		if !bytes.Equal(gotJSON, wantJSON) {
			t.Fatalf("receipts of block %d by transaction:\n%s\nwant (eth_getBlockReceipts):\n%s", number, gotJSON, wantJSON)
		}
	}
	if !client.ReadsReceiptsByTransaction() {
		t.Error("the client did not note that the node has no eth_getBlockReceipts")
	}
	if n := node.count("eth_getBlockReceipts"); n != 1 {
		t.Errorf("eth_getBlockReceipts asked %d times, want once (detection on first use)", n)
	}
	if n := node.count("eth_getTransactionReceipt"); n < len(txs)+1 {
		t.Errorf("eth_getTransactionReceipt asked %d times, want at least %d", n, len(txs)+1)
	}
	if _, err := client.BlockReceipts(ctx, head.Number.Uint64()+1_000_000); !errors.Is(err, ethereum.NotFound) {
		t.Errorf("BlockReceipts of a future block: %v, want ethereum.NotFound", err)
	}

	// TransactionReceipts: one batch, nil for a hash the node does not know.
	unknown := common.HexToHash("0x1234")
	before := node.count("eth_getTransactionReceipt")
	got, err := client.TransactionReceipts(ctx, []common.Hash{txs[0].Hash(), unknown, txs[4].Hash()})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] == nil || got[0].TxHash != txs[0].Hash() || got[1] != nil || got[2] == nil || got[2].TxHash != txs[4].Hash() {
		t.Fatalf("TransactionReceipts = %v", got)
	}
	if n := node.count("eth_getTransactionReceipt") - before; n != 3 {
		t.Errorf("%d receipt lookups for 3 hashes", n)
	}

	// A block whose receipt the node has not indexed yet is an error the
	// caller retries, not a block without that transaction.
	node.mu.Lock()
	node.noReceiptFor[txs[2].Hash()] = true
	node.mu.Unlock()
	r2, _ := direct.TransactionReceipt(ctx, txs[2].Hash())
	if _, err := client.BlockReceipts(ctx, r2.BlockNumber.Uint64()); !errors.Is(err, ErrReceiptMissing) {
		t.Errorf("BlockReceipts with a receipt missing: %v, want ErrReceiptMissing", err)
	}
}

// TestBlockReceiptsKeepsAskingAfterOtherErrors: an error that is not the
// node refusing the method (a missing block, a node overloaded) does not
// switch the client to receipts by transaction.
func TestBlockReceiptsKeepsAskingAfterOtherErrors(t *testing.T) {
	var mu sync.Mutex
	var asked int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req rpcRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		asked++
		n := asked
		mu.Unlock()
		if n == 1 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rpcResponse{JSONRPC: "2.0", ID: req.ID,
			Error: &rpcErrorBody{Code: -32000, Message: "header not found"}})
	}))
	defer srv.Close()
	c, err := Dial(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		if _, err := c.BlockReceipts(context.Background(), 7); err == nil {
			t.Fatal("BlockReceipts succeeded against a failing node")
		}
	}
	if c.ReadsReceiptsByTransaction() {
		t.Error("the client gave up eth_getBlockReceipts after errors that are not about the method")
	}
	if asked != 3 {
		t.Errorf("%d requests, want 3 eth_getBlockReceipts", asked)
	}
}

// TestMethodUnsupported: the answers of nodes that do not have a method
// are told apart from other failures.
func TestMethodUnsupported(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"geth", jsonError(-32601, "the method eth_getBlockReceipts does not exist/is not available"), true},
		{"hardhat", jsonError(-32004, "Method eth_getBlockReceipts is not supported"), true},
		{"provider with another code", jsonError(-32600, "Unsupported method: eth_getBlockReceipts"), true},
		{"http status", rpc.HTTPError{StatusCode: 400, Status: "400 Bad Request", Body: []byte(`{"error":{"code":-32601,"message":"x"}}`)}, true},
		{"http status without a method", rpc.HTTPError{StatusCode: 503, Status: "503", Body: []byte("overloaded")}, false},
		{"missing block", jsonError(-32000, "header not found"), false},
		{"block not available", jsonError(-32000, "block not available"), false},
		{"timeout", fmt.Errorf("post: %w", context.DeadlineExceeded), false},
		{"transport", errors.New("connection refused"), false},
	} {
		if got := methodUnsupported(tc.err); got != tc.want {
			t.Errorf("%s: methodUnsupported(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// jsonError is a JSON-RPC error as the rpc client returns it.
type jsonErr struct {
	code int
	msg  string
}

func (e jsonErr) Error() string  { return e.msg }
func (e jsonErr) ErrorCode() int { return e.code }

func jsonError(code int, msg string) error { return fmt.Errorf("call: %w", jsonErr{code, msg}) }

// TestCallTimeout: against a node that never answers, every call returns
// within the call timeout (or the caller's sooner deadline) with
// context.DeadlineExceeded.
func TestCallTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	const timeout = 300 * time.Millisecond
	const slack = time.Second
	c, err := Dial(context.Background(), srv.URL, WithCallTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.CallTimeout() != timeout {
		t.Fatalf("CallTimeout = %s", c.CallTimeout())
	}
	to := common.HexToAddress("0x1")
	msg := ethereum.CallMsg{To: &to, Data: []byte{1}}
	calls := map[string]func(context.Context) error{
		"ChainID":          func(ctx context.Context) error { _, err := c.ChainID(ctx); return err },
		"HeaderByNumber":   func(ctx context.Context) error { _, err := c.HeaderByNumber(ctx, nil); return err },
		"NonceAt":          func(ctx context.Context) error { _, err := c.NonceAt(ctx, to, nil); return err },
		"PendingNonceAt":   func(ctx context.Context) error { _, err := c.PendingNonceAt(ctx, to); return err },
		"BalanceAt":        func(ctx context.Context) error { _, err := c.BalanceAt(ctx, to, nil); return err },
		"EstimateGas":      func(ctx context.Context) error { _, err := c.EstimateGas(ctx, msg); return err },
		"SuggestGasPrice":  func(ctx context.Context) error { _, err := c.SuggestGasPrice(ctx); return err },
		"SuggestGasTipCap": func(ctx context.Context) error { _, err := c.SuggestGasTipCap(ctx); return err },
		"CallContract":     func(ctx context.Context) error { _, err := c.CallContract(ctx, msg, nil); return err },
		"SendTransaction": func(ctx context.Context) error {
			return c.SendTransaction(ctx, types.NewTx(&types.LegacyTx{}))
		},
		"BlockReceipts":       func(ctx context.Context) error { _, err := c.BlockReceipts(ctx, 1); return err },
		"TransactionReceipt":  func(ctx context.Context) error { _, err := c.TransactionReceipt(ctx, common.Hash{1}); return err },
		"PendingCallContract": func(ctx context.Context) error { _, err := c.PendingCallContract(ctx, msg); return err },
		"FilterLogs": func(ctx context.Context) error {
			_, err := c.FilterLogs(ctx, ethereum.FilterQuery{Addresses: []common.Address{to}})
			return err
		},
		"TransactionCount": func(ctx context.Context) error { _, err := c.TransactionCount(ctx, common.Hash{1}); return err },
		"TransactionReceipts": func(ctx context.Context) error {
			_, err := c.TransactionReceipts(ctx, []common.Hash{{1}})
			return err
		},
		"BatchCall": func(ctx context.Context) error {
			_, err := c.BatchCall(ctx, []engine.CallRequest{{To: to}})
			return err
		},
		"BatchBalances": func(ctx context.Context) error {
			_, _, err := c.BatchBalances(ctx, []engine.BalanceQuery{{Holder: to, ETH: true}})
			return err
		},
		"BatchEstimateGas": func(ctx context.Context) error {
			_, _, err := c.BatchEstimateGas(ctx, []ethereum.CallMsg{msg})
			return err
		},
		"BatchSendTransactions": func(ctx context.Context) error {
			_, err := c.BatchSendTransactions(ctx, []*types.Transaction{types.NewTx(&types.LegacyTx{})})
			return err
		},
	}
	// Every method of engine.Node is among them.
	chainType := reflect.TypeFor[engine.Node]()
	for i := range chainType.NumMethod() {
		if _, ok := calls[chainType.Method(i).Name]; !ok {
			t.Errorf("engine.Node's %s is not tested for its timeout", chainType.Method(i).Name)
		}
	}
	t.Run("calls", func(t *testing.T) {
		for name, call := range calls {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				start := time.Now()
				err := call(context.Background())
				if took := time.Since(start); took < timeout || took > timeout+slack {
					t.Errorf("returned after %s, want about %s", took, timeout)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("err = %v, want context.DeadlineExceeded", err)
				}
			})
		}
	})
	// A caller's sooner deadline stays.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.ChainID(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took >= timeout {
		t.Errorf("the caller's 50ms deadline took %s", took)
	}
	if c.ReadsReceiptsByTransaction() {
		t.Error("a timeout switched the client to receipts by transaction")
	}
}

// TestErrorsDoNotNameTheURL: errors of calls to a node that cannot be
// reached keep the node's scheme and host but not the rest of its URL (an
// API key in the path or query, a user and password), and stay transport
// errors for errors.As.
func TestErrorsDoNotNameTheURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // connections to addr are refused from now on
	c, err := Dial(context.Background(), "http://user:PASSWORD@"+addr+"/v3/SECRETKEY?key=SECRET2")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	to := common.HexToAddress("0x1")
	ctx := context.Background()
	errs := map[string]error{}
	_, errs["ChainID"] = c.ChainID(ctx)
	_, errs["HeaderByNumber"] = c.HeaderByNumber(ctx, nil)
	errs["SendTransaction"] = c.SendTransaction(ctx, types.NewTx(&types.LegacyTx{}))
	_, errs["EstimateGas"] = c.EstimateGas(ctx, ethereum.CallMsg{To: &to})
	_, errs["BatchCall"] = c.BatchCall(ctx, []engine.CallRequest{{To: to}})
	_, errs["BlockReceipts"] = c.BlockReceipts(ctx, 1)
	_, errs["TransactionReceipts"] = c.TransactionReceipts(ctx, []common.Hash{{1}})
	for name, err := range errs {
		var ue *neturl.Error
		switch {
		case err == nil:
			t.Errorf("%s: no error from a refusing port", name)
		case strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "PASSWORD"):
			t.Errorf("%s: %v names the URL", name, err)
		case !strings.Contains(err.Error(), addr) || !errors.As(err, &ue):
			t.Errorf("%s: %v, want a transport error naming the host", name, err)
		}
	}
	if c.ReadsReceiptsByTransaction() {
		t.Error("a refused connection switched the client to receipts by transaction")
	}
}
