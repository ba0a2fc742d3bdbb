package account

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/actors/internal/lifecycle"
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
	// Commits writes the group commits: the system's engine.CommitQueue,
	// which merges those of every account actor into one database
	// transaction.
	Commits engine.Committer
	// Stages are the networks' engine.SubmitStage, by network name: the
	// submitters' pumps go through them, merged (none: each on its own).
	Stages map[string]*engine.SubmitStage
	// MaxBatch bounds the rows of one group commit.
	MaxBatch int
	// RetryAfter is the pause before a pump that failed (node or database
	// unavailable) is tried again (default 1 s).
	RetryAfter time.Duration
	// CheckEvery is the period of the check of in-flight transactions.
	CheckEvery time.Duration
	// Conditions holds back transactions with dependsOn or waitForAsset.
	Conditions *engine.Conditions
	// Metrics receives the Sender's measurements; nil discards them.
	Metrics engine.Metrics
	// Nonces receives the nonce health of stuck accounts (nil: none kept).
	Nonces *engine.NonceBook
	// WakeSubmitter, when set (cluster mode), is how an account actor
	// hands work to the account's submitter: the account grain, wherever
	// the cluster placed it. Nil: the account actor runs its submitter as
	// a child (single-node mode). msg is what the submitter is told
	// (Accepted after a group commit, Resync).
	WakeSubmitter func(accountID, network string, msg *Wake)
	// StoreTimeout bounds the database calls made outside a pump: the
	// reads that decide a passivation, and the resolution of the
	// dependents of failed transactions (default 10 s).
	StoreTimeout time.Duration
}

// Key names the actor of an account on a network.
func Key(accountID, network string) string { return accountID + "@" + network }

// Props returns the props of the actor of accountID on net. The account
// actor accepts (group commit) and owns a child, the submitter, that
// assigns nonces and broadcasts: a slow node never holds up acceptance.
// Zero RetryAfter and StoreTimeout take Default's values.
func Props(cfg Config, accountID string, net *engine.Network) *actor.Props {
	cfg = cfg.withDefaults()
	return lifecycle.Props(func() actor.Actor {
		return &Actor{cfg: cfg, accountID: accountID, net: net, key: Key(accountID, net.Name)}
	})
}

// pending is a Submit waiting for the next group commit.
type pending struct {
	tx      *engine.Transaction
	claim   *engine.Claim
	replyTo *actor.PID
}

