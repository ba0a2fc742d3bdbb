package subscribe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine"
)

// Config tunes a Processor; zero fields take the values of Default.
type Config struct {
	// Range is the most blocks one step reads while a subscription catches
	// up (default 500). A caught-up network is read one block per step.
	Range uint64
	// MaxSteps bounds the backfill steps of one Poll (default 8), and
	// apart from them its caught-up steps (four times as many): a long
	// backfill neither starves the actor's mailbox nor delays the
	// caught-up subscriptions, which are served first at every Poll.
	MaxSteps int
	// BackfillBudget bounds the time a Poll spends on backfill steps
	// (default 2 s): once spent, the Poll stops after the step under way
	// (More), so that the caught-up subscriptions' next Poll is not held
	// up by MaxSteps slow steps of a backfill.
	BackfillBudget time.Duration
	// NearBlocks is how far behind its top a group of subscriptions may be
	// and still count as caught up (default 64): served first at every
	// Poll, before the backfills, which take turns.
	NearBlocks uint64
	// GroupBackoff and MaxGroupBackoff bound the pause of a group whose
	// step failed (not a log limit it can halve its range for): from
	// GroupBackoff (default 1 s), doubling per failure in a row, at most
	// MaxGroupBackoff (default 2 min). The other groups go on meanwhile.
	GroupBackoff, MaxGroupBackoff time.Duration
	// RetractChunk bounds the deliveries one database transaction retracts
	// after a reorg (default 1,000): each chunk commits, so a poll that
	// times out leaves progress that the next one resumes from.
	RetractChunk int
	// KeepBlocks is how many recent block hashes are kept to detect reorgs
	// (default 256); a reorg deeper than that is not undone.
	KeepBlocks uint64
	// CheckpointBlocks is how far a subscription's next block may run
	// ahead of the stored one when nothing is delivered to it (default
	// 100). A step stores the next block of the subscriptions it delivered
	// to, and of those this far ahead: with 10,000 subscriptions a block
	// writes the few that matched, not 10,000 rows. Restarting from a
	// stored next block that lags reads again blocks that delivered
	// nothing to the subscription (the next block is stored with every
	// delivery), so nothing is delivered twice.
	CheckpointBlocks uint64
}

// Processor delivers the logs of one network to its subscriptions. Each
// step reads one block range once, with the queries of Queries over the
// subscriptions that are at the same next block (one batched round trip: the range's last header and at most two
// eth_getLogs, however many subscriptions), matches the logs in memory and
// stores the deliveries, their outbox rows and the subscriptions' next
// blocks in one database transaction fenced by the network's lease. Before
// reading, the stored hashes of processed blocks are compared with the
// chain; when a reorg took some back, every delivery of those blocks is
// retracted (a Removed delivery, newest first) and the subscriptions are
// rewound, so the new canonical blocks are delivered next. It is not safe
// for concurrent use; the subscriptions actor owns it. A failed Poll
// leaves the in-memory copies of the subscriptions (their sequence numbers)
// ahead of the store; the next Poll reads them again.
type Processor struct {
	net      *engine.Network
	chain    Chain
	store    engine.SubscriptionProcessorStore
	cfg      Config
	log      *slog.Logger
	clock    engine.Clock
	transfer *abi.ABI
	// abis caches the parsed ABI of each subscription by id (a
	// subscription's event never changes).
	abis map[string]*abi.ABI
	// live caches the network's live subscriptions, as of version: this
	// processor is the only writer of their next blocks and sequence
	// numbers, so they are read again only when one is created or
	// deleted, or after a failed poll.
	live    []*engine.Subscription
	version engine.SubscriptionsVersion
	// stored is the next block of each cached subscription as stored.
	stored map[string]uint64
	// health is what failed steps left of a subscription (groups.go);
	// turn is the block after the range of the last backfill step, where
	// the next backfill turn starts looking (nextBackfill).
	health map[string]*subHealth
	turn   uint64
}

