package account

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/engine"
)

// Store is what the account actor needs of the store.
type Store interface {
	engine.SenderStore
	engine.ConditionStore
	AccountByID(ctx context.Context, id string) (*engine.Account, error)
}

// Registry is the facade's table of live account actors. Release removes
// the actor's entry if it still maps to pid and reports whether it did; after
// a successful Release nobody sends the actor new messages. Wake starts a new
// incarnation when the released actor found work it must hand over.
type Registry interface {
	Release(key string, pid *actor.PID) bool
	Wake(accountID, network string, resync bool)
}

// Config is what every account actor shares.
type Config struct {
	Store    Store
	Signer   engine.Signer
	Clock    engine.Clock
	Log      *slog.Logger
	Registry Registry
	// Idle is how long an actor without work lives before it stops.
	Idle time.Duration
	// MaxBatch bounds the rows of one group commit.
	MaxBatch int
	// RetryAfter is the pause before a pump that failed (node or database
	// unavailable) is tried again.
	RetryAfter time.Duration
	// CheckEvery is the period of the check of in-flight transactions.
	CheckEvery time.Duration
	// Conditions holds back transactions with dependsOn or waitForAsset.
	Conditions *engine.Conditions
	// Metrics receives the Sender's measurements; nil discards them.
	Metrics engine.Metrics
}

// Key names the actor of an account on a network.
func Key(accountID, network string) string { return accountID + "@" + network }

// Props returns the props of the actor of accountID on net.
func Props(cfg Config, accountID string, net *engine.Network) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &Actor{cfg: cfg, accountID: accountID, net: net, key: Key(accountID, net.Name)}
	})
}

// pending is a Submit waiting for the next group commit.
type pending struct {
	tx      *engine.Transaction
	replyTo *actor.PID
}

// Actor is the account actor. All its state is touched only from Receive.
type Actor struct {
	cfg       Config
	accountID string
	net       *engine.Network
	key       string

	sender      *engine.Sender
	buffer      []pending
	flushQueued bool
	pumpQueued  bool
	retry       *time.Timer
	ticker      *time.Ticker
	tickerDone  chan struct{}
	ctx         context.Context
	cancel      context.CancelFunc
}

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
		c.SetReceiveTimeout(a.cfg.Idle)
		a.startTicker(c)
		a.queuePump(c)
	case *actor.Restarting:
		// State is rebuilt from the database on the restart's Started; the
		// Submits not yet committed go to the new incarnation, which answers
		// their senders.
		a.forgetLoad()
		a.sender = nil
		for _, p := range a.buffer {
			c.RequestWithCustomSender(c.Self(), &Submit{Tx: p.tx}, p.replyTo)
		}
		a.buffer = nil
		a.stopTicker()
		if a.retry != nil {
			a.retry.Stop()
		}
		if a.cancel != nil {
			a.cancel()
		}
	case *actor.Stopping:
		a.forgetLoad()
		a.failBuffer(c, engine.Errorf(engine.CodeUnavailable, "", "account actor stopping"))
		if a.retry != nil {
			a.retry.Stop()
		}
		a.stopTicker()
		if a.cancel != nil {
			a.cancel()
		}
	case *Submit:
		a.buffer = append(a.buffer, pending{tx: msg.Tx, replyTo: c.Sender()})
		if !a.flushQueued {
			a.flushQueued = true
			c.Send(c.Self(), flush{})
		}
	case flush:
		a.flushQueued = false
		a.flush(c)
	case *Wake:
		if msg.Resync && a.sender != nil {
			a.sender.Resync()
		}
		a.queuePump(c)
	case tick:
		a.queuePump(c)
	case pump:
		a.pumpQueued = false
		a.pump(c)
	case *actor.ReceiveTimeout:
		a.maybePassivate(c)
	case passivate:
		// Submits that arrived before the registration was removed are
		// committed now; a new incarnation submits them.
		handOver := len(a.buffer) > 0 || a.pumpQueued
		for len(a.buffer) > 0 {
			a.flush(c)
		}
		c.Stop(c.Self())
		if handOver {
			a.cfg.Registry.Wake(a.accountID, a.net.Name, false)
		}
	}
}

