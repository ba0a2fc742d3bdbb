package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/txengine/txengine/actors"
	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/contracts"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm"
	"github.com/txengine/txengine/engine/prom"
	apihttp "github.com/txengine/txengine/http"
)

// devNetwork is the name of the embedded chain's network.
const devNetwork = "dev"

// serve runs the service until ctx is cancelled, then shuts down in reverse
// order of start-up: HTTP, actors, chain, store.
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
	sealer, err := loadSealer(cfg)
	if err != nil {
		return err
	}
	store, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.Error("closing store", "err", err)
		}
	}()
	reg, metrics, err := newMetrics(cfg)
	if err != nil {
		return err
	}

	faucetKey, err := evm.LoadOrCreateKey(filepath.Join(cfg.DataDir, "faucet.key"))
	if err != nil {
		return fmt.Errorf("faucet key: %w", err)
	}
	chain, err := evm.StartDevChain(evm.DevChainConfig{
		DataDir: filepath.Join(cfg.DataDir, "chain"), Period: cfg.Dev.BlockPeriod, FaucetKey: faucetKey,
	})
	if err != nil {
		return fmt.Errorf("start dev chain: %w", err)
	}
	defer func() {
		if err := chain.Close(); err != nil {
			log.Error("closing dev chain", "err", err)
		}
	}()
	poll := cfg.Dev.BlockPeriod / 4
	if poll < 50*time.Millisecond {
		poll = 50 * time.Millisecond
	}
	dev := &engine.Network{
		Name: devNetwork, ChainID: chain.ChainID(), Confirmations: 0,
		InFlight: cfg.Engine.InFlight, GasMarginPercent: cfg.Engine.GasMarginPercent,
		PollInterval: poll, Chain: metrics.InstrumentChain(devNetwork, chain.Client()),
	}
	networks := map[string]*engine.Network{devNetwork: dev}
	faucet := engine.NewFaucet(dev, faucetKey, cfg.Dev.FaucetAmount())

	operator, token, err := bootstrap(ctx, store, sealer, dev, faucet, cfg.DataDir, log)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}

	sys, err := actors.Start(ctx, actors.Config{
		Store: store, Signer: sealer, Clock: engine.SystemClock{}, Log: log,
		Networks: networks, Faucets: map[string]*engine.Faucet{devNetwork: faucet},
		IdleAccount: cfg.Engine.IdleAccount, MaxBatch: cfg.Engine.MaxBatch, Metrics: metrics,
	})
	if err != nil {
		return fmt.Errorf("start actors: %w", err)
	}
	defer sys.Close()

	api := apihttp.NewServer(apihttp.Config{
		AllowPrivateCallbacks: true, MaxHeadAge: cfg.Health.MaxHeadAge,
		RateLimit: apihttp.RateLimitConfig{PerSecond: cfg.RateLimit.PerSecond, PerHour: cfg.RateLimit.PerHour},
	}, apihttp.Deps{
		Store: store, Sealer: sealer, Networks: networks, Engine: sys, Clock: engine.SystemClock{}, Logger: log,
		Metrics: metrics, MetricsHandler: mainListenerMetrics(cfg, reg),
	})
	if cfg.Metrics.Listen != "" {
		ms, err := startMetricsServer(cfg.Metrics.Listen, prom.Handler(reg), log)
		if err != nil {
			return err
		}
		defer ms.Shutdown(context.Background())
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	srv := &nethttp.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "txengine is listening on %s\n", base)
	fmt.Fprintf(stdout, "operator token: %s\n", token)
	fmt.Fprintf(stdout, "operator user %s; token also in %s\n", operator.ID, filepath.Join(cfg.DataDir, "operator.token"))
	fmt.Fprintf(stdout, "try: curl -H 'Authorization: Bearer %s' %s/tokens\n", token, base)
	log.Info("serving", "addr", ln.Addr().String(), "network", devNetwork)

	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	}
	// Shutdown: refuse new API requests (503), let the accepted ones
	// finish (their transactions are committed before they answer), then
	// the deferred closes stop the actors, the chain and the store. Half
	// the budget goes to HTTP; the watchdog bounds the whole.
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	watchdog = startWatchdog(cfg.ShutdownTimeout, log)
	api.Drain()
	time.Sleep(drainGrace(cfg.ShutdownTimeout))
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout/2)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("http shutdown", "err", err)
	}
	return nil
}

// mainListenerMetrics is the /metrics handler of the API listener: nil
// (404 there) when metrics have their own listen address.
func mainListenerMetrics(cfg config.Config, reg *prometheus.Registry) nethttp.Handler {
	if cfg.Metrics.Listen != "" {
		return nil
	}
	return prom.Handler(reg)
}