// NewProcessor returns the processor of net's subscriptions.
func NewProcessor(net *engine.Network, chain Chain, store engine.SubscriptionProcessorStore, cfg Config, clock engine.Clock, log *slog.Logger) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("subscriptions %s: %w", net.Name, err)
	}
	cfg = cfg.withDefaults()
	if clock == nil {
		clock = engine.SystemClock{}
	}
	transfer, err := abi.JSON(strings.NewReader(TransferEventABI))
	if err != nil {
		return nil, fmt.Errorf("subscriptions %s: transfer ABI: %w", net.Name, err)
	}
	return &Processor{
		net: net, chain: chain, store: store, cfg: cfg, clock: clock, transfer: &transfer,
		log: log.With("network", net.Name, "component", "subscriptions"), abis: map[string]*abi.ABI{},
		health: map[string]*subHealth{},
	}, nil
}

// TransferEventABI is the ABI of ERC-20's Transfer event alone: the event
// of deposits subscriptions.
const TransferEventABI = `[{"type":"event","name":"Transfer","anonymous":false,"inputs":[` +
	`{"name":"from","type":"address","indexed":true},{"name":"to","type":"address","indexed":true},` +
	`{"name":"value","type":"uint256","indexed":false}]}]`

// Poll checks for a reorg, then runs up to MaxSteps steps. fence is the
// network's lease (the zero fence in single-node mode); head is the
// network's head when the caller knows it (the watcher saw it), nil to ask
// the node.
func (p *Processor) Poll(ctx context.Context, fence engine.NetworkFence, head *uint64) (res engine.SubscriptionResult, err error) {
	defer func() {
		if err != nil {
			p.live = nil // sequence numbers may be ahead of the store: read them again
		}
	}()
	subs, err := p.subscriptions(ctx)
	if err != nil {
		return res, err
	}
	res.Subscriptions = len(subs)
	if len(subs) == 0 {
		return res, nil
	}
	if head != nil {
		res.Head = *head
	} else {
		h, err := p.chain.HeaderByNumber(ctx, nil)
		if err != nil {
			return res, fmt.Errorf("subscriptions %s: head: %w", p.net.Name, err)
		}
		res.Head = h.Number.Uint64()
	}
	if err := p.checkReorg(ctx, fence, res.Head, subs, &res); err != nil {
		return res, err
	}
	filters, err := p.filters(ctx, subs)
	if err != nil {
		return res, err
	}
	if err := p.serve(ctx, fence, subs, filters, &res); err != nil {
		return res, err
	}
	res.Lag = lag(subs, res.Head)
	return res, nil
}

// serve runs the steps of a Poll: the caught-up groups first, then up to
// MaxSteps steps of backfills, in turn, within BackfillBudget. A step that fails on the node
// fails its group alone (failed: a smaller range, or a pause); a failed
// save or a cancelled ctx fails the Poll.
func (p *Processor) serve(ctx context.Context, fence engine.NetworkFence, subs []*engine.Subscription, filters map[string]Filter, res *engine.SubscriptionResult) error {
	for _, live := range []bool{true, false} {
		limit := p.cfg.MaxSteps
		if live {
			limit *= liveStepsFactor
		}
		start := p.clock.Now()
		for steps := 0; ; steps++ {
			groups := p.groups(subs, res.Head, p.clock.Now())
			var g subGroup
			var ok bool
			if live {
				g, ok = p.nextLive(groups)
			} else {
				g, ok = p.nextBackfill(groups)
			}
			if !ok {
				break
			}
			if steps == limit || (!live && steps > 0 && p.clock.Now().Sub(start) >= p.cfg.BackfillBudget) {
				res.More = true
				break
			}
			if !live {
				p.turn = g.to + 1
			}
			n, err := p.step(ctx, fence, g.subs, filters, g.from, g.to)
			var save *stepSaveError
			switch {
			case err == nil:
				p.stepped(g)
				res.Delivered += n
			case ctx.Err() != nil || errors.As(err, &save):
				return err
			default:
				p.failed(g, err, p.clock.Now())
				res.Failed++
			}
		}
	}
	now := p.clock.Now()
	for _, h := range p.health {
		if now.Before(h.retryAt) {
			res.Waiting++
		}
	}
	return nil
}

// liveStepsFactor multiplies MaxSteps for the caught-up steps of a Poll:
// the subscriptions of each confirmation depth are a group of their own
// at the head, and each should have its block at every Poll.
const liveStepsFactor = 4

// stepSaveError is a step's failure to store what it read: it fails the
// Poll (the store's trouble is every group's), where a failed read fails
// the group alone.
type stepSaveError struct{ err error }

