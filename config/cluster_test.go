package config

import (
	"strings"
	"testing"
)

// TestClusterConfig: cluster mode reads its keys from the environment,
// needs PostgreSQL and real networks, and names the bad key.
func TestClusterConfig(t *testing.T) {
	base := map[string]string{
		"TXENGINE_DATABASE_URL":     "postgres://u@127.0.0.1/db",
		"TXENGINE_NETWORK_NAME":     "geth",
		"TXENGINE_NETWORK_HTTP_URL": "http://127.0.0.1:8545",
		"TXENGINE_NETWORK_CHAIN_ID": "1337",
		"TXENGINE_CLUSTER_ENABLED":  "true",
		"TXENGINE_CLUSTER_PEERS":    "127.0.0.1:7801, 127.0.0.1:7802,",
		"TXENGINE_CLUSTER_PORT":     "7702",
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cfg, err := Load("", env(base))
	if err != nil {
		t.Fatal(err)
	}
	cl := cfg.Cluster
	if !cl.Enabled || cl.Port != 7702 || len(cl.AutoManaged.Peers) != 2 || cl.AutoManaged.Peers[1] != "127.0.0.1:7802" || cl.Provider != ProviderAutoManaged {
		t.Fatalf("cluster = %+v", cl)
	}
	if cl.NodeName() != "127.0.0.1:7702" {
		t.Errorf("node name = %q", cl.NodeName())
	}
	cfg, err = Load("", env(with("TXENGINE_CLUSTER_PROVIDER", "etcd", "TXENGINE_CLUSTER_ETCD_ENDPOINTS", "127.0.0.1:2379")))
	if err != nil || cfg.Cluster.Etcd.Endpoints[0] != "127.0.0.1:2379" || cfg.Cluster.Etcd.Prefix != "/txengine" {
		t.Fatalf("etcd: %+v, %v", cfg.Cluster.Etcd, err)
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{with("TXENGINE_DATABASE_URL", ""), "cluster.enabled: cluster mode needs database.url"},
		{with("TXENGINE_CLUSTER_PROVIDER", "consul"), "cluster.provider: must be automanaged or etcd"},
		{with("TXENGINE_CLUSTER_PEERS", "nohost"), "cluster.automanaged.peers[0]"},
		{with("TXENGINE_CLUSTER_AUTOMANAGED_PORT", "7702"), "cluster.automanaged.port: must differ"},
		{with("TXENGINE_CLUSTER_PORT", "70000"), "cluster.port"},
		{with("TXENGINE_CLUSTER_PROVIDER", "etcd"), "cluster.etcd.endpoints"},
		{with("TXENGINE_CLUSTER_ENABLED", "yes please"), "TXENGINE_CLUSTER_ENABLED"},
	} {
		if _, err := Load("", env(c.env)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
	delete(base, "TXENGINE_NETWORK_NAME")
	delete(base, "TXENGINE_NETWORK_HTTP_URL")
	delete(base, "TXENGINE_NETWORK_CHAIN_ID")
	if _, err := Load("", env(base)); err == nil || !strings.Contains(err.Error(), "needs networks") {
		t.Errorf("without networks: %v", err)
	}
}
