package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// TestExampleLoadsAndDocumentsEveryKey loads txengine.example.yaml and checks
// that it sets every key of Config, so the example cannot fall behind.
func TestExampleLoadsAndDocumentsEveryKey(t *testing.T) {
	cfg, err := Load("txengine.example.yaml", env(nil))
	if err != nil {
		t.Fatalf("example does not load: %v", err)
	}
	if len(cfg.Networks) != 1 || cfg.Networks[0].Name != "local-geth" || cfg.Networks[0].ChainID != 1337 {
		t.Fatalf("networks = %+v", cfg.Networks)
	}
	n := cfg.Networks[0]
	if n.Margin(99) != 20 || n.Window(7) != 7 || n.MaxFeeCap().String() != "200000000000" || len(n.SystemNFTAddresses()) != 1 {
		t.Fatalf("network accessors: %+v", n)
	}
	if key, err := n.Faucet(); err != nil || key == nil {
		t.Fatalf("faucet key: %v", err)
	}

	raw, err := os.ReadFile("txengine.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, key := range yamlKeys(reflect.TypeOf(Config{}), "") {
		if !hasKey(doc, strings.Split(key, ".")) {
			t.Errorf("example does not document %s", key)
		}
	}
}

// yamlKeys lists the dotted yaml keys of t's leaves; a slice of structs
// contributes its element's keys.
func yamlKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeOf(time.Duration(0)) {
			out = append(out, yamlKeys(ft, prefix+name+".")...)
			continue
		}
		out = append(out, prefix+name)
	}
	return out
}

func hasKey(v any, path []string) bool {
	if len(path) == 0 {
		return true
	}
	switch m := v.(type) {
	case map[string]any:
		child, ok := m[path[0]]
		return ok && hasKey(child, path[1:])
	case []any:
		for _, e := range m {
			if hasKey(e, path) {
				return true
			}
		}
	}
	return false
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNetworkURLErrorsHideKeys: a rejected node URL is named in the error
// only redacted (its key in the user part, path or query not shown), and
// one that does not parse not at all.
func TestNetworkURLErrorsHideKeys(t *testing.T) {
	for _, n := range []string{
		"    httpUrl: ws://USER1:PASSWORD1@x:1/v3/SECRETKEY1?apikey=SECRETQ1\n",
		"    wsUrl: http://x:1/v2/SECRETKEY2?apikey=SECRETQ2\n",
		"    httpUrl: \"http://x:1/v3/SECRETKEY3\\x7f?apikey=SECRETQ3\"\n",
		"    httpUrl: \"http://x y/SECRETKEY4\"\n",
	} {
		_, err := Load(writeConfig(t, "networks:\n  - name: a\n    chainId: 1\n"+n), env(nil))
		if err == nil {
			t.Fatalf("%s: accepted", n)
		}
		for _, secret := range []string{"USER1", "PASSWORD1", "SECRETKEY", "SECRETQ"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%q in the error: %v", secret, err)
			}
		}
	}
}

func TestNetworkValidationNamesKey(t *testing.T) {
	const good = "  - name: a\n    chainId: 1\n    httpUrl: http://127.0.0.1:8545\n"
	tests := []struct {
		networks string
		want     string
	}{
		{good + "  - name: b\n    httpUrl: http://x:1\n", "networks[1].chainId: required"},
		{"  - chainId: 1\n    httpUrl: http://x:1\n", "networks[0].name: required"},
		{"  - name: Bad_Name\n    chainId: 1\n    httpUrl: http://x:1\n", "networks[0].name: \"Bad_Name\" must match"},
		{"  - name: " + strings.Repeat("a", 33) + "\n    chainId: 1\n    httpUrl: http://x:1\n", "networks[0].name:"},
		{good + good, "networks[1].name: \"a\" is already the name of networks[0]"},
		{"  - name: a\n    chainId: 1\n", "networks[0].httpUrl: required (or wsUrl)"},
		{"  - name: a\n    chainId: 1\n    httpUrl: ws://x:1\n", "networks[0].httpUrl: "},
		{"  - name: a\n    chainId: 1\n    wsUrl: http://x:1\n", "networks[0].wsUrl: "},
		{good + "    pollInterval: 1ms\n", "networks[0].pollInterval:"},
		{good + "    rpcTimeout: 10ms\n", "networks[0].rpcTimeout:"},
		{good + "    rpcTimeout: 1h\n", "networks[0].rpcTimeout:"},
		{good + "    inFlight: 5000\n", "networks[0].inFlight:"},
		{good + "    gasMarginPercent: 2000\n", "networks[0].gasMarginPercent:"},
		{good + "    doctorBlocks: 200000\n", "networks[0].doctorBlocks:"},
		{good + "    maxFeePerGasCap: \"1e9\"\n", "networks[0].maxFeePerGasCap:"},
		{good + "    maxFeePerGasCap: \"0\"\n", "networks[0].maxFeePerGasCap:"},
		{good + "    faucetKey: \"abcd\"\n", "networks[0].faucetKey:"},
		{good + "    faucetWei: \"-1\"\n", "networks[0].faucetWei:"},
		{good + "    systemNFTs: [\"0x1234\"]\n", "networks[0].systemNFTs[0]:"},
	}
	for _, tt := range tests {
		_, err := Load(writeConfig(t, "networks:\n"+tt.networks), env(nil))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("networks:\n%s\nerr = %v, want prefix %q", tt.networks, err, tt.want)
		}
	}
	cfg, err := Load(writeConfig(t, "networks:\n"+good), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.Networks[0]
	if n.PollInterval != DefaultPollInterval || n.RPCTimeout != DefaultRPCTimeout || n.FaucetWei != DefaultFaucetWei || n.Margin(20) != 20 || n.MaxFeeCap() != nil {
		t.Fatalf("defaults not applied: %+v", n)
	}
	if k, err := n.Faucet(); k != nil || err != nil {
		t.Fatalf("faucet of a network without key = %v, %v", k, err)
	}
}

