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

	"github.com/txengine/txengine/actors"
	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/engine/prom"
	apihttp "github.com/txengine/txengine/http"
	"github.com/txengine/txengine/internal/provision"
)

// serve runs the service until ctx is cancelled, then shuts down in reverse
// order of start-up: HTTP, actors, networks, store.
func serve(ctx context.Context, configPath string, stdout, stderr io.Writer, getenv func(string) string) error {
	cfg, err := config.Load(configPath, getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log, stderr)
	var watchdog *time.Timer // runs from the shutdown signal to the last deferred close
	defer func() {
		if watchdog != nil {
			watchdog.Stop()
		}
	}()
	store, sealer, err := openSealed(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		began := time.Now()
		if err := store.Close(); err != nil {
			log.Error("closing store", "err", err)
		}
		log.Info("store closed", "took", time.Since(began))
	}()
	reg, metrics, err := newMetrics(cfg)
	if err != nil {
		return err
	}

	nets, err := startNetworks(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		began := time.Now()
		if err := nets.Close(); err != nil {
			log.Error("closing networks", "err", err)
		}
		log.Info("networks closed", "took", time.Since(began))
	}()
	for name, n := range nets.byName {
		n.Chain = metrics.InstrumentChain(name, n.Chain)
	}

	op, err := bootstrap(ctx, store, sealer, nets, cfg.DataDir, cfg.Cluster.Enabled, log)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if err := sealPlainSecrets(ctx, store, sealer, log); err != nil {
		return err
	}
	kw, err := startKeyringWatcher(ctx, cfg, sealer, log)
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	defer kw.Close()
	cc, err := clusterConfig(cfg, store)
	if err != nil {
		return err
	}
	signer, err := custody(ctx, cfg.KMS, sealer, log)
	if err != nil {
		return err
	}

	sys, err := actors.Start(ctx, actors.Config{
		Store: store, Signer: signer, Clock: engine.SystemClock{}, Log: log,
		Networks: nets.byName, Faucets: nets.faucets, NewHeads: newHeads(log),
		IdleAccount: cfg.Engine.IdleAccount, MaxBatch: cfg.Engine.MaxBatch, Metrics: metrics,
		Callbacks: callbacksConfig(cfg, sealer), Cluster: cc,
	})
	if err != nil {
		return fmt.Errorf("start actors: %w", err)
	}
	defer func() {
		began := time.Now()
		sys.Close()
		log.Info("actors stopped", "took", time.Since(began))
	}()
	if err := prom.RegisterLiveAccounts(reg, sys.LiveAccounts); err != nil {
		return err
	}
	if err := prom.RegisterCallbackOutbox(reg, store.PendingCallbacks); err != nil {
		return err
	}

	limits := apihttp.RateLimitConfig{PerSecond: cfg.RateLimit.PerSecond, PerHour: cfg.RateLimit.PerHour,
		AuthFailuresPerSecond: cfg.RateLimit.AuthFailuresPerSecond, AuthFailuresPerHour: cfg.RateLimit.AuthFailuresPerHour}
	if cc != nil {
		// Every node counts in the shared store: the limits hold cluster-wide.
		limits.Counter = store
	}
	metricsToken, err := cfg.Metrics.Token()
	if err != nil {
		return err
	}
	metricsHandler := apihttp.MetricsAuth(metricsToken, prom.Handler(reg))
	api := apihttp.NewServer(apihttp.Config{
		AllowPrivateCallbacks: cfg.CallbacksAllowPrivate(), MaxHeadAge: cfg.Health.MaxHeadAge,
		RateLimit: limits,
		Quotas: apihttp.QuotaConfig{MaxUsers: cfg.Quotas.MaxUsers, MaxAccounts: cfg.Quotas.MaxAccounts, MaxSubscriptions: cfg.Quotas.MaxSubscriptions,
			FaucetPerOwner: cfg.Quotas.FaucetPerOwner, FaucetPeriod: cfg.Quotas.FaucetPeriod,
			FaucetNetworks: slices.Sorted(maps.Keys(nets.faucets))},
		RequestTimeout: cfg.HTTP.RequestTimeout,
		Cluster:        cfg.Cluster.Enabled,
		TrustedProxies: cfg.HTTP.TrustedProxies,
	}, apihttp.Deps{
		Store: store, Sealer: sealer, KMS: signer.KMS, Networks: nets.byName, Engine: sys, Clock: engine.SystemClock{}, Logger: log,
		Metrics: metrics, MetricsHandler: mainListenerMetrics(cfg, metricsHandler), Revocations: revocations(sys, cc),
	})
	sys.OnTokenRevoked(api.ForgetToken) // tokens revoked on other members
	if cfg.Metrics.Listen != "" {
		ms, err := startMetricsServer(cfg.Metrics.Listen, metricsHandler, log)
		if err != nil {
			return err
		}
		defer ms.Shutdown(context.Background())
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	srv := newHTTPServer(api.Handler(), cfg.HTTP.RequestTimeout)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	base := "http://" + ln.Addr().String()
	printBanner(stdout, base, op, filepath.Join(cfg.DataDir, "operator.token"))
	log.Info("serving", "addr", ln.Addr().String(), "networks", nets.names())

	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	}
	// Shutdown: refuse new API requests (503), let the accepted ones
	// finish (their transactions are committed before they answer), then
	// the deferred closes stop the actors, the networks and the store. Half
	// the budget goes to HTTP; the watchdog bounds the whole.
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	watchdog = startWatchdog(cfg.ShutdownTimeout, log)
	api.Drain()
	time.Sleep(drainGrace(cfg.ShutdownTimeout))
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout/2)
	defer cancel()
	began := time.Now()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("http shutdown", "err", err)
	}
	log.Info("http stopped", "took", time.Since(began))
	return nil
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
