package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/contracts"
	"github.com/txengine/txengine/engine/evm"
	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// backend is a chain (and a store) the service runs against.
type backend struct {
	// name names the subtest.
	name string
	// network is the network's name in the API.
	network string
	// setup prepares the chain for a service on dataDir.
	setup func(t *testing.T, dataDir string) deployment
}

// deployment is what a backend's setup prepared: how to start the service
// and the operator's token. On every backend the operator's default account
// holds the whole token supply and token 1 of a System NFT of the network,
// as on the embedded default.
type deployment struct {
	// env is the service's extra environment.
	env []string
	// args are extra arguments of `txengine serve`.
	args []string
	// tokenName and symbol are the on-chain name and symbol of the
	// operator's only token.
	tokenName, symbol string
}

// start starts the service on dataDir as the deployment says.
func (d deployment) start(t *testing.T, dataDir string) *service {
	t.Helper()
	return startServiceArgs(t, dataDir, d.args, d.env...)
}

// demoDeployment is the embedded default: the service deploys the demo
// token and the System NFT itself.
var demoDeployment = deployment{tokenName: "Demo Token", symbol: "DEMO"}

func backends() []backend {
	return []backend{
		{name: "dev", network: "dev", setup: func(*testing.T, string) deployment { return demoDeployment }},
		{name: "dev-postgres", network: "dev", setup: func(t *testing.T, _ string) deployment {
			d := demoDeployment
			d.env = []string{"TXENGINE_DATABASE_URL=" + pgtest.New(t)}
			return d
		}},
		{name: "geth", network: "geth", setup: setupGeth},
	}
}

// apiBackends are the backends of the API tests: the embedded chain and
// geth. The PostgreSQL store is covered by the store contract suite.
func apiBackends() []backend {
	var out []backend
	for _, b := range backends() {
		if b.name == "dev" || b.name == "geth" {
			out = append(out, b)
		}
	}
	return out
}

// setupGeth starts a geth --dev node and prepares it as an operator would
// before starting the service on a real network: `txengine token deploy`
// of token "TT" to the operator's default account, and a System NFT (token
// 1 minted to that account) named in the network's systemNFTs in a YAML
// configuration file (no environment variable sets systemNFTs).
func setupGeth(t *testing.T, dataDir string) deployment {
	t.Helper()
	node := gethtest.Start(t)
	env := gethEnv(node)
	holder := deployToken(t, dataDir, env, "geth", "Test Token", "TT", "1000000000000000000000000")
	nft := deploySystemNFT(t, node, holder)
	cfg := filepath.Join(t.TempDir(), "txengine.yaml")
	// TXENGINE_NETWORK_* of gethEnv complete the network named geth.
	yaml := fmt.Sprintf("networks:\n  - name: geth\n    systemNFTs: [%q]\n", nft.Hex())
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return deployment{env: env, args: []string{"--config", cfg}, tokenName: "Test Token", symbol: "TT"}
}

// gethEnv points the service at node as network "geth" (http for calls, ws
// for new heads), paying gas from the node's funded key.
func gethEnv(node *gethtest.Node) []string {
	return []string{
		"TXENGINE_NETWORK_NAME=geth",
		"TXENGINE_NETWORK_CHAIN_ID=1337",
		"TXENGINE_NETWORK_HTTP_URL=" + node.HTTPURL,
		"TXENGINE_NETWORK_WS_URL=" + node.WSURL,
		"TXENGINE_NETWORK_FAUCET_KEY=" + hex.EncodeToString(crypto.FromECDSA(node.FaucetKey)),
	}
}

// holderRE finds the operator's default account in the output of `txengine
// token deploy`.
var holderRE = regexp.MustCompile(`held by (0x[0-9a-fA-F]{40}) \(operator's default account\)`)

// deployToken runs `txengine token deploy` on dataDir, as an operator would
// before starting the service on a real network, and returns the operator's
// default account, which holds the supply.
func deployToken(t *testing.T, dataDir string, env []string, network, name, symbol, supply string) common.Address {
	t.Helper()
	return deployTokenArgs(t, dataDir, env, nil, network, name, symbol, supply)
}

// deployTokenArgs is deployToken with extra arguments (--config).
func deployTokenArgs(t *testing.T, dataDir string, env, args []string, network, name, symbol, supply string) common.Address {
	t.Helper()
	args = append(append([]string{"token", "deploy"}, args...), "--network", network, "--name", name, "--symbol", symbol, "--supply", supply)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append(os.Environ(), "TXENGINE_DATA_DIR="+dataDir), env...)
	out, err := combinedOutput(t, cmd)
	if err != nil {
		t.Fatalf("txengine token deploy: %v\n%s", err, out)
	}
	m := holderRE.FindSubmatch(out)
	if !strings.Contains(string(out), "deployed on "+network+" at 0x") || m == nil {
		t.Fatalf("txengine token deploy printed:\n%s", out)
	}
	return common.HexToAddress(string(m[1]))
}

// deploySystemNFT deploys the built-in System NFT on node with its faucet
// key, as the embedded default does on its chain (internal/provision
// ensureSystemNFT), and mints token 1 to holder. It runs before the service
// starts, which pays gas from the same key.
func deploySystemNFT(t *testing.T, node *gethtest.Node, holder common.Address) common.Address {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := evm.Dial(ctx, node.HTTPURL)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	art := contracts.SystemNFT()
	data, err := art.DeployData("System NFT", "SYS", crypto.PubkeyToAddress(node.FaucetKey.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	addr, _, err := evm.Deploy(ctx, client, node.FaucetKey, data)
	if err != nil {
		t.Fatalf("deploy the System NFT: %v", err)
	}
	parsed, err := art.ParsedABI()
	if err != nil {
		t.Fatal(err)
	}
	mint, err := parsed.Pack("mint", holder, big.NewInt(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := evm.Transact(ctx, client, node.FaucetKey, &addr, nil, mint); err != nil {
		t.Fatalf("mint System NFT token 1 to %s: %v", holder.Hex(), err)
	}
	return addr
}