func TestNetworkEnvShortcut(t *testing.T) {
	key := "0x" + strings.Repeat("11", 32)
	cfg, err := Load("", env(map[string]string{
		"TXENGINE_NETWORK_NAME": "geth", "TXENGINE_NETWORK_CHAIN_ID": "1337",
		"TXENGINE_NETWORK_HTTP_URL": "http://127.0.0.1:1", "TXENGINE_NETWORK_WS_URL": "ws://127.0.0.1:2",
		"TXENGINE_NETWORK_FAUCET_KEY": key, "TXENGINE_NETWORK_CONFIRMATIONS": "2",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Network{Name: "geth", ChainID: 1337, HTTPURL: "http://127.0.0.1:1", WSURL: "ws://127.0.0.1:2",
		FaucetKey: key, Confirmations: 2, PollInterval: DefaultPollInterval, RPCTimeout: DefaultRPCTimeout, FaucetWei: DefaultFaucetWei}
	if len(cfg.Networks) != 1 || !reflect.DeepEqual(cfg.Networks[0], want) {
		t.Fatalf("networks = %+v, want [%+v]", cfg.Networks, want)
	}

	// Without a name the only configured network is overridden.
	p := writeConfig(t, "networks:\n  - name: a\n    chainId: 5\n    httpUrl: http://x:1\n    confirmations: 3\n")
	cfg, err = Load(p, env(map[string]string{"TXENGINE_NETWORK_HTTP_URL": "http://y:2", "TXENGINE_NETWORK_CHAIN_ID": "6"}))
	if err != nil {
		t.Fatal(err)
	}
	if n := cfg.Networks[0]; len(cfg.Networks) != 1 || n.Name != "a" || n.HTTPURL != "http://y:2" || n.ChainID != 6 || n.Confirmations != 3 {
		t.Fatalf("override = %+v", cfg.Networks)
	}
	// A new name adds a network next to the file's.
	cfg, err = Load(p, env(map[string]string{"TXENGINE_NETWORK_NAME": "b", "TXENGINE_NETWORK_CHAIN_ID": "7", "TXENGINE_NETWORK_WS_URL": "ws://z:3"}))
	if err != nil || len(cfg.Networks) != 2 || cfg.Networks[1].Name != "b" || cfg.Networks[1].WSURL != "ws://z:3" {
		t.Fatalf("added: %+v, %v", cfg.Networks, err)
	}
	// Errors name the variable or the key.
	for e, want := range map[string]string{"TXENGINE_NETWORK_CHAIN_ID": "TXENGINE_NETWORK_CHAIN_ID:", "TXENGINE_NETWORK_CONFIRMATIONS": "TXENGINE_NETWORK_CONFIRMATIONS:"} {
		if _, err := Load("", env(map[string]string{"TXENGINE_NETWORK_NAME": "x", e: "minus"})); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s=minus: err = %v", e, err)
		}
	}
	if _, err := Load("", env(map[string]string{"TXENGINE_NETWORK_HTTP_URL": "http://x:1"})); err == nil || !strings.HasPrefix(err.Error(), "TXENGINE_NETWORK_NAME:") {
		t.Errorf("no name, no network: err = %v", err)
	}
	if _, err := Load("", env(map[string]string{"TXENGINE_NETWORK_NAME": "x", "TXENGINE_NETWORK_HTTP_URL": "http://x:1"})); err == nil || !strings.HasPrefix(err.Error(), "networks[0].chainId: required") {
		t.Errorf("no chain id: err = %v", err)
	}
}
