// Package config loads txengine's configuration: defaults, an optional YAML
// file, then TXENGINE_* environment overrides, then validation that names the
// bad key and says why.
package config

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the whole configuration of the service.
type Config struct {
	// Listen is the HTTP listen address (TXENGINE_LISTEN).
	Listen string `yaml:"listen"`
	// DataDir holds the embedded store, the embedded chain, the generated
	// master key and the operator token (TXENGINE_DATA_DIR).
	DataDir string `yaml:"dataDir"`
	// MasterKey is the hex 32-byte key that encrypts account keys
	// (TXENGINE_MASTER_KEY). Empty: generated once into <dataDir>/master.key.
	MasterKey string `yaml:"masterKey"`
	// PreviousMasterKeys are former master keys (hex, 32 bytes each) that
	// still open values sealed under them but never seal, while
	// `txengine keys rotate` re-encrypts those values under MasterKey
	// (TXENGINE_PREVIOUS_MASTER_KEYS, comma-separated). Without MasterKey
	// they add to <dataDir>/master.key.previous.
	PreviousMasterKeys []string `yaml:"previousMasterKeys"`
	Database           Database `yaml:"database"`
	// Networks are real chains over JSON-RPC. Empty: the embedded dev chain.
	Networks []Network `yaml:"networks"`
	Dev      DevChain  `yaml:"dev"`
	Engine   Engine    `yaml:"engine"`
	Log      Log       `yaml:"log"`
	// Operational settings (ops.go).
	Metrics   Metrics   `yaml:"metrics"`
	RateLimit RateLimit `yaml:"rateLimit"`
	Quotas    Quotas    `yaml:"quotas"`
	Health    Health    `yaml:"health"`
	// ShutdownTimeout bounds the graceful shutdown after SIGTERM or SIGINT
	// (TXENGINE_SHUTDOWN_TIMEOUT).
	ShutdownTimeout time.Duration `yaml:"shutdownTimeout"`
	// Callbacks configures callback delivery (config/callbacks.go).
	Callbacks Callbacks `yaml:"callbacks"`
	// HTTP tunes the API listener (config/ops.go).
	HTTP HTTP `yaml:"http"`
	// Cluster configures cluster mode (config/cluster.go).
	Cluster Cluster `yaml:"cluster"`
	// KMS configures accounts whose key lives in AWS KMS (config/kms.go).
	KMS KMS `yaml:"kms"`
}

// Database selects the store.
type Database struct {
	// URL is a postgres:// URL (TXENGINE_DATABASE_URL) that selects the
	// PostgreSQL store; empty selects the embedded store under DataDir.
	URL string `yaml:"url"`
}

