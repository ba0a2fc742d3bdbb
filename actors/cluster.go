package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/ethereum/go-ethereum/common"
	"github.com/txengine/txengine/actors/internal/disthash"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/txengine/txengine/actors/account"
	"github.com/txengine/txengine/actors/clusterpb"
	"github.com/txengine/txengine/actors/faucet"
)

// ClusterConfig turns cluster mode on (docs/cluster.md): account grains
// placed by protoactor's cluster, fenced by leases in the store; one watcher
// per network across the cluster, by a lease in the store.
type ClusterConfig struct {
	// Name is the cluster's name.
	Name string
	// Host and Port are where this node's actor remoting listens, and what
	// it advertises to the other members.
	Host string
	Port int
	// Node names this node in leases and broadcast records (host:port).
	Node string
	// Provider is the membership provider (AutoManagedProvider, EtcdProvider).
	Provider cluster.ClusterProvider
	// Leases is the store of the fencing and network leases.
	Leases LeaseStore
	// NetworkLeaseTTL is how long a network lease lasts without renewal
	// (default 6 s; renewed every third of it).
	NetworkLeaseTTL time.Duration
	// RecoverEvery is how often the holder of a network lease wakes every
	// account with pending work, so that grains of a lost node resume even
	// if nothing else reaches them (default 10 s).
	RecoverEvery time.Duration
}

// LeaseStore is what cluster mode needs of the store.
type LeaseStore interface {
	account.LeaseStore
	AcquireNetworkLease(ctx context.Context, network, node string, ttl time.Duration) (held bool, epoch int64, err error)
	ReleaseNetworkLease(ctx context.Context, network, node string) error
}

// membershipPoll is how often the automanaged provider polls the peers.
const membershipPoll = 2 * time.Second

// AutoManagedProvider returns protoactor's automanaged membership provider:
// this node serves its health on port and polls every peer's (host:port,
// this node included) every membershipPoll.
func AutoManagedProvider(port int, peers []string) cluster.ClusterProvider {
	return automanaged.NewWithConfig(membershipPoll, port, peers...)
}

// EtcdProvider returns protoactor's etcd membership provider: members
// register under prefix with a lease that expires when they die.
func EtcdProvider(endpoints []string, prefix string) (cluster.ClusterProvider, error) {
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("etcd membership provider: no endpoints")
	}
	return &lazyProvider{open: func() (cluster.ClusterProvider, error) {
		p, err := etcd.NewWithConfig(prefix, clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("etcd membership provider: %w", err)
		}
		return p, nil
	}}, nil
}

// lazyProvider creates its cluster provider when the member starts, not
// before: the etcd provider dials at once, and its gRPC connection's
// goroutines read gRPC's global logger, which protoactor's remote sets when
// the member starts (grpclog.SetLoggerV2): a data race (found by the -race
// cluster tests) unless the dial comes after.
type lazyProvider struct {
	open func() (cluster.ClusterProvider, error)
	p    cluster.ClusterProvider
}

// StartMember implements cluster.ClusterProvider.
func (l *lazyProvider) StartMember(c *cluster.Cluster) error {
	if err := l.ensure(); err != nil {
		return err
	}
	return l.p.StartMember(c)
}

// StartClient implements cluster.ClusterProvider.
func (l *lazyProvider) StartClient(c *cluster.Cluster) error {
	if err := l.ensure(); err != nil {
		return err
	}
	return l.p.StartClient(c)
}

// Shutdown implements cluster.ClusterProvider.
func (l *lazyProvider) Shutdown(graceful bool) error {
	if l.p == nil {
		return nil
	}
	return l.p.Shutdown(graceful)
}

func (l *lazyProvider) ensure() error {
	if l.p != nil {
		return nil
	}
	p, err := l.open()
	if err != nil {
		return err
	}
	l.p = p
	return nil
}