func (e *stepSaveError) Error() string { return e.err.Error() }
func (e *stepSaveError) Unwrap() error { return e.err }

// subscriptions returns the network's live subscriptions: the cached ones
// while their version holds.
func (p *Processor) subscriptions(ctx context.Context) ([]*engine.Subscription, error) {
	v, err := p.store.SubscriptionsVersion(ctx, p.net.Name)
	if err != nil {
		return nil, fmt.Errorf("subscriptions %s: version: %w", p.net.Name, err)
	}
	if p.live != nil && v == p.version {
		return p.live, nil
	}
	subs, err := p.store.LiveSubscriptions(ctx, p.net.Name)
	if err != nil {
		return nil, fmt.Errorf("subscriptions %s: live subscriptions: %w", p.net.Name, err)
	}
	p.forgetDeleted(subs)
	p.live, p.version = subs, v
	p.stored = make(map[string]uint64, len(subs))
	for _, s := range subs {
		p.stored[s.ID] = s.Next
	}
	return subs, nil
}

// forgetDeleted drops the cached ABIs and the health of subscriptions no
// longer live.
func (p *Processor) forgetDeleted(subs []*engine.Subscription) {
	if len(p.abis) <= len(subs) && len(p.health) == 0 {
		return
	}
	live := make(map[string]bool, len(subs))
	for _, s := range subs {
		live[s.ID] = true
	}
	for id := range p.abis {
		if !live[id] {
			delete(p.abis, id)
		}
	}
	p.forgetHealth(live)
}

// top returns the highest block deep enough for s at head, and false when
// none is.
func top(s *engine.Subscription, head uint64) (uint64, bool) {
	if head < s.Confirmations {
		return 0, false
	}
	return head - s.Confirmations, true
}

// lag returns how many blocks deep enough for some subscription are not
// processed yet: the most of any subscription.
func lag(subs []*engine.Subscription, head uint64) uint64 {
	var most uint64
	for _, s := range subs {
		if t, ok := top(s, head); ok && t+1 > s.Next {
			most = max(most, t+1-s.Next)
		}
	}
	return most
}

// filters returns the filter of every subscription by id: its own, or for
// deposits the Transfer logs to its owner's accounts, read now so that
// accounts created since the last poll are included.
func (p *Processor) filters(ctx context.Context, subs []*engine.Subscription) (map[string]Filter, error) {
	out := make(map[string]Filter, len(subs))
	var owners []string
	for _, s := range subs {
		if s.Kind == engine.SubscriptionDeposits {
			owners = append(owners, s.Owner)
			continue
		}
		out[s.ID] = Filter{Address: s.Address, Topics: s.Topics}
	}
	if len(owners) == 0 {
		return out, nil
	}
	slices.Sort(owners)
	addrs, err := p.store.OwnerAddresses(ctx, slices.Compact(owners))
	if err != nil {
		return nil, fmt.Errorf("subscriptions %s: accounts of deposit subscribers: %w", p.net.Name, err)
	}
	for _, s := range subs {
		if s.Kind == engine.SubscriptionDeposits {
			out[s.ID] = DepositFilter(addrs[s.Owner])
		}
	}
	return out, nil
}

