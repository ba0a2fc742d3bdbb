package cluster

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/contracts"
	"github.com/txengine/txengine/engine/evm"
	"github.com/txengine/txengine/internal/etcdtest"
	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/internal/racelog"
	"github.com/txengine/txengine/internal/servicetest"
	"github.com/txengine/txengine/persistence/postgres/pgtest"

	"github.com/txengine/txengine/internal/freeport"
)

// network is the name of the geth network in the nodes' configuration.
const network = "geth"

// Membership providers of cluster.provider; single is no cluster at all
// (cluster.enabled false): one node, the harness's baseline.
const (
	automanaged = "automanaged"
	etcdProv    = "etcd"
	single      = ""
)

// stack is the shared parts of a test (one PostgreSQL database, one geth
// --dev node, an etcd server for provider etcd) and its txengine nodes.
type stack struct {
	t        *testing.T
	provider string
	dbURL    string
	geth     *gethtest.Node
	etcd     *etcdtest.Server
	// eth reads the chain (and funds and deploys with the test's key).
	eth *evm.Client
	// masterKey is shared by every node: they decrypt the same account keys.
	masterKey string
	// serviceFaucet is the nodes' faucet key (funded from the geth node's
	// faucet key, which the test keeps for itself).
	serviceFaucet *ecdsa.PrivateKey
	nodes         []*node
	// token is the operator's token, printed by the first node to start.
	token string
	// tokenID is the id of the ERC-20 the transfers move (registered to the
	// operator).
	tokenID string
}

// newStack starts PostgreSQL (a fresh database), geth --dev, etcd when the
// provider is etcd, and n txengine nodes (the first alone, so that it
// creates the operator, then the others together), and waits until every
// node is ready. It deploys an ERC-20 and registers it to the operator.
func newStack(t *testing.T, provider string, n int) *stack {
	t.Helper()
	return newStackWith(t, provider, n, stackOptions{})
}

// stackOptions are what the benchmark changes in a stack.
type stackOptions struct {
	// dbURL is the database (empty: a fresh one from pgtest.New).
	dbURL string
	// env is added to every node's environment; nodeEnv, when set, adds
	// node i's own.
	env     []string
	nodeEnv func(i int) []string
}

