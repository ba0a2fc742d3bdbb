package e2e

import (
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// backend is a chain (and a store) the service runs against.
type backend struct {
	// name names the subtest.
	name string
	// network is the network's name in the API.
	network string
	// setup prepares the chain for a service on dataDir and returns the
	// service's extra environment and the symbol of the operator's token.
	setup func(t *testing.T, dataDir string) (env []string, symbol string)
}

func backends() []backend {
	return []backend{
		{name: "dev", network: "dev", setup: func(*testing.T, string) ([]string, string) { return nil, "DEMO" }},
		{name: "dev-postgres", network: "dev", setup: func(t *testing.T, _ string) ([]string, string) {
			return []string{"TXENGINE_DATABASE_URL=" + pgtest.New(t)}, "DEMO"
		}},
		{name: "geth", network: "geth", setup: func(t *testing.T, dataDir string) ([]string, string) {
			env := gethEnv(gethtest.Start(t))
			deployToken(t, dataDir, env, "geth", "Test Token", "TT", "1000000000000000000000000")
			return env, "TT"
		}},
	}
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

// deployToken runs `txengine token deploy` on dataDir, as an operator would
// before starting the service on a real network.
func deployToken(t *testing.T, dataDir string, env []string, network, name, symbol, supply string) {
	t.Helper()
	cmd := exec.Command(binary, "token", "deploy", "--network", network, "--name", name, "--symbol", symbol, "--supply", supply)
	cmd.Env = append(append(os.Environ(), "TXENGINE_DATA_DIR="+dataDir), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("txengine token deploy: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "deployed on "+network+" at 0x") {
		t.Fatalf("txengine token deploy printed:\n%s", out)
	}
}
