package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/txengine/txengine/actors"
	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/engine/prom"
	apihttp "github.com/txengine/txengine/http"
	"github.com/txengine/txengine/internal/provision"
)

// serve runs the service until ctx is cancelled, then shuts down in reverse
// order of start-up: HTTP, the metrics listener, actors, the keyring
// watcher, networks, store.
func serve(ctx context.Context, configPath string, stdout, stderr io.Writer, getenv func(string) string) error {
	cfg, err := config.Load(configPath, getenv)
	if err != nil {
		return err
	}
	n := &node{cfg: cfg, log: newLogger(cfg.Log, stderr)}
	var started stack // the stops of what the steps started, run when serve returns
	defer started.stop()
	started.push(n.stopWatchdog) // last: the watchdog bounds every other stop
	// The order of start-up; each step fills the fields of n the next ones
	// need and may return the stop of what it started.
	for _, step := range []func(context.Context) (stop func(), err error){
		n.openStore,     // store and key sealer
		n.newMetrics,    // Prometheus registry and metrics
		n.startNetworks, // node connections, instrumented
		n.bootstrap,     // operator user, account, token; demo token
		n.watchKeys,     // plain secrets sealed; keyring watcher
		n.startActors,   // cluster, custody, actors
		n.newAPI,        // the HTTP API
		n.serveMetrics,  // the metrics listener, when it has its own address
		n.listen,        // the API listener
	} {
		stop, err := step(ctx)
		started.push(stop)
		if err != nil {
			return err
		}
	}
	base := "http://" + n.ln.Addr().String()
	printBanner(stdout, base, n.op, filepath.Join(cfg.DataDir, "operator.token"))
	n.log.Info("serving", "addr", n.ln.Addr().String(), "networks", n.nets.names())

	select {
	case <-ctx.Done():
	case err := <-n.served:
		return fmt.Errorf("http server: %w", err)
	}
	n.shutdownHTTP()
	return nil
}

// node is what serve's steps start, in the order they start it.
type node struct {
	cfg config.Config
	log *slog.Logger

	store   engine.Store
	sealer  *keystore.KeySealer
	reg     *prometheus.Registry
	metrics *prom.Metrics
	nets    *networks
	op      *provision.Operator
	cluster *actors.ClusterConfig // nil unless cluster mode
	signer  *keystore.Custody
	sys     *actors.System
	api     *apihttp.Server
	// metricsHandler serves /metrics (behind its token, if any).
	metricsHandler nethttp.Handler
	ln             net.Listener
	srv            *nethttp.Server
	served         chan error // srv.Serve's end

	watchdog *time.Timer // runs from the shutdown signal to the last stop
}

// openStore opens the store and loads the key sealer.
func (n *node) openStore(ctx context.Context) (func(), error) {
	store, sealer, err := openSealed(ctx, n.cfg)
	if err != nil {
		return nil, err
	}
	n.store, n.sealer = store, sealer
	return closing(n.log, "store", store.Close), nil
}

// newMetrics creates the Prometheus registry and the service's metrics.
func (n *node) newMetrics(context.Context) (func(), error) {
	var err error
	n.reg, n.metrics, err = newMetrics(n.cfg)
	return nil, err
}

// startNetworks connects to the configured networks (or starts the
// embedded dev chain) and instruments their chains.
func (n *node) startNetworks(ctx context.Context) (func(), error) {
	nets, err := startNetworks(ctx, n.cfg, n.log)
	if err != nil {
		return nil, err
	}
	for name, nw := range nets.byName {
		nw.Chain = n.metrics.InstrumentChain(name, nw.Chain)
	}
	n.nets = nets
	return closing(n.log, "networks", nets.Close), nil
}

// bootstrap provisions the operator (bootstrap).
func (n *node) bootstrap(ctx context.Context) (func(), error) {
	op, err := bootstrap(ctx, n.store, n.sealer, n.nets, n.cfg.DataDir, n.cfg.Cluster.Enabled, n.log)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	n.op = op
	return nil, nil
}

// watchKeys seals the secrets still stored in plain text and starts the
// keyring watcher.
func (n *node) watchKeys(ctx context.Context) (func(), error) {
	if err := sealPlainSecrets(ctx, n.store, n.sealer, n.log); err != nil {
		return nil, err
	}
	kw, err := startKeyringWatcher(ctx, n.cfg, n.sealer, n.log)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	return kw.Close, nil
}