// startCluster joins the cluster with the account and faucet kinds.
func (s *System) startCluster(cc *ClusterConfig) (err error) {
	if cc.NetworkLeaseTTL <= 0 {
		cc.NetworkLeaseTTL = 6 * time.Second
	}
	if cc.RecoverEvery <= 0 {
		cc.RecoverEvery = 10 * time.Second
	}
	gcfg := account.GrainConfig{Config: s.acfg, Leases: cc.Leases, Networks: s.cfg.Networks, Node: cc.Node, Track: s.track}
	gcfg.WakeSubmitter = nil // the grain runs its submitters itself
	kinds := []*cluster.Kind{
		cluster.NewKind(account.GrainKind, account.GrainProps(gcfg)),
		cluster.NewKind(faucet.GrainKind, faucet.GrainProps(s.cfg.Faucets, s.cfg.Log)),
	}
	if err := s.startTokenRevocations(); err != nil {
		return err
	}
	rcfg := remote.Configure(cc.Host, cc.Port)
	ccfg := cluster.Configure(cc.Name, cc.Provider, disthash.New(), rcfg,
		cluster.WithKinds(kinds...), cluster.WithRequestTimeout(5*time.Second))
	s.cl = cluster.New(s.sys, ccfg)
	defer func() {
		// StartMember panics when the provider cannot start.
		if r := recover(); r != nil {
			err = fmt.Errorf("join cluster %s: %v", cc.Name, r)
		}
	}()
	s.cl.StartMember()
	s.wakes = newWakeOutbox(s)
	if _, err := s.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &wakeReceiver{s} }), wakeReceiverName); err != nil {
		return fmt.Errorf("start the wake receiver: %w", err)
	}
	return nil
}

// track records the account grains active on this node.
func (s *System) track(pid *actor.PID, alive bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if alive {
		s.grains[pid.Id] = pid
	} else {
		delete(s.grains, pid.Id)
	}
}

// clusterPlacement runs submission in the account grains and funding in
// the faucet grains of the cluster, through the outbox of cluster requests
// (retried until the grain answers).
type clusterPlacement struct{ s *System }

// wake asks the account grain to look for work (Resync and Accepted
// travel), through the outbox of wakes (wakes.go): batched per node when
// the grain is on another node this node knows, else one request.
func (p clusterPlacement) wake(accountID, network string, msg *account.Wake) {
	p.s.wakes.add(&clusterpb.WakeItem{Account: accountID, Network: network, Resync: msg.Resync,
		Accepted: msg.Accepted && !msg.Resync && !msg.Check})
}

func (p clusterPlacement) fund(network string, addr common.Address) {
	p.s.requests.add("fund:"+network+":"+addr.Hex(), func(ctx context.Context) error {
		res, err := p.s.fundViaGrain(ctx, network, []string{addr.Hex()}, 30*time.Second)
		if err == nil && res.GetError() != "" {
			// The faucet answered (it is empty, or the network has
			// none): asking again every pause would hold a worker
			// for nothing. The queue logs it as an error and drops
			// it for the operator (the log names the account).
			return final(fmt.Errorf("fund %s on %s: %s", addr.Hex(), network, res.GetError()))
		}
		return err
	})
}

func (p clusterPlacement) fundAndWait(network string, addrs []common.Address, timeout time.Duration) ([]common.Hash, error) {
	hex := make([]string, len(addrs))
	for i, a := range addrs {
		hex[i] = a.Hex()
	}
	res, err := p.s.fundViaGrain(context.Background(), network, hex, timeout)
	if err != nil {
		return nil, err
	}
	hashes := make([]common.Hash, len(res.GetHashes()))
	for i, h := range res.GetHashes() {
		hashes[i] = common.HexToHash(h)
	}
	if res.GetError() != "" {
		return hashes, errors.New(res.GetError())
	}
	return hashes, nil
}

// fundViaGrain asks the faucet grain of network to top up addrs.
func (s *System) fundViaGrain(ctx context.Context, network string, addrs []string, timeout time.Duration) (*clusterpb.Funded, error) {
	res, err := s.cl.Request(network, faucet.GrainKind, &clusterpb.Fund{Addresses: addrs}, cluster.WithTimeout(timeout),
		cluster.WithRetryCount(3), cluster.WithRetryAction(backoff))
	if err != nil {
		return nil, fmt.Errorf("faucet of %s: %w", network, err)
	}
	f, ok := res.(*clusterpb.Funded)
	if !ok {
		return nil, fmt.Errorf("faucet of %s: unexpected answer %T", network, res)
	}
	return f, nil
}

// backoff is the pause between retries of a cluster request: 50 ms, 200 ms,
// 450 ms...
func backoff(i int) int {
	i++
	time.Sleep(time.Duration(i*i) * 50 * time.Millisecond)
	return i
}