// Network is one real chain reached over JSON-RPC.
type Network struct {
	// Name identifies the network in the API (^[a-z0-9][a-z0-9-]{0,31}$,
	// unique; TXENGINE_NETWORK_NAME).
	Name string `yaml:"name"`
	// ChainID is checked against the node at start (TXENGINE_NETWORK_CHAIN_ID).
	ChainID uint64 `yaml:"chainId"`
	// HTTPURL is an http(s):// JSON-RPC endpoint (TXENGINE_NETWORK_HTTP_URL).
	HTTPURL string `yaml:"httpUrl"`
	// WSURL is a ws(s):// endpoint; with it the watcher subscribes to new
	// heads instead of polling (TXENGINE_NETWORK_WS_URL).
	WSURL string `yaml:"wsUrl"`
	// Confirmations is the depth at which a mined transaction completes
	// (TXENGINE_NETWORK_CONFIRMATIONS).
	Confirmations uint64 `yaml:"confirmations"`
	// PollInterval is how often the watcher polls without a subscription
	// (and the safety-net poll with one). Default 1s.
	PollInterval time.Duration `yaml:"pollInterval"`
	// RPCTimeout bounds every call to the node (one request or one
	// JSON-RPC batch): a node that hangs fails the call after this long,
	// and the caller retries with backoff. Default 10s.
	RPCTimeout time.Duration `yaml:"rpcTimeout"`
	// InFlight overrides engine.inFlight on this network (0: inherit).
	InFlight int `yaml:"inFlight"`
	// MaxInFlight overrides engine.maxInFlight on this network (0:
	// inherit): keep it within what the node's pool holds per account.
	MaxInFlight int `yaml:"maxInFlight"`
	// GasMarginPercent overrides engine.gasMarginPercent (absent: inherit).
	GasMarginPercent *uint64 `yaml:"gasMarginPercent"`
	// MaxFeePerGasCap caps the fee per gas of every transaction, in wei as a
	// decimal string (empty: no cap).
	MaxFeePerGasCap string `yaml:"maxFeePerGasCap"`
	// RebroadcastBlocks is how many blocks may pass without the account's
	// nonce moving on chain before its pending transactions are checked
	// and sent again as they are (0: 5).
	RebroadcastBlocks uint64 `yaml:"rebroadcastBlocks"`
	// ReplaceBlocks is how many blocks a pending transaction may wait, the
	// account's nonce stuck, before it is replaced with the same nonce and
	// higher fees (0: 12).
	ReplaceBlocks uint64 `yaml:"replaceBlocks"`
	// DoctorBlocks is how many blocks a gap below an account's lowest nonce
	// in flight may last before the nonce doctor fills it (0: three times
	// rebroadcastBlocks).
	DoctorBlocks uint64 `yaml:"doctorBlocks"`
	// FeeBumpPercent is the fee raise of a replacement (at least 10; 0: 15).
	FeeBumpPercent uint64 `yaml:"feeBumpPercent"`
	// FaucetKey is a hex private key that funds new accounts with gas
	// (TXENGINE_NETWORK_FAUCET_KEY). Empty: no faucet on this network.
	FaucetKey string `yaml:"faucetKey"`
	// FaucetWei is what the faucet gives each account (decimal wei; default
	// 0.1 ETH).
	FaucetWei string `yaml:"faucetWei"`
	// SystemNFTs are the addresses of the network's System NFT contracts.
	SystemNFTs []string `yaml:"systemNFTs"`
}

// DevChain configures the embedded in-process chain (network "dev").
type DevChain struct {
	// BlockPeriod is the time between blocks (TXENGINE_DEV_BLOCK_PERIOD).
	BlockPeriod time.Duration `yaml:"blockPeriod"`
	// FaucetWei is what each new account receives (decimal wei; default
	// 1,000 ETH: one account's burst of 10,000 transfers to new addresses
	// fills 25 blocks, raises the base fee about 19 × and costs about 10 ETH).
	FaucetWei string `yaml:"faucetWei"`
	// InFlight is the per-account window on the embedded chain, whose pool
	// keeps DevPoolSlots transactions per account (0: engine.inFlight).
	InFlight int `yaml:"inFlight"`
}

// DevPoolSlots is what the embedded chain's pool keeps per account
// (evm.DevPoolAccountSlots, checked by a test): the bound of dev.inFlight
// and of the window there.
const DevPoolSlots = 4096

// maxWindow bounds engine.maxInFlight and a network's maxInFlight.
const maxWindow = 16384

// Engine tunes the transaction engine.
type Engine struct {
	// InFlight is the initial per-account window of unconfirmed
	// transactions; the window adapts between MinInFlight and MaxInFlight:
	// it grows once per block while it holds an account back and the
	// node takes everything (four times when the block took all the
	// account had in flight, twice otherwise), and halves when the node refuses for capacity
	// or a transaction stays pending. The window never goes below
	// min(MinInFlight, InFlight) nor above max(MaxInFlight, InFlight).
	InFlight    int `yaml:"inFlight"`
	MinInFlight int `yaml:"minInFlight"`
	MaxInFlight int `yaml:"maxInFlight"`
	// GasMarginPercent is added to estimated gas limits.
	GasMarginPercent uint64 `yaml:"gasMarginPercent"`
	// IdleAccount is how long an idle account actor lives.
	IdleAccount time.Duration `yaml:"idleAccount"`
	// MaxBatch bounds the rows of one group commit.
	MaxBatch int `yaml:"maxBatch"`
}

// Log configures structured logging.
type Log struct {
	// Format is "text" or "json" (TXENGINE_LOG_FORMAT).
	Format string `yaml:"format"`
	// Level is debug, info, warn or error (TXENGINE_LOG_LEVEL).
	Level string `yaml:"level"`
}