// startActors starts the actor system (in cluster mode, as a member) with
// the key custody of the configuration, and registers its gauges. Once
// the actors run, the returned stop stops them, even with an error.
func (n *node) startActors(ctx context.Context) (func(), error) {
	cc, err := clusterConfig(n.cfg, n.store)
	if err != nil {
		return nil, err
	}
	signer, err := custody(ctx, n.cfg.KMS, n.sealer, n.log)
	if err != nil {
		return nil, err
	}
	n.cluster, n.signer = cc, signer
	cfg := n.cfg
	sys, err := actors.Start(ctx, actors.Config{
		Store: n.store, Signer: signer, Clock: engine.SystemClock{}, Log: n.log,
		Networks: n.nets.byName, Faucets: n.nets.faucets, NewHeads: newHeads(n.log),
		IdleAccount: cfg.Engine.IdleAccount, MaxBatch: cfg.Engine.MaxBatch, Metrics: n.metrics,
		Callbacks: callbacksConfig(cfg, n.sealer), Cluster: cc,
	})
	if err != nil {
		return nil, fmt.Errorf("start actors: %w", err)
	}
	n.sys = sys
	stop := func() {
		began := time.Now()
		sys.Close()
		n.log.Info("actors stopped", "took", time.Since(began))
	}
	if err := prom.RegisterLiveAccounts(n.reg, sys.LiveAccounts); err != nil {
		return stop, err
	}
	if err := prom.RegisterCallbackOutbox(n.reg, n.store.PendingCallbacks); err != nil {
		return stop, err
	}
	return stop, nil
}

// newAPI creates the HTTP API over the actors and the store.
func (n *node) newAPI(context.Context) (func(), error) {
	cfg, store, nets, sys, cc := n.cfg, n.store, n.nets, n.sys, n.cluster
	limits := apihttp.RateLimitConfig{PerSecond: cfg.RateLimit.PerSecond, PerHour: cfg.RateLimit.PerHour,
		AuthFailuresPerSecond: cfg.RateLimit.AuthFailuresPerSecond, AuthFailuresPerHour: cfg.RateLimit.AuthFailuresPerHour}
	if cc != nil {
		// Every node counts in the shared store: the limits hold cluster-wide.
		limits.Counter = store
	}
	metricsToken, err := cfg.Metrics.Token()
	if err != nil {
		return nil, err
	}
	metricsHandler := apihttp.MetricsAuth(metricsToken, prom.Handler(n.reg))
	apiCfg := apihttp.Config{
		AllowPrivateCallbacks: cfg.CallbacksAllowPrivate(), MaxHeadAge: cfg.Health.MaxHeadAge,
		RateLimit: limits,
		Quotas: apihttp.QuotaConfig{MaxUsers: cfg.Quotas.MaxUsers, MaxAccounts: cfg.Quotas.MaxAccounts, MaxSubscriptions: cfg.Quotas.MaxSubscriptions,
			FaucetPerOwner: cfg.Quotas.FaucetPerOwner, FaucetPeriod: cfg.Quotas.FaucetPeriod,
			FaucetNetworks: slices.Sorted(maps.Keys(nets.faucets))},
		RequestTimeout: cfg.HTTP.RequestTimeout,
		Cluster:        cfg.Cluster.Enabled,
		TrustedProxies: cfg.HTTP.TrustedProxies,
	}
	if err := apiCfg.Validate(); err != nil {
		return nil, err
	}
	api := apihttp.NewServer(apiCfg, apihttp.Deps{
		Store: store, Sealer: n.sealer, KMS: n.signer.KMS, Networks: nets.byName, Engine: sys, Clock: engine.SystemClock{}, Logger: n.log,
		Metrics: n.metrics, MetricsHandler: mainListenerMetrics(cfg, metricsHandler), Revocations: revocations(sys, cc),
	})
	sys.OnTokenRevoked(api.ForgetToken) // tokens revoked on other members
	n.api, n.metricsHandler = api, metricsHandler
	return api.Close, nil // after the HTTP server stopped (stops run in reverse)
}

// serveMetrics starts the metrics listener when metrics have their own
// listen address.
func (n *node) serveMetrics(context.Context) (func(), error) {
	if n.cfg.Metrics.Listen == "" {
		return nil, nil
	}
	ms, err := startMetricsServer(n.cfg.Metrics.Listen, n.metricsHandler, n.log)
	if err != nil {
		return nil, err
	}
	return func() { ms.Shutdown(context.Background()) }, nil
}

// listen starts serving the API on the listen address. The server stops
// in shutdownHTTP (or on its own, with an error on served).
func (n *node) listen(context.Context) (func(), error) {
	ln, err := net.Listen("tcp", n.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", n.cfg.Listen, err)
	}
	n.ln = ln
	n.srv = newHTTPServer(n.api.Handler(), n.cfg.HTTP.RequestTimeout)
	n.served = make(chan error, 1)
	go func() { n.served <- n.srv.Serve(ln) }()
	return nil, nil
}