// step reads blocks from..to for group and stores its deliveries; it
// returns how many. The subscriptions' sequence numbers advance only once
// the step is stored (a failed read leaves them as they were); a failed
// save is a *stepSaveError.
func (p *Processor) step(ctx context.Context, fence engine.NetworkFence, group []*engine.Subscription, all map[string]Filter, from, to uint64) (int, error) {
	filters := make(map[string]Filter, len(group))
	list := make([]Filter, 0, len(group))
	for _, s := range group {
		f := all[s.ID]
		if s.Kind == engine.SubscriptionDeposits && len(f.Topics) > 2 && len(f.Topics[2]) == 0 {
			continue // an owner without accounts receives nothing
		}
		filters[s.ID] = f
		list = append(list, f)
	}
	header, results, err := HeaderAndLogs(ctx, p.chain, to, Queries(list, from, to))
	if err != nil {
		return 0, fmt.Errorf("subscriptions %s: blocks %d-%d: %w", p.net.Name, from, to, err)
	}
	logs, err := mergeLogs(results, to, header.Hash())
	if err != nil {
		return 0, fmt.Errorf("subscriptions %s: blocks %d-%d: %w", p.net.Name, from, to, err)
	}
	step := engine.SubscriptionStep{Network: p.net.Name, Next: map[string]uint64{}, KeepBlocks: p.cfg.KeepBlocks,
		Blocks: []engine.IndexedBlock{{Number: to, Hash: header.Hash()}}}
	byID := make(map[string]*engine.Subscription, len(group))
	seqs := make(map[string]int64, len(group))
	for _, s := range group {
		byID[s.ID], seqs[s.ID] = s, s.LastSeq
	}
	matcher := NewMatcher(filters)
	seen := map[uint64]bool{to: true}
	for i := range logs {
		l := &logs[i]
		for _, id := range matcher.Match(l) {
			ev, ok, err := p.delivery(byID[id], seqs[id]+1, l)
			if err != nil {
				return 0, err
			}
			if !ok {
				continue
			}
			seqs[id] = ev.Seq
			step.Events = append(step.Events, ev)
			if !seen[l.BlockNumber] {
				seen[l.BlockNumber] = true
				step.Blocks = append(step.Blocks, engine.IndexedBlock{Number: l.BlockNumber, Hash: l.BlockHash})
			}
		}
	}
	delivered := make(map[string]bool, len(step.Events))
	for _, ev := range step.Events {
		delivered[ev.SubscriptionID] = true
	}
	for _, s := range group {
		if delivered[s.ID] || to+1 >= p.stored[s.ID]+p.cfg.CheckpointBlocks {
			step.Next[s.ID] = to + 1
		}
	}
	if err := p.store.SaveSubscriptionStep(ctx, fence, step); err != nil {
		return 0, &stepSaveError{fmt.Errorf("subscriptions %s: save blocks %d-%d: %w", p.net.Name, from, to, err)}
	}
	for _, s := range group {
		s.Next, s.LastSeq = to+1, seqs[s.ID]
	}
	p.storedNext(step.Next)
	return len(step.Events), nil
}

// delivery returns the delivery of l to s, numbered seq; ok is false when
// l does not decode as s's event (a deposit subscription's Transfer of an
// ERC-721 token, for instance).
func (p *Processor) delivery(s *engine.Subscription, seq int64, l *types.Log) (engine.SubscriptionEvent, bool, error) {
	a, err := p.abiOf(s)
	if err != nil {
		return engine.SubscriptionEvent{}, false, err
	}
	decoded, ok := engine.DecodeLog(a, l)
	if !ok {
		return engine.SubscriptionEvent{}, false, nil
	}
	ev := engine.ViewEvent(decoded)
	view := DeliveryView{
		ID: engine.NewID(), SubscriptionID: s.ID, Sequence: seq, Network: p.net.Name,
		ContractID: s.ContractID, Address: ev.Address, Event: ev.Event, Signature: ev.Signature,
		BlockNumber: ev.BlockNumber, BlockHash: ev.BlockHash, TransactionHash: ev.TransactionHash,
		LogIndex: ev.LogIndex, ReturnValues: ev.ReturnValues,
	}
	body, err := json.Marshal(view)
	if err != nil {
		return engine.SubscriptionEvent{}, false, fmt.Errorf("subscriptions %s: delivery body: %w", p.net.Name, err)
	}
	return engine.SubscriptionEvent{
		ID: view.ID, SubscriptionID: s.ID, Seq: view.Sequence, BlockNumber: l.BlockNumber, BlockHash: l.BlockHash,
		TxHash: l.TxHash, LogIndex: l.Index, Body: body, Created: p.clock.Now(),
	}, true, nil
}

// abiOf returns the parsed ABI of s's event.
func (p *Processor) abiOf(s *engine.Subscription) (*abi.ABI, error) {
	if s.Kind == engine.SubscriptionDeposits {
		return p.transfer, nil
	}
	if a, ok := p.abis[s.ID]; ok {
		return a, nil
	}
	a, err := abi.JSON(strings.NewReader(string(s.ABI)))
	if err != nil {
		return nil, fmt.Errorf("subscriptions %s: ABI of subscription %s: %w", p.net.Name, s.ID, err)
	}
	p.abis[s.ID] = &a
	return &a, nil
}

// storedNext records the next blocks a step stored.
func (p *Processor) storedNext(next map[string]uint64) {
	for id, n := range next {
		p.stored[id] = n
	}
}
