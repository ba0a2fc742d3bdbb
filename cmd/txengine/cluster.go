package main

import (
	"fmt"

	"github.com/txengine/txengine/actors"
	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine"
)

// clusterConfig returns the actors' cluster configuration, nil in
// single-node mode.
func clusterConfig(cfg config.Config, store engine.Store) (*actors.ClusterConfig, error) {
	cl := cfg.Cluster
	if !cl.Enabled {
		return nil, nil
	}
	leases, ok := store.(actors.LeaseStore)
	if !ok {
		return nil, fmt.Errorf("cluster.enabled: the store %T keeps no leases; cluster mode needs PostgreSQL", store)
	}
	cc := &actors.ClusterConfig{Name: cl.Name, Host: cl.Host, Port: cl.Port, Node: cl.NodeName(), Leases: leases}
	switch cl.Provider {
	case config.ProviderEtcd:
		p, err := actors.EtcdProvider(cl.Etcd.Endpoints, cl.Etcd.Prefix)
		if err != nil {
			return nil, err
		}
		cc.Provider = p
	default:
		cc.Provider = actors.AutoManagedProvider(cl.AutoManaged.Port, cl.AutoManaged.Peers)
	}
	return cc, nil
}