// flush stores up to MaxBatch buffered transactions in one database
// transaction and answers their senders.
func (a *Actor) flush(c actor.Context) {
	n := min(len(a.buffer), a.cfg.MaxBatch)
	batch := a.buffer[:n:n]
	a.buffer = a.buffer[n:]
	if len(a.buffer) > 0 && !a.flushQueued {
		a.flushQueued = true
		c.Send(c.Self(), flush{})
	}
	txs := make([]*engine.Transaction, n)
	for i, p := range batch {
		txs[i] = p.tx
	}
	s, err := a.getSender()
	if err == nil {
		err = s.Accept(a.ctx, txs)
	}
	for _, p := range batch {
		c.Send(p.replyTo, &Accepted{Tx: p.tx, Err: err})
	}
	if err == nil {
		a.queuePump(c)
	}
}

func (a *Actor) failBuffer(c actor.Context, err error) {
	for _, p := range a.buffer {
		c.Send(p.replyTo, &Accepted{Tx: p.tx, Err: err})
	}
	a.buffer = nil
}

func (a *Actor) queuePump(c actor.Context) {
	if !a.pumpQueued {
		a.pumpQueued = true
		c.Send(c.Self(), pump{})
	}
}

func (a *Actor) pump(c actor.Context) {
	s, err := a.getSender()
	if err == nil {
		_, err = s.Pump(a.ctx)
		a.resolve(s.TakeFailed())
	}
	if err != nil {
		a.cfg.Log.Warn("account pump failed; retrying", "account", a.accountID, "network", a.net.Name, "err", err, "retry_in", a.cfg.RetryAfter)
		if a.retry != nil {
			a.retry.Stop()
		}
		self, root := c.Self(), c.ActorSystem().Root
		a.retry = time.AfterFunc(a.cfg.RetryAfter, func() { root.Send(self, &Wake{}) })
		return
	}
	if a.retry != nil {
		a.retry.Stop()
		a.retry = nil
	}
}

// getSender loads the account and builds its Sender on first use.
func (a *Actor) getSender() (*engine.Sender, error) {
	if a.sender != nil {
		return a.sender, nil
	}
	acct, err := a.cfg.Store.AccountByID(a.ctx, a.accountID)
	if err != nil {
		return nil, fmt.Errorf("load account %s: %w", a.accountID, err)
	}
	a.sender = engine.NewSender(acct, a.net, a.cfg.Store, a.cfg.Signer, a.cfg.Clock, a.cfg.Log).WithConditions(a.cfg.Conditions)
	a.sender.SetMetrics(a.cfg.Metrics)
	return a.sender, nil
}

// forgetLoad withdraws the account's queue depth and in-flight count from
// the gauges when the actor stops or restarts: only running actors report.
func (a *Actor) forgetLoad() {
	if a.sender != nil {
		a.sender.ForgetLoad()
	}
}

// resolve wakes the accounts of the dependents of the transactions this
// actor failed (they fail too, or run).
func (a *Actor) resolve(failed []string) {
	if len(failed) == 0 || a.cfg.Conditions == nil {
		return
	}
	refs, err := a.cfg.Conditions.Resolve(a.ctx, failed)
	if err != nil {
		a.cfg.Log.Warn("resolving dependents failed", "account", a.accountID, "err", err)
	}
	for _, r := range refs {
		a.cfg.Registry.Wake(r.AccountID, r.Network, false)
	}
}

// maybePassivate stops an idle actor that has nothing queued or in flight.
func (a *Actor) maybePassivate(c actor.Context) {
	if len(a.buffer) > 0 || a.retry != nil {
		return
	}
	inflight, err := a.cfg.Store.InFlight(a.ctx, a.accountID, a.net.Name)
	if err != nil || len(inflight) > 0 {
		return
	}
	ready, err := a.cfg.Store.ReadyTransactions(a.ctx, a.accountID, a.net.Name, 1)
	if err != nil || len(ready) > 0 {
		return
	}
	if a.cfg.Registry.Release(a.key, c.Self()) {
		c.Send(c.Self(), passivate{})
	}
}

// startTicker starts the goroutine that sends the periodic tick; it stops
// with the actor (stopTicker).
func (a *Actor) startTicker(c actor.Context) {
	if a.cfg.CheckEvery <= 0 {
		return
	}
	a.ticker = time.NewTicker(a.cfg.CheckEvery)
	a.tickerDone = make(chan struct{})
	self, root, ticker, done := c.Self(), c.ActorSystem().Root, a.ticker, a.tickerDone
	go func() {
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				root.Send(self, tick{})
			}
		}
	}()
}

func (a *Actor) stopTicker() {
	if a.ticker != nil {
		a.ticker.Stop()
		close(a.tickerDone)
		a.ticker = nil
	}
}