// Actor is the account actor: it commits the Submits waiting in its
// mailbox in one database transaction (group commit), answers them, and
// wakes its submitter. All its state is touched only from Receive.
type Actor struct {
	cfg       Config
	accountID string
	net       *engine.Network
	key       string

	submitter   *actor.PID
	buffer      []pending
	flushQueued bool
	ctx         context.Context
	cancel      context.CancelFunc
}

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
		c.SetReceiveTimeout(a.cfg.Idle)
		if a.cfg.WakeSubmitter == nil {
			a.submitter = c.Spawn(lifecycle.Props(func() actor.Actor {
				return &submitter{cfg: a.cfg, accountID: a.accountID, net: a.net}
			}))
		}
	case *actor.Restarting:
		// The Submits not yet committed go to the new incarnation, which
		// answers their senders.
		for _, p := range a.buffer {
			c.RequestWithCustomSender(c.Self(), &Submit{Tx: p.tx, Claim: p.claim}, p.replyTo)
		}
		a.buffer = nil
		a.cancel()
	case *actor.Stopping:
		a.failBuffer(c, engine.Errorf(engine.CodeUnavailable, "", "account actor stopping"))
		a.cancel()
	case *Submit:
		a.buffer = append(a.buffer, pending{tx: msg.Tx, claim: msg.Claim, replyTo: c.Sender()})
		if !a.flushQueued {
			a.flushQueued = true
			c.Send(c.Self(), flush{})
		}
	case flush:
		a.flushQueued = false
		a.flush(c)
	case *Wake:
		a.wakeSubmitter(c, msg.Resync)
	case *actor.ReceiveTimeout:
		a.maybePassivate(c)
	case passivate:
		// Submits that arrived before the registration was removed are
		// committed now; a new incarnation submits them.
		handOver := len(a.buffer) > 0
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
// transaction, answers their senders and wakes the submitter.
func (a *Actor) flush(c actor.Context) {
	n := min(len(a.buffer), a.cfg.MaxBatch)
	batch := a.buffer[:n:n]
	a.buffer = a.buffer[n:]
	if len(a.buffer) > 0 && !a.flushQueued {
		a.flushQueued = true
		c.Send(c.Self(), flush{})
	}
	txs := make([]*engine.Transaction, n)
	claims := make([]*engine.Claim, n)
	for i, p := range batch {
		txs[i], claims[i] = p.tx, p.claim
	}
	errs := engine.Accept(a.ctx, a.cfg.Commits, txs, claims)
	if conflicts(errs) > 0 && n > 1 {
		// One row conflicts (an Idempotency-Key another node used at the
		// same moment): store the others one by one, so only that request
		// fails. Their claims are taken already; abandoned ones stay so.
		for i, tx := range txs {
			if errors.Is(errs[i], engine.ErrConflict) {
				errs[i] = engine.Accept(a.ctx, a.cfg.Commits, []*engine.Transaction{tx}, []*engine.Claim{claims[i]})[0]
			}
		}
	}
	stored := 0
	var from common.Address
	for i, p := range batch {
		if errs[i] == nil {
			stored++
			from = p.tx.From
		}
		p.claim.Settle(errs[i])
		c.Send(p.replyTo, &Accepted{Tx: p.tx, Err: errs[i]})
	}
	if stored > 0 {
		if a.cfg.Metrics != nil {
			a.cfg.Metrics.TxAccepted(engine.MetricAccount{ID: a.accountID, Address: from}, a.net.Name, stored)
		}
		if a.cfg.WakeSubmitter != nil {
			a.cfg.WakeSubmitter(a.accountID, a.net.Name, &Wake{Accepted: true})
		} else {
			c.Send(a.submitter, &Wake{Accepted: true})
		}
	}
}

// wakeSubmitter hands work to the account's submitter: the child, or the
// account grain in cluster mode.
func (a *Actor) wakeSubmitter(c actor.Context, resync bool) {
	if a.cfg.WakeSubmitter != nil {
		a.cfg.WakeSubmitter(a.accountID, a.net.Name, &Wake{Resync: resync})
		return
	}
	c.Send(a.submitter, &Wake{Resync: resync})
}

// conflicts counts the outcomes that are conflicts.
func conflicts(errs []error) int {
	n := 0
	for _, err := range errs {
		if errors.Is(err, engine.ErrConflict) {
			n++
		}
	}
	return n
}

// failBuffer answers the Submits not yet committed with err: they were
// never handed to the commit queue, so nothing of them is stored.
func (a *Actor) failBuffer(c actor.Context, err error) {
	for _, p := range a.buffer {
		p.claim.Settle(err)
		c.Send(p.replyTo, &Accepted{Tx: p.tx, Err: err})
	}
	a.buffer = nil
}

// maybePassivate stops an idle actor whose account has nothing queued or
// in flight (the submitter stops with it).
func (a *Actor) maybePassivate(c actor.Context) {
	if len(a.buffer) > 0 {
		return
	}
	if a.cfg.WakeSubmitter != nil {
		// Cluster mode: the grain looks after what is in flight.
		if a.cfg.Registry.Release(a.key, c.Self()) {
			c.Send(c.Self(), passivate{})
		}
		return
	}
	// A database that does not answer keeps the actor (it tries again
	// when next idle), it does not freeze it.
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.StoreTimeout)
	defer cancel()
	sum, err := a.cfg.Store.InFlightSummary(ctx, a.accountID, a.net.Name)
	if err != nil || sum.Count > 0 {
		return
	}
	ready, err := a.cfg.Store.ReadyTransactions(ctx, a.accountID, a.net.Name, 1)
	if err != nil || len(ready) > 0 {
		return
	}
	if a.cfg.Registry.Release(a.key, c.Self()) {
		c.Send(c.Self(), passivate{})
	}
}
