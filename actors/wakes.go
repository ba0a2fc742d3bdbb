package actors

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/txengine/txengine/actors/account"
	"github.com/txengine/txengine/actors/clusterpb"
)

// wakeReceiverName is the name of every node's wake receiver, the actor
// that takes the WakeBatch messages of the other nodes.
const wakeReceiverName = "txengine-wakes"

// maxWakeBatch bounds the wakes of one WakeBatch.
const maxWakeBatch = 1000

// wakeTimeout bounds the wait for a node's WakeBatchAck.
const wakeTimeout = 5 * time.Second

// wakeKey is the request key of a wake: each kind of wake has its own, so
// that a wake after a group commit (Accepted: the grain may skip the pump
// while its window is full) never replaces one that must pump, nor one
// that resyncs.
func wakeKey(it *clusterpb.WakeItem) string {
	kind := "wake:"
	switch {
	case it.GetResync():
		kind = "resync:"
	case it.GetAccepted():
		kind = "accepted:"
	}
	return kind + it.GetAccount() + "@" + it.GetNetwork()
}

// requestWake asks the account grain of it (wherever the cluster places
// it) to look for work, with one cluster request through the outbox of
// requests (retried until the grain answers).
func (s *System) requestWake(it *clusterpb.WakeItem) {
	req := &clusterpb.Wake{Network: it.GetNetwork(), Resync: it.GetResync(), Accepted: it.GetAccepted()}
	id := it.GetAccount()
	s.requests.add(wakeKey(it), func(ctx context.Context) error {
		res, err := s.cl.Request(id, account.GrainKind, req, cluster.WithTimeout(wakeTimeout), cluster.WithRetryCount(5),
			cluster.WithRetryAction(backoff))
		if err != nil {
			return fmt.Errorf("wake account grain %s: %w", id, err)
		}
		if _, ok := res.(*clusterpb.WakeAck); !ok {
			return final(fmt.Errorf("wake account grain %s: unexpected answer %T", id, res))
		}
		return nil
	})
}

// wakeOutbox sends the wakes of account grains that another node owns in
// batches: one WakeBatch per owner node and round, to that node's wake
// receiver, which hands them to its grains there. A wake whose grain this
// node has not located yet (not in the cluster's PID cache), or whose
// grain is here, goes as one request (requestWake), which locates it; so
// does every wake of a batch that its node did not acknowledge. Under load
// a node sends a few messages per round to each other node instead of one
// request per group commit. The outbox's goroutine stops on close.
type wakeOutbox struct {
	s    *System
	self string

	mu      sync.Mutex
	pending map[string]*clusterpb.WakeItem
	order   []string
	ready   chan struct{}

	// sent counts the WakeBatch messages sent and the wakes they held.
	sentBatches, sentWakes int

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

func newWakeOutbox(s *System) *wakeOutbox {
	o := &wakeOutbox{s: s, self: s.sys.Address(), pending: map[string]*clusterpb.WakeItem{},
		ready: make(chan struct{}, 1), done: make(chan struct{})}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	go o.run()
	return o
}

// add queues the wake it: in the next batch to its grain's node when that
// is another node this node knows, else as one request.
func (o *wakeOutbox) add(it *clusterpb.WakeItem) {
	if _, ok := o.remoteOwner(it); !ok {
		o.s.requestWake(it)
		return
	}
	key := wakeKey(it)
	o.mu.Lock()
	if _, dup := o.pending[key]; !dup {
		o.order = append(o.order, key)
	}
	o.pending[key] = it
	o.mu.Unlock()
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

// remoteOwner is the address of the node that holds it's grain, when the
// cluster's PID cache knows it and it is another node.
func (o *wakeOutbox) remoteOwner(it *clusterpb.WakeItem) (string, bool) {
	pid, ok := o.s.cl.PidCache.Get(it.GetAccount(), account.GrainKind)
	if !ok || pid == nil || pid.Address == o.self {
		return "", false
	}
	return pid.Address, true
}

func (o *wakeOutbox) run() {
	defer close(o.done)
	for {
		select {
		case <-o.ctx.Done():
			return
		case <-o.ready:
		}
		for o.ctx.Err() == nil {
			items := o.take()
			if len(items) == 0 {
				break
			}
			o.send(items)
		}
	}
}

// take returns up to maxWakeBatch queued wakes, oldest first.
func (o *wakeOutbox) take() []*clusterpb.WakeItem {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := min(len(o.order), maxWakeBatch)
	items := make([]*clusterpb.WakeItem, 0, n)
	for _, key := range o.order[:n] {
		items = append(items, o.pending[key])
		delete(o.pending, key)
	}
	o.order = o.order[n:]
	return items
}

// send sends items to their owners, one WakeBatch per node, and waits for
// the acknowledgements; the wakes of a node that does not acknowledge go
// as single requests.
func (o *wakeOutbox) send(items []*clusterpb.WakeItem) {
	byNode := map[string][]*clusterpb.WakeItem{}
	for _, it := range items {
		if addr, ok := o.remoteOwner(it); ok {
			byNode[addr] = append(byNode[addr], it)
		} else {
			o.s.requestWake(it) // moved here, or out of the cache meanwhile
		}
	}
	futs := make(map[string]*actor.Future, len(byNode))
	for addr, its := range byNode {
		futs[addr] = o.s.sys.Root.RequestFuture(actor.NewPID(addr, wakeReceiverName), &clusterpb.WakeBatch{Items: its}, wakeTimeout)
	}
	for addr, f := range futs {
		res, err := f.Result()
		if _, ok := res.(*clusterpb.WakeBatchAck); err == nil && ok {
			o.mu.Lock()
			o.sentBatches++
			o.sentWakes += len(byNode[addr])
			o.mu.Unlock()
			continue
		}
		o.s.cfg.Log.Warn("wake batch not acknowledged; sending each wake alone", "node", addr, "wakes", len(byNode[addr]), "err", err)
		for _, it := range byNode[addr] {
			o.s.requestWake(it)
		}
	}
}

// stats returns how many WakeBatch messages were acknowledged and how many
// wakes they held.
func (o *wakeOutbox) stats() (batches, wakes int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sentBatches, o.sentWakes
}

// close stops the outbox; the wakes still queued go as single requests
// (the request queue drains them before the grains stop).
func (o *wakeOutbox) close() {
	o.cancel()
	<-o.done
	for _, it := range o.take() {
		o.s.requestWake(it)
	}
}

// wakeReceiver is a node's wake receiver: it hands each wake of a
// WakeBatch to its grain through this node's request queue (a grain here
// is reached without crossing nodes; one that moved meanwhile is located
// anew), then acknowledges the batch.
type wakeReceiver struct{ s *System }

// Receive implements actor.Actor.
func (r *wakeReceiver) Receive(c actor.Context) {
	if b, ok := c.Message().(*clusterpb.WakeBatch); ok {
		for _, it := range b.GetItems() {
			r.s.requestWake(it)
		}
		c.Respond(&clusterpb.WakeBatchAck{})
	}
}