// Default returns the embedded default configuration.
func Default() Config {
	c := Config{
		Listen:  "127.0.0.1:8080",
		DataDir: "./data",
		Dev:     DevChain{BlockPeriod: time.Second, FaucetWei: "1000000000000000000000", InFlight: 512},
		// Networks: none, so the embedded dev chain runs as network "dev".
		Engine: Engine{InFlight: 64, MinInFlight: 16, MaxInFlight: 4096, GasMarginPercent: 20, IdleAccount: 2 * time.Minute, MaxBatch: 500},
		Log:    Log{Format: "text", Level: "info"},

		Callbacks: defaultCallbacks(),
		Cluster:   defaultCluster(),
		KMS:       defaultKMS(),
	}
	c.opsDefaults()
	return c
}

// Load returns the defaults overlaid with the YAML file at path (when not
// empty) and the environment read through getenv, validated.
func Load(path string, getenv func(string) string) (Config, error) {
	cfg := Default()
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("config file: %w", err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(raw)))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil {
			return cfg, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	if err := cfg.applyEnv(getenv); err != nil {
		return cfg, err
	}
	for i := range cfg.Networks {
		cfg.Networks[i].setDefaults()
	}
	return cfg, cfg.Validate()
}

func (c *Config) applyEnv(getenv func(string) string) error {
	str := map[string]*string{
		"TXENGINE_LISTEN":       &c.Listen,
		"TXENGINE_DATA_DIR":     &c.DataDir,
		"TXENGINE_MASTER_KEY":   &c.MasterKey,
		"TXENGINE_DATABASE_URL": &c.Database.URL,
		"TXENGINE_LOG_FORMAT":   &c.Log.Format,
		"TXENGINE_LOG_LEVEL":    &c.Log.Level,
	}
	for k, p := range str {
		if v := getenv(k); v != "" {
			*p = v
		}
	}
	if v := getenv("TXENGINE_PREVIOUS_MASTER_KEYS"); v != "" {
		c.PreviousMasterKeys = splitList(v)
	}
	durations := map[string]*time.Duration{
		"TXENGINE_DEV_BLOCK_PERIOD": &c.Dev.BlockPeriod,
		"TXENGINE_IDLE_ACCOUNT":     &c.Engine.IdleAccount,
	}
	for k, p := range durations {
		if v := getenv(k); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s: %q is not a duration (e.g. 500ms, 2s)", k, v)
			}
			*p = d
		}
	}
	if err := c.applyOpsEnv(getenv); err != nil {
		return err
	}
	if v := getenv("TXENGINE_IN_FLIGHT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("TXENGINE_IN_FLIGHT: %q is not an integer", v)
		}
		c.Engine.InFlight = n
	}
	if err := c.applyCallbacksEnv(getenv); err != nil {
		return err
	}
	if err := c.applyClusterEnv(getenv); err != nil {
		return err
	}
	if err := c.applyKMSEnv(getenv); err != nil {
		return err
	}
	return c.applyNetworkEnv(getenv)
}

// applyNetworkEnv applies the single-network shortcut TXENGINE_NETWORK_*: it
// overrides the network named TXENGINE_NETWORK_NAME, or adds it when the
// file has no network of that name. Without a name it overrides the only
// configured network.
func (c *Config) applyNetworkEnv(getenv func(string) string) error {
	name := getenv("TXENGINE_NETWORK_NAME")
	keys := []string{"TXENGINE_NETWORK_CHAIN_ID", "TXENGINE_NETWORK_HTTP_URL", "TXENGINE_NETWORK_WS_URL",
		"TXENGINE_NETWORK_FAUCET_KEY", "TXENGINE_NETWORK_CONFIRMATIONS"}
	set := name != ""
	for _, k := range keys {
		set = set || getenv(k) != ""
	}
	if !set {
		return nil
	}
	var n *Network
	for i := range c.Networks {
		if name == "" && len(c.Networks) == 1 || name != "" && c.Networks[i].Name == name {
			n = &c.Networks[i]
		}
	}
	if n == nil {
		if name == "" {
			return fmt.Errorf("TXENGINE_NETWORK_NAME: required unless exactly one network is configured")
		}
		c.Networks = append(c.Networks, Network{Name: name})
		n = &c.Networks[len(c.Networks)-1]
	}
	for k, p := range map[string]*string{
		"TXENGINE_NETWORK_HTTP_URL":   &n.HTTPURL,
		"TXENGINE_NETWORK_WS_URL":     &n.WSURL,
		"TXENGINE_NETWORK_FAUCET_KEY": &n.FaucetKey,
	} {
		if v := getenv(k); v != "" {
			*p = v
		}
	}
	for k, p := range map[string]*uint64{
		"TXENGINE_NETWORK_CHAIN_ID":      &n.ChainID,
		"TXENGINE_NETWORK_CONFIRMATIONS": &n.Confirmations,
	} {
		if v := getenv(k); v != "" {
			u, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%s: %q is not a non-negative integer", k, v)
			}
			*p = u
		}
	}
	return nil
}