// shutdownHTTP refuses new API requests (503), lets the accepted ones
// finish (their transactions are committed before they answer); then
// serve's stops stop the rest. Half the budget goes to HTTP; the watchdog
// bounds the whole.
func (n *node) shutdownHTTP() {
	timeout := n.cfg.ShutdownTimeout
	n.log.Info("shutting down", "timeout", timeout)
	n.watchdog = startWatchdog(timeout, n.log)
	n.api.Drain()
	time.Sleep(drainGrace(timeout))
	shutdownCtx, cancel := context.WithTimeout(context.Background(), timeout/2)
	defer cancel()
	began := time.Now()
	if err := n.srv.Shutdown(shutdownCtx); err != nil {
		n.log.Warn("http shutdown", "err", err)
	}
	n.log.Info("http stopped", "took", time.Since(began))
}

// stopWatchdog stops the shutdown watchdog, if the shutdown started it.
func (n *node) stopWatchdog() {
	if n.watchdog != nil {
		n.watchdog.Stop()
	}
}

// revocations is who hears of the tokens this node revokes: the other
// members in cluster mode, nobody otherwise.
func revocations(sys *actors.System, cc *actors.ClusterConfig) apihttp.TokenRevocations {
	if cc == nil {
		return nil
	}
	return sys
}

// newHTTPServer returns the API listener's server. Its timeouts back up the
// per-request deadline of the handler (requestTimeout): reading a request
// (headers and body, at most 1 MiB) may take that long, writing the answer
// a little longer than the handler may run, and an idle keep-alive
// connection is closed after two minutes.
func newHTTPServer(h nethttp.Handler, requestTimeout time.Duration) *nethttp.Server {
	return &nethttp.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       requestTimeout,
		WriteTimeout:      requestTimeout + 5*time.Second,
		IdleTimeout:       2 * time.Minute,
	}
}

// mainListenerMetrics is the /metrics handler of the API listener: h, or
// nil (404 there) when metrics have their own listen address.
func mainListenerMetrics(cfg config.Config, h nethttp.Handler) nethttp.Handler {
	if cfg.Metrics.Listen != "" {
		return nil
	}
	return h
}

// bootstrap makes sure the operator user exists with a default account and
// a token in <dataDir>/operator.token, that its default account has gas on
// every network with a faucet, and, on the embedded dev chain, that the demo
// token is deployed and registered to it.
//
// In cluster mode several nodes may start at once: funding the operator
// may then race another node's faucet for its nonce, so a failure is a
// warning (the faucet grain tops the account up later).
func bootstrap(ctx context.Context, store engine.Store, sealer *keystore.KeySealer, nets *networks, dataDir string, clustered bool, log *slog.Logger) (*provision.Operator, error) {
	op, err := provision.EnsureOperator(ctx, store, sealer, filepath.Join(dataDir, "operator.token"))
	if err != nil {
		return nil, err
	}
	for _, name := range nets.names() {
		faucet, ok := nets.faucets[name]
		if !ok {
			continue
		}
		if err := provision.FundAndWait(ctx, nets.byName[name], faucet, op.Account.Address); err != nil {
			if !clustered {
				return nil, fmt.Errorf("fund operator account: %w", err)
			}
			log.Warn("funding the operator account failed", "network", name, "err", err)
		}
	}
	if nets.embedded {
		dev := nets.byName[devNetwork]
		nft, err := provision.EnsureDemo(ctx, store, dev, nets.faucets[devNetwork], op, log)
		if err != nil {
			return nil, err
		}
		dev.SystemNFTs = []common.Address{nft}
	}
	return op, nil
}

// newLogger returns the slog logger of cfg writing to w.
func newLogger(cfg config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// loadOrCreateSecret reads n random bytes kept hex-encoded in path, creating
// the file (mode 0600) on first use.
func loadOrCreateSecret(path string, n int) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		b, err := hex.DecodeString(strings.TrimSpace(string(raw)))
		if err != nil || len(b) != n {
			return nil, fmt.Errorf("%s: not %d hex-encoded bytes", path, n)
		}
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return b, provision.WriteSecretFile(path, []byte(hex.EncodeToString(b)+"\n"))
}

// printBanner prints where the service listens and how to authenticate:
// the operator token itself only when this start created it (the first
// start, or when its file was missing or stale), otherwise only the file
// that holds it, so that a restart does not put the token in every log
// that collects the service's output.
func printBanner(w io.Writer, base string, op *provision.Operator, tokenPath string) {
	fmt.Fprintf(w, "txengine is listening on %s\n", base)
	if op.Created {
		fmt.Fprintf(w, "operator token: %s\n", op.Token)
		fmt.Fprintf(w, "operator user %s; token saved in %s (shown only now, when it was created)\n", op.User.ID, tokenPath)
		fmt.Fprintf(w, "try: curl -H 'Authorization: Bearer %s' %s/tokens\n", op.Token, base)
		return
	}
	fmt.Fprintf(w, "operator token file: %s\n", tokenPath)
	fmt.Fprintf(w, "operator user %s; its token is in that file (printed only when it was created)\n", op.User.ID)
	fmt.Fprintf(w, "try: curl -H \"Authorization: Bearer $(cat %s)\" %s/tokens\n", tokenPath, base)
}