// newStackWith is newStack with options.
func newStackWith(t *testing.T, provider string, n int, o stackOptions) *stack {
	t.Helper()
	if testing.Short() {
		t.Skip("cluster test: runs three txengine nodes, PostgreSQL and geth")
	}
	s := &stack{t: t, provider: provider}
	s.dbURL = o.dbURL
	if s.dbURL == "" {
		s.dbURL = pgtest.New(t)
	}
	s.geth = gethtest.Start(t)
	if provider == etcdProv {
		s.etcd = etcdtest.Start(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eth, err := evm.Dial(ctx, s.geth.HTTPURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eth.Close)
	s.eth = eth
	var mk [32]byte
	if _, err := rand.Read(mk[:]); err != nil {
		t.Fatal(err)
	}
	s.masterKey = hex.EncodeToString(mk[:])
	if s.serviceFaucet, err = crypto.GenerateKey(); err != nil {
		t.Fatal(err)
	}
	s.fund(ctx, []common.Address{crypto.PubkeyToAddress(s.serviceFaucet.PublicKey)}, new(big.Int).Mul(big.NewInt(500), big.NewInt(1e18)))

	dir := t.TempDir()
	ports := make([][3]int, n) // listen, cluster.port, automanaged.port
	var peers []string
	for i := range ports {
		ports[i] = [3]int{freeport.Get(t), freeport.Get(t), freeport.Get(t)}
		peers = append(peers, fmt.Sprintf("127.0.0.1:%d", ports[i][2]))
	}
	for i := range n {
		nd := &node{t: t, name: fmt.Sprintf("node%d", i), dataDir: filepath.Join(dir, fmt.Sprintf("node%d", i)),
			listen: ports[i][0], clusterPort: ports[i][1], amPort: ports[i][2], env: o.env}
		if o.nodeEnv != nil {
			nd.env = append(slices.Clip(nd.env), o.nodeEnv(i)...)
		}
		nd.cfgPath = filepath.Join(dir, nd.name+".yaml")
		if err := os.MkdirAll(nd.dataDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(nd.cfgPath, []byte(s.config(nd, peers)), 0o600); err != nil {
			t.Fatal(err)
		}
		s.nodes = append(s.nodes, nd)
		t.Cleanup(func() {
			nd.kill()
			nd.failOnRace()
			if t.Failed() {
				t.Logf("%s output (tail):\n%s", nd.name, nd.logTail(120))
				nd.keepLog()
			}
		})
	}
	began := time.Now()
	s.nodes[0].start()
	s.token = s.nodes[0].token()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, nd := range s.nodes[1:] {
		wg.Go(func() { errs[i+1] = nd.launch() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, nd := range s.nodes {
		nd.waitReady(90 * time.Second)
	}
	t.Logf("%d node(s) ready (provider %q) in %s", n, provider, time.Since(began).Round(time.Millisecond))
	s.tokenID = s.deployToken(ctx)
	return s
}

// config is node nd's YAML configuration file: the shared database,
// network and master key, its own listen address and data dir, and in
// cluster mode its own cluster and membership ports with every node's
// membership address as peers (docs/cluster.md).
func (s *stack) config(nd *node, peers []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "listen: 127.0.0.1:%d\n", nd.listen)
	fmt.Fprintf(&b, "dataDir: %s\n", nd.dataDir)
	fmt.Fprintf(&b, "masterKey: %q\n", s.masterKey)
	fmt.Fprintf(&b, "database:\n  url: %q\n", s.dbURL)
	fmt.Fprintf(&b, "networks:\n")
	fmt.Fprintf(&b, "  - name: %s\n    chainId: %d\n    httpUrl: %s\n    wsUrl: %s\n", network, gethtest.ChainID, s.geth.HTTPURL, s.geth.WSURL)
	fmt.Fprintf(&b, "    faucetKey: %q\n", hex.EncodeToString(crypto.FromECDSA(s.serviceFaucet)))
	// No replacement of a slow transaction during a test: what is checked
	// is that each nonce was broadcast with one hash.
	fmt.Fprintf(&b, "    replaceBlocks: 10000\n")
	// The tests drive one user (the operator, exempt anyway) hard; the rate
	// limits are tested in http/.
	fmt.Fprintf(&b, "rateLimit:\n  perSecond: 100000\n  perHour: 100000000\n")
	fmt.Fprintf(&b, "shutdownTimeout: 30s\n")
	// The subscription checks' callback receiver listens on loopback.
	fmt.Fprintf(&b, "callbacks:\n  allowPrivate: true\n")
	if s.provider == single {
		return b.String()
	}
	fmt.Fprintf(&b, "cluster:\n  enabled: true\n  name: txengine-test\n  host: 127.0.0.1\n  port: %d\n  provider: %s\n", nd.clusterPort, s.provider)
	switch s.provider {
	case automanaged:
		fmt.Fprintf(&b, "  automanaged:\n    port: %d\n    peers: [%s]\n", nd.amPort, strings.Join(peers, ", "))
	case etcdProv:
		fmt.Fprintf(&b, "  etcd:\n    endpoints: [%s]\n    prefix: /txengine-test\n", s.etcd.Endpoint)
	}
	return b.String()
}

// fund sends value wei from the geth node's faucet key (the test's own) to
// each address and waits until every transfer is mined.
func (s *stack) fund(ctx context.Context, to []common.Address, value *big.Int) {
	s.t.Helper()
	key := s.geth.FaucetKey
	from := crypto.PubkeyToAddress(key.PublicKey)
	nonce, err := s.eth.PendingNonceAt(ctx, from)
	if err != nil {
		s.t.Fatalf("fund: nonce: %v", err)
	}
	head, err := s.eth.HeaderByNumber(ctx, nil)
	if err != nil {
		s.t.Fatalf("fund: head: %v", err)
	}
	tip := big.NewInt(1e9)
	feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(4)), tip)
	signer := types.LatestSignerForChainID(big.NewInt(gethtest.ChainID))
	var hashes []common.Hash
	for _, addr := range to {
		tx, err := types.SignNewTx(key, signer, &types.DynamicFeeTx{ChainID: big.NewInt(gethtest.ChainID), Nonce: nonce,
			GasTipCap: tip, GasFeeCap: feeCap, Gas: 21000, To: &addr, Value: value})
		if err != nil {
			s.t.Fatal(err)
		}
		if err := s.eth.SendTransaction(ctx, tx); err != nil {
			s.t.Fatalf("fund %s: %v", addr.Hex(), err)
		}
		hashes = append(hashes, tx.Hash())
		nonce++
	}
	for _, h := range hashes {
		r, err := evm.WaitMined(ctx, s.eth, h)
		if err != nil {
			s.t.Fatalf("fund: %v", err)
		}
		if r.Status != types.ReceiptStatusSuccessful {
			s.t.Fatalf("fund: %s failed", h.Hex())
		}
	}
}

// deployToken deploys the built-in ERC-20 from the test's key and registers
// it to the operator through the first node (PUT /contracts, type erc20);
// it returns the token's id. The transfers of the tests move 0 tokens: any
// account may send them and each is a real transaction with its own nonce.
func (s *stack) deployToken(ctx context.Context) string {
	s.t.Helper()
	art := contracts.ERC20()
	holder := crypto.PubkeyToAddress(s.geth.FaucetKey.PublicKey)
	data, err := art.DeployData("Cluster Token", "CT", big.NewInt(1_000_000), holder)
	if err != nil {
		s.t.Fatal(err)
	}
	addr, _, err := evm.Deploy(ctx, s.eth, s.geth.FaucetKey, data)
	if err != nil {
		s.t.Fatalf("deploy the token: %v", err)
	}
	r, err := s.nodes[0].post("/contracts", "PUT", s.token, "", map[string]any{
		"name": "Cluster Token", "network": network, "address": addr.Hex(), "type": "erc20",
	})
	if err != nil || r.Status != 201 {
		s.t.Fatalf("register the token: %v %d %s", err, r.Status, r.Raw)
	}
	return r.Data()["id"].(string)
}

// node is one txengine process of the stack; it keeps its ports, data dir
// and configuration across restarts.
type node struct {
	t           *testing.T
	name        string
	dataDir     string
	cfgPath     string
	listen      int
	clusterPort int
	amPort      int
	// env is added to the process's environment at every start.
	env []string

	mu   sync.Mutex
	logs bytes.Buffer
	// proc is the running process; nil when the node is down.
	proc *servicetest.Process
	// banner is the operator token of its last start.
	banner string
}

// URL is the node's API base URL (the same across restarts).
func (n *node) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", n.listen) }

// start runs the node and waits for its banner (it serves from then on).
func (n *node) start() {
	n.t.Helper()
	if err := n.launch(); err != nil {
		n.t.Fatal(err)
	}
}

// launch is start without the test: it may run on any goroutine.
func (n *node) launch() error {
	n.mu.Lock()
	if n.proc != nil {
		n.mu.Unlock()
		return fmt.Errorf("%s: already running", n.name)
	}
	fmt.Fprintf(&n.logs, "=== %s start %s\n", n.name, time.Now().Format(time.RFC3339Nano))
	n.mu.Unlock()
	// A -race binary exits 66 when it saw any race, protoactor-go's own
	// included; failOnRace reads the reports instead, so the exit status
	// keeps meaning what the service says.
	p, err := servicetest.Start(binary, []string{"serve", "--config", n.cfgPath}, servicetest.Options{
		Env:    append([]string{"TXENGINE_LOG_LEVEL=info", "GORACE=exitcode=0"}, n.env...),
		Output: writerFunc(n.write), MaxLogs: 1 << 20,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", n.name, err)
	}
	n.mu.Lock()
	n.proc, n.banner = p, p.Token
	n.mu.Unlock()
	return nil
}

// token is the operator token the node printed at its last start.
func (n *node) token() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.banner
}

// running reports whether the process runs.
func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil
}

// take returns the running process and marks the node down.
func (n *node) take() *servicetest.Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.proc
	n.proc = nil
	return p
}

// kill sends SIGKILL (kill -9) and waits until the process is gone; a no-op
// when it does not run.
func (n *node) kill() {
	p := n.take()
	if p == nil {
		return
	}
	p.Kill()
	_, _ = n.write([]byte(fmt.Sprintf("=== %s killed (SIGKILL) %s\n", n.name, time.Now().Format(time.RFC3339Nano))))
}

// stop sends SIGTERM and expects exit status 0 within a minute (the
// graceful shutdown is bounded by shutdownTimeout, 30s here).
func (n *node) stop() {
	n.t.Helper()
	p := n.take()
	if p == nil {
		return
	}
	err := p.Stop(time.Minute)
	_, _ = n.write([]byte(fmt.Sprintf("=== %s exited after SIGTERM: %v %s\n", n.name, err, time.Now().Format(time.RFC3339Nano))))
	if err != nil {
		n.t.Errorf("%s after SIGTERM: %v\n%s", n.name, err, n.logTail(60))
	}
}

// restart stops the node (SIGTERM), starts it again on the same ports,
// data dir and configuration, and waits until it is ready.
func (n *node) restart() {
	n.t.Helper()
	n.stop()
	n.start()
	n.waitReady(90 * time.Second)
}

// waitReady polls /readyz until it answers 200.
func (n *node) waitReady(timeout time.Duration) {
	n.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r, err := n.get("/readyz", "")
		if err == nil && r.Status == 200 {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("%s not ready after %s: %v %d %s\n%s", n.name, timeout, err, r.Status, r.Raw, n.logTail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (n *node) write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.logs.Write(p)
}

// EnvLogs names the environment variable of a directory where a failed
// test leaves each node's whole output (<test>-<node>.log).
const EnvLogs = "TXENGINE_CLUSTER_TEST_LOGS"

// keepLog writes the node's whole output into $TXENGINE_CLUSTER_TEST_LOGS,
// when set.
func (n *node) keepLog() {
	dir := os.Getenv(EnvLogs)
	if dir == "" {
		return
	}
	n.mu.Lock()
	out := append([]byte(nil), n.logs.Bytes()...)
	n.mu.Unlock()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(n.t.Name()) + "-" + n.name + ".log"
	if err := os.MkdirAll(dir, 0o755); err == nil {
		err = os.WriteFile(filepath.Join(dir, name), out, 0o644)
		if err == nil {
			n.t.Logf("%s's whole output: %s", n.name, filepath.Join(dir, name))
			return
		}
	}
	n.t.Logf("%s: cannot keep its output in %s", n.name, dir)
}

// failOnRace fails the test with every data race report in the output of
// the node's processes (the binary is built with -race) that involves our
// code (racelog.Ours). Races between two accesses inside protoactor-go's
// cluster (its gossip and member lists, as the in-process cluster tests of
// ./actors already show) are the library's: they are counted and logged,
// with the frames that raced, not fixed here.
func (n *node) failOnRace() {
	n.t.Helper()
	n.mu.Lock()
	out := n.logs.String()
	n.mu.Unlock()
	ours, library := racelog.Split(out)
	for _, r := range ours {
		n.t.Errorf("%s reported a data race:\n%s", n.name, r)
	}
	for _, l := range library {
		n.t.Logf("%s: data races inside a library (not our code), %s", n.name, l)
	}
}

// logTail is the last lines the node's processes wrote.
func (n *node) logTail(lines int) string {
	n.mu.Lock()
	all := strings.Split(strings.TrimRight(n.logs.String(), "\n"), "\n")
	n.mu.Unlock()
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
