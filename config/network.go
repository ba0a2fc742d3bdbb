package config

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/internal/redact"
)

// networkNameRE is what a network name must match.
var networkNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Defaults of a network's optional keys.
const (
	DefaultPollInterval = time.Second
	DefaultRPCTimeout   = 10 * time.Second
	DefaultFaucetWei    = "100000000000000000" // 0.1 ETH
)

// setDefaults fills in the optional keys left empty.
func (n *Network) setDefaults() {
	if n.PollInterval == 0 {
		n.PollInterval = DefaultPollInterval
	}
	if n.FaucetWei == "" {
		n.FaucetWei = DefaultFaucetWei
	}
	if n.RPCTimeout == 0 {
		n.RPCTimeout = DefaultRPCTimeout
	}
}

// validate checks n; prefix names it in errors (e.g. "networks[1]").
func (n *Network) validate(prefix string) error {
	switch {
	case n.Name == "":
		return fmt.Errorf("%s.name: required", prefix)
	case !networkNameRE.MatchString(n.Name):
		return fmt.Errorf("%s.name: %q must match %s", prefix, n.Name, networkNameRE)
	case n.ChainID == 0:
		return fmt.Errorf("%s.chainId: required", prefix)
	case n.HTTPURL == "" && n.WSURL == "":
		return fmt.Errorf("%s.httpUrl: required (or wsUrl)", prefix)
	}
	if n.HTTPURL != "" {
		if err := checkURL(n.HTTPURL, "http", "https"); err != nil {
			return fmt.Errorf("%s.httpUrl: %w", prefix, err)
		}
	}
	if n.WSURL != "" {
		if err := checkURL(n.WSURL, "ws", "wss"); err != nil {
			return fmt.Errorf("%s.wsUrl: %w", prefix, err)
		}
	}
	if n.PollInterval < 10*time.Millisecond {
		return fmt.Errorf("%s.pollInterval: must be at least 10ms, got %s", prefix, n.PollInterval)
	}
	if n.RPCTimeout < 100*time.Millisecond || n.RPCTimeout > 10*time.Minute {
		return fmt.Errorf("%s.rpcTimeout: must be from 100ms to 10m, got %s", prefix, n.RPCTimeout)
	}
	if n.InFlight < 0 || n.InFlight > 4096 {
		return fmt.Errorf("%s.inFlight: must be between 1 and 4096 (0 or absent: engine.inFlight), got %d", prefix, n.InFlight)
	}
	if n.MaxInFlight < 0 || n.MaxInFlight > maxWindow {
		return fmt.Errorf("%s.maxInFlight: must be between 1 and %d (0 or absent: engine.maxInFlight), got %d", prefix, maxWindow, n.MaxInFlight)
	}
	if n.GasMarginPercent != nil && *n.GasMarginPercent > 1000 {
		return fmt.Errorf("%s.gasMarginPercent: must be at most 1000, got %d", prefix, *n.GasMarginPercent)
	}
	if n.RebroadcastBlocks > 10_000 || n.ReplaceBlocks > 10_000 {
		return fmt.Errorf("%s: rebroadcastBlocks and replaceBlocks must be at most 10000, got %d and %d", prefix, n.RebroadcastBlocks, n.ReplaceBlocks)
	}
	if n.DoctorBlocks > 100_000 {
		return fmt.Errorf("%s.doctorBlocks: must be at most 100000, got %d", prefix, n.DoctorBlocks)
	}
	if n.ReplaceBlocks != 0 && n.RebroadcastBlocks != 0 && n.ReplaceBlocks < n.RebroadcastBlocks {
		return fmt.Errorf("%s.replaceBlocks: must be at least rebroadcastBlocks (%d), got %d", prefix, n.RebroadcastBlocks, n.ReplaceBlocks)
	}
	if n.FeeBumpPercent != 0 && (n.FeeBumpPercent < 10 || n.FeeBumpPercent > 1000) {
		return fmt.Errorf("%s.feeBumpPercent: must be from 10 to 1000 (nodes refuse replacements below +10%%), got %d", prefix, n.FeeBumpPercent)
	}
	if n.MaxFeePerGasCap != "" {
		if v, ok := parseWei(n.MaxFeePerGasCap); !ok || v.Sign() == 0 {
			return fmt.Errorf("%s.maxFeePerGasCap: must be a positive decimal wei amount, got %q", prefix, n.MaxFeePerGasCap)
		}
	}
	if n.FaucetKey != "" {
		if _, err := n.Faucet(); err != nil {
			return fmt.Errorf("%s.faucetKey: must be a hex secp256k1 private key (64 hex digits)", prefix)
		}
	}
	if _, ok := parseWei(n.FaucetWei); !ok {
		return fmt.Errorf("%s.faucetWei: must be a decimal wei amount, got %q", prefix, n.FaucetWei)
	}
	for i, a := range n.SystemNFTs {
		if !common.IsHexAddress(a) {
			return fmt.Errorf("%s.systemNFTs[%d]: %q is not a 0x address of 20 bytes", prefix, i, a)
		}
	}
	return nil
}

// checkURL checks a node URL; its message shows the URL only through
// redact.URL, as a node URL may carry the provider's API key.
func checkURL(raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL it quotes
		}
		return fmt.Errorf("not a URL (not shown: it may hold a key): %w", err)
	}
	for _, s := range schemes {
		if u.Scheme == s && u.Host != "" {
			return nil
		}
	}
	return fmt.Errorf("%s must be a %s:// URL with a host", redact.URL(raw), schemes[0])
}

// Faucet returns the network's faucet key, nil when it has none.
func (n Network) Faucet() (*ecdsa.PrivateKey, error) {
	if n.FaucetKey == "" {
		return nil, nil
	}
	b, err := decodeHex(n.FaucetKey)
	if err != nil || len(b) != 32 {
		return nil, fmt.Errorf("faucet key of %s: not 32 hex-encoded bytes", n.Name)
	}
	key, err := crypto.ToECDSA(b)
	if err != nil {
		return nil, fmt.Errorf("faucet key of %s: %w", n.Name, err)
	}
	return key, nil
}

// FaucetAmount returns faucetWei as a number.
func (n Network) FaucetAmount() *big.Int {
	v, _ := parseWei(n.FaucetWei)
	return v
}

// MaxFeeCap returns maxFeePerGasCap as a number, nil when there is none.
func (n Network) MaxFeeCap() *big.Int {
	v, _ := parseWei(n.MaxFeePerGasCap)
	return v
}

// SystemNFTAddresses returns systemNFTs as addresses.
func (n Network) SystemNFTAddresses() []common.Address {
	out := make([]common.Address, len(n.SystemNFTs))
	for i, a := range n.SystemNFTs {
		out[i] = common.HexToAddress(a)
	}
	return out
}

// Margin returns the network's gas margin, or def when it inherits.
func (n Network) Margin(def uint64) uint64 {
	if n.GasMarginPercent != nil {
		return *n.GasMarginPercent
	}
	return def
}

// MaxWindow returns the network's largest in-flight window, or def when
// it inherits.
func (n Network) MaxWindow(def int) int {
	if n.MaxInFlight > 0 {
		return n.MaxInFlight
	}
	return def
}

// Window returns the network's in-flight window, or def when it inherits.
func (n Network) Window(def int) int {
	if n.InFlight > 0 {
		return n.InFlight
	}
	return def
}