// Validate checks every key and names the first bad one.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("listen: %q is not host:port: %w", c.Listen, err)
	}
	if c.DataDir == "" {
		return fmt.Errorf("dataDir: must not be empty")
	}
	if c.MasterKey != "" {
		if b, err := decodeHex(c.MasterKey); err != nil || len(b) != 32 {
			return fmt.Errorf("masterKey: must be 64 hex digits (32 bytes)")
		}
	}
	for i, k := range c.PreviousMasterKeys {
		if b, err := decodeHex(strings.TrimSpace(k)); err != nil || len(b) != 32 {
			return fmt.Errorf("previousMasterKeys[%d]: must be 64 hex digits (32 bytes)", i)
		}
	}
	if c.Database.URL != "" && !strings.HasPrefix(c.Database.URL, "postgres://") && !strings.HasPrefix(c.Database.URL, "postgresql://") {
		return fmt.Errorf("database.url: must be a postgres:// URL")
	}
	seen := map[string]int{}
	for i := range c.Networks {
		if err := c.Networks[i].validate(fmt.Sprintf("networks[%d]", i)); err != nil {
			return err
		}
		if j, dup := seen[c.Networks[i].Name]; dup {
			return fmt.Errorf("networks[%d].name: %q is already the name of networks[%d]", i, c.Networks[i].Name, j)
		}
		seen[c.Networks[i].Name] = i
	}
	if c.Dev.InFlight < 0 || c.Dev.InFlight > DevPoolSlots {
		return fmt.Errorf("dev.inFlight: must be between 0 and %d (the embedded pool's slots per account), got %d", DevPoolSlots, c.Dev.InFlight)
	}
	if c.Dev.BlockPeriod < 0 {
		return fmt.Errorf("dev.blockPeriod: must not be negative")
	}
	if _, ok := parseWei(c.Dev.FaucetWei); !ok {
		return fmt.Errorf("dev.faucetWei: must be a decimal wei amount")
	}
	if c.Engine.InFlight < 1 || c.Engine.InFlight > 4096 {
		return fmt.Errorf("engine.inFlight: must be between 1 and 4096, got %d", c.Engine.InFlight)
	}
	if c.Engine.MinInFlight < 1 || c.Engine.MinInFlight > 4096 {
		return fmt.Errorf("engine.minInFlight: must be between 1 and 4096, got %d", c.Engine.MinInFlight)
	}
	if c.Engine.MaxInFlight < 1 || c.Engine.MaxInFlight > maxWindow {
		return fmt.Errorf("engine.maxInFlight: must be between 1 and %d, got %d", maxWindow, c.Engine.MaxInFlight)
	}
	if c.Engine.MaxBatch < 1 {
		return fmt.Errorf("engine.maxBatch: must be at least 1")
	}
	if c.Engine.IdleAccount < time.Second {
		return fmt.Errorf("engine.idleAccount: must be at least 1s")
	}
	if err := c.Callbacks.validate(); err != nil {
		return err
	}
	if err := c.KMS.validate(); err != nil {
		return err
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		return fmt.Errorf("log.format: must be text or json, got %q", c.Log.Format)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log.level: must be debug, info, warn or error, got %q", c.Log.Level)
	}
	if err := c.validateCluster(); err != nil {
		return err
	}
	return c.validateOps()
}