// bootstrap makes sure the operator user exists with a default account and
// a token in <dataDir>/operator.token, that its default account has gas, and
// that the demo token is deployed and registered to it.
func bootstrap(ctx context.Context, store engine.Store, sealer *engine.KeySealer, dev *engine.Network, faucet *engine.Faucet, dataDir string, log *slog.Logger) (*engine.User, string, error) {
	tokenPath := filepath.Join(dataDir, "operator.token")
	op, err := store.FirstOperator(ctx)
	var token string
	switch {
	case engine.IsNotFound(err):
		acct, err := sealer.NewAccount()
		if err != nil {
			return nil, "", err
		}
		secret, err := engine.NewSecret(32)
		if err != nil {
			return nil, "", err
		}
		now := engine.SystemClock{}.Now()
		op = &engine.User{ID: uuid.NewString(), Operator: true, CallbackSecret: secret, Created: now}
		acct.ID, acct.Owner, acct.Default, acct.Created = uuid.NewString(), op.ID, true, now
		tok, hash, err := engine.NewToken()
		if err != nil {
			return nil, "", err
		}
		if err := store.CreateUser(ctx, op, hash, acct); err != nil {
			return nil, "", fmt.Errorf("create operator: %w", err)
		}
		token = tok
		log.Info("created operator user", "user", op.ID)
	case err != nil:
		return nil, "", err
	default:
		if b, err := os.ReadFile(tokenPath); err == nil {
			token = strings.TrimSpace(string(b))
			if u, err := store.UserByTokenHash(ctx, engine.HashToken(token)); err != nil || u.ID != op.ID {
				token = ""
			}
		}
		if token == "" {
			tok, hash, err := engine.NewToken()
			if err != nil {
				return nil, "", err
			}
			if err := store.AddToken(ctx, op.ID, hash); err != nil {
				return nil, "", fmt.Errorf("operator token: %w", err)
			}
			token = tok
		}
	}
	if err := writeSecretFile(tokenPath, []byte(token+"\n")); err != nil {
		return nil, "", fmt.Errorf("write operator token: %w", err)
	}
	acct, err := store.DefaultAccount(ctx, op.ID)
	if err != nil {
		return nil, "", fmt.Errorf("operator default account: %w", err)
	}
	hashes, err := faucet.Fund(ctx, []common.Address{acct.Address})
	if err != nil {
		return nil, "", fmt.Errorf("fund operator account: %w", err)
	}
	for _, h := range hashes {
		if _, err := evm.WaitMined(ctx, dev.Chain, h); err != nil {
			return nil, "", fmt.Errorf("fund operator account: %w", err)
		}
	}
	if err := ensureDemoToken(ctx, store, dev, faucet, op, acct, log); err != nil {
		return nil, "", fmt.Errorf("demo token: %w", err)
	}
	return op, token, nil
}

// demoName is the registered name of the demo token.
const demoName = "Demo Token"

// demoSupply is the demo token's supply: one million tokens of 18 decimals.
var demoSupply = new(big.Int).Mul(big.NewInt(1_000_000), new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil))

// ensureDemoToken deploys the demo ERC-20 (supply to the operator's default
// account) and registers it to the operator, once. After a hard kill the
// embedded chain may come back without the deployment's block: the token is
// then deployed again by the same key with the same nonce, so at the same
// address, and the registration stays valid.
func ensureDemoToken(ctx context.Context, store engine.Store, dev *engine.Network, faucet *engine.Faucet, op *engine.User, acct *engine.Account, log *slog.Logger) error {
	existing, err := store.ListContracts(ctx, engine.ContractFilter{Owner: op.ID, Network: dev.Name, Types: []string{engine.TypeERC20}})
	if err != nil {
		return err
	}
	var registered *engine.Contract
	for _, c := range existing {
		if c.Name == demoName {
			registered = c
			if deployed, err := codeAt(ctx, dev, c.Address); err == nil && deployed {
				return nil
			}
		}
	}
	art := contracts.ERC20()
	data, err := art.DeployData(demoName, "DEMO", demoSupply, acct.Address)
	if err != nil {
		return err
	}
	head, err := dev.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		return err
	}
	addr, _, err := evm.Deploy(ctx, dev.Chain, faucet.Key(), data)
	if err != nil {
		return err
	}
	if registered != nil && registered.Address == addr {
		log.Warn("demo token was lost with the chain's newest blocks; deployed it again at its address", "address", addr.Hex())
		return nil
	}
	now := engine.SystemClock{}.Now()
	c := &engine.Contract{
		ID: uuid.NewString(), Owner: op.ID, Name: demoName, Network: dev.Name, Address: addr,
		ABI: art.ABI, BWType: engine.TypeERC20, BWVer: "1", Block: head.Number.Uint64(), Created: now,
	}
	if err := store.CreateContract(ctx, c); err != nil {
		return err
	}
	log.Info("deployed demo token", "address", addr.Hex(), "contract", c.ID)
	return nil
}

// codeAt reports whether a contract is deployed at addr.
func codeAt(ctx context.Context, net *engine.Network, addr common.Address) (bool, error) {
	// totalSupply() succeeds only where the token's code is.
	_, err := engine.ReadTokenInfo(ctx, net.Chain, addr)
	return err == nil, err
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
	return b, writeSecretFile(path, []byte(hex.EncodeToString(b)+"\n"))
}

// writeSecretFile writes data to path with mode 0600, atomically.
func writeSecretFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
