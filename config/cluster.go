package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Cluster configures cluster mode: several nodes against one PostgreSQL
// database behaving as one service (docs/cluster.md). Disabled by default.
type Cluster struct {
	// Enabled turns cluster mode on (TXENGINE_CLUSTER_ENABLED=true|false).
	// It needs database.url and networks: the embedded store and chain
	// belong to one process.
	Enabled bool `yaml:"enabled"`
	// Name is the cluster's name; the nodes of one cluster share it
	// (TXENGINE_CLUSTER_NAME; default txengine).
	Name string `yaml:"name"`
	// Host is the address other nodes reach this one at
	// (TXENGINE_CLUSTER_HOST; default 127.0.0.1).
	Host string `yaml:"host"`
	// Port is this node's actor remoting (gRPC) port (TXENGINE_CLUSTER_PORT;
	// default 7701).
	Port int `yaml:"port"`
	// Provider is the membership provider: automanaged (a static peer list)
	// or etcd (TXENGINE_CLUSTER_PROVIDER; default automanaged).
	Provider    string             `yaml:"provider"`
	AutoManaged ClusterAutoManaged `yaml:"automanaged"`
	Etcd        ClusterEtcd        `yaml:"etcd"`
}

// ClusterAutoManaged configures the automanaged membership provider: every
// node serves its health on Port and polls the peers'.
type ClusterAutoManaged struct {
	// Port is this node's membership HTTP port
	// (TXENGINE_CLUSTER_AUTOMANAGED_PORT; default 7801).
	Port int `yaml:"port"`
	// Peers are the host:port membership addresses of every node, this one
	// included (TXENGINE_CLUSTER_PEERS, comma-separated).
	Peers []string `yaml:"peers"`
}

// ClusterEtcd configures the etcd membership provider.
type ClusterEtcd struct {
	// Endpoints are etcd client endpoints, host:port
	// (TXENGINE_CLUSTER_ETCD_ENDPOINTS, comma-separated).
	Endpoints []string `yaml:"endpoints"`
	// Prefix is the key prefix of the members (TXENGINE_CLUSTER_ETCD_PREFIX;
	// default /txengine).
	Prefix string `yaml:"prefix"`
}

// Cluster membership providers.
const (
	ProviderAutoManaged = "automanaged"
	ProviderEtcd        = "etcd"
)

func defaultCluster() Cluster {
	return Cluster{
		Name: "txengine", Host: "127.0.0.1", Port: 7701, Provider: ProviderAutoManaged,
		AutoManaged: ClusterAutoManaged{Port: 7801},
		Etcd:        ClusterEtcd{Prefix: "/txengine"},
	}
}

// NodeName is this node's name in leases and broadcast records: host:port.
func (c Cluster) NodeName() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// applyClusterEnv applies the TXENGINE_CLUSTER_* overrides.
func (c *Config) applyClusterEnv(getenv func(string) string) error {
	cl := &c.Cluster
	if v := getenv("TXENGINE_CLUSTER_ENABLED"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("TXENGINE_CLUSTER_ENABLED: %q is not true or false", v)
		}
		cl.Enabled = b
	}
	for k, p := range map[string]*string{
		"TXENGINE_CLUSTER_NAME":        &cl.Name,
		"TXENGINE_CLUSTER_HOST":        &cl.Host,
		"TXENGINE_CLUSTER_PROVIDER":    &cl.Provider,
		"TXENGINE_CLUSTER_ETCD_PREFIX": &cl.Etcd.Prefix,
	} {
		if v := getenv(k); v != "" {
			*p = v
		}
	}
	for k, p := range map[string]*int{
		"TXENGINE_CLUSTER_PORT":             &cl.Port,
		"TXENGINE_CLUSTER_AUTOMANAGED_PORT": &cl.AutoManaged.Port,
	} {
		if v := getenv(k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s: %q is not an integer", k, v)
			}
			*p = n
		}
	}
	for k, p := range map[string]*[]string{
		"TXENGINE_CLUSTER_PEERS":          &cl.AutoManaged.Peers,
		"TXENGINE_CLUSTER_ETCD_ENDPOINTS": &cl.Etcd.Endpoints,
	} {
		if v := getenv(k); v != "" {
			*p = splitList(v)
		}
	}
	return nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// validateCluster checks the cluster keys when cluster mode is on.
func (c *Config) validateCluster() error {
	cl := c.Cluster
	if !cl.Enabled {
		return nil
	}
	if c.Database.URL == "" {
		return fmt.Errorf("cluster.enabled: cluster mode needs database.url (PostgreSQL); the embedded store belongs to one process")
	}
	if len(c.Networks) == 0 {
		return fmt.Errorf("cluster.enabled: cluster mode needs networks (real nodes); the embedded dev chain belongs to one process")
	}
	if cl.Name == "" {
		return fmt.Errorf("cluster.name: must not be empty")
	}
	if cl.Host == "" {
		return fmt.Errorf("cluster.host: must not be empty")
	}
	if err := validPort(cl.Port); err != nil {
		return fmt.Errorf("cluster.port: %w", err)
	}
	switch cl.Provider {
	case ProviderAutoManaged:
		if err := validPort(cl.AutoManaged.Port); err != nil {
			return fmt.Errorf("cluster.automanaged.port: %w", err)
		}
		if cl.AutoManaged.Port == cl.Port {
			return fmt.Errorf("cluster.automanaged.port: must differ from cluster.port (%d)", cl.Port)
		}
		if len(cl.AutoManaged.Peers) == 0 {
			return fmt.Errorf("cluster.automanaged.peers: list the host:port membership address of every node, this one included")
		}
		for i, p := range cl.AutoManaged.Peers {
			if err := validHostPort(p); err != nil {
				return fmt.Errorf("cluster.automanaged.peers[%d]: %w", i, err)
			}
		}
	case ProviderEtcd:
		if len(cl.Etcd.Endpoints) == 0 {
			return fmt.Errorf("cluster.etcd.endpoints: at least one etcd endpoint (host:port) is required")
		}
		for i, e := range cl.Etcd.Endpoints {
			if err := validHostPort(strings.TrimPrefix(strings.TrimPrefix(e, "http://"), "https://")); err != nil {
				return fmt.Errorf("cluster.etcd.endpoints[%d]: %w", i, err)
			}
		}
		if !strings.HasPrefix(cl.Etcd.Prefix, "/") {
			return fmt.Errorf("cluster.etcd.prefix: must start with /, got %q", cl.Etcd.Prefix)
		}
	default:
		return fmt.Errorf("cluster.provider: must be %s or %s, got %q", ProviderAutoManaged, ProviderEtcd, cl.Provider)
	}
	return nil
}

func validPort(p int) error {
	if p < 1 || p > 65535 {
		return fmt.Errorf("must be a port between 1 and 65535, got %d", p)
	}
	return nil
}

func validHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return fmt.Errorf("%q is not host:port", s)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("%q is not host:port", s)
	}
	return validPort(n)
}
