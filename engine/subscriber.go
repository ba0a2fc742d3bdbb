package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/google/uuid"
)

// LogBatcher is implemented by chains that read a block's header and the
// logs of several queries in one round trip (a JSON-RPC batch). It is
// optional: the subscription processor falls back to one call each.
type LogBatcher interface {
	// HeaderAndLogs returns the header of block number and the logs of
	// each query, in order. A missing block is ethereum.NotFound.
	HeaderAndLogs(ctx context.Context, number uint64, qs []ethereum.FilterQuery) (*types.Header, [][]types.Log, error)
}

// HeaderAndLogs reads the header of block number and the logs of qs: in
// one round trip when chain is a LogBatcher, else one call each.
func HeaderAndLogs(ctx context.Context, chain IndexChain, number uint64, qs []ethereum.FilterQuery) (*types.Header, [][]types.Log, error) {
	if b, ok := chain.(LogBatcher); ok {
		return b.HeaderAndLogs(ctx, number, qs)
	}
	return HeaderAndLogsEach(ctx, chain, number, qs)
}

// HeaderAndLogsEach is the fallback of HeaderAndLogs: one call each.
func HeaderAndLogsEach(ctx context.Context, chain IndexChain, number uint64, qs []ethereum.FilterQuery) (*types.Header, [][]types.Log, error) {
	h, err := chain.HeaderByNumber(ctx, newUint(number))
	if err != nil {
		return nil, nil, err
	}
	out := make([][]types.Log, len(qs))
	for i, q := range qs {
		if out[i], err = chain.FilterLogs(ctx, q); err != nil {
			return nil, nil, err
		}
	}
	return h, out, nil
}

// SubscriptionConfig tunes a SubscriptionProcessor; zero fields take
// defaults.
type SubscriptionConfig struct {
	// Range is the most blocks one step reads while a subscription catches
	// up (default 500). A caught-up network is read one block per step.
	Range uint64
	// MaxSteps bounds the steps of one Poll (default 8), so a long
	// backfill does not starve the actor's mailbox.
	MaxSteps int
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

// SubscriptionResult tells the actor what a Poll did.
type SubscriptionResult struct {
	Head uint64
	// Subscriptions is how many live subscriptions the network has.
	Subscriptions int
	// Delivered and Retracted count the deliveries stored by this Poll.
	Delivered, Retracted int
	// Rewound is the block the subscriptions were rewound to after a
	// reorg, if any.
	Rewound *uint64
	// Lag is how many blocks deep enough for some subscription are not
	// processed yet (0 when every subscription is caught up).
	Lag uint64
	// More is true when blocks remain to be read now.
	More bool
}

// SubscriptionProcessor delivers the logs of one network to its
// subscriptions. Each step reads one block range once, with the queries of
// SubscriptionQueries over the subscriptions that are at the same next
// block (one batched round trip: the range's last header and at most two
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
type SubscriptionProcessor struct {
	net      *Network
	chain    IndexChain
	store    SubscriptionProcessorStore
	cfg      SubscriptionConfig
	log      *slog.Logger
	clock    Clock
	transfer *abi.ABI
	// abis caches the parsed ABI of each subscription by id (a
	// subscription's event never changes).
	abis map[string]*abi.ABI
	// live caches the network's live subscriptions, as of version: this
	// processor is the only writer of their next blocks and sequence
	// numbers, so they are read again only when one is created or
	// deleted, or after a failed poll.
	live    []*Subscription
	version SubscriptionsVersion
	// stored is the next block of each cached subscription as stored.
	stored map[string]uint64
}

// NewSubscriptionProcessor returns the processor of net's subscriptions.
func NewSubscriptionProcessor(net *Network, chain IndexChain, store SubscriptionProcessorStore, cfg SubscriptionConfig, clock Clock, log *slog.Logger) (*SubscriptionProcessor, error) {
	if cfg.Range == 0 {
		cfg.Range = 500
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 8
	}
	if cfg.KeepBlocks == 0 {
		cfg.KeepBlocks = 256
	}
	if cfg.CheckpointBlocks == 0 {
		cfg.CheckpointBlocks = 100
	}
	if clock == nil {
		clock = SystemClock{}
	}
	transfer, err := abi.JSON(strings.NewReader(TransferEventABI))
	if err != nil {
		return nil, fmt.Errorf("subscriptions %s: transfer ABI: %w", net.Name, err)
	}
	return &SubscriptionProcessor{
		net: net, chain: chain, store: store, cfg: cfg, clock: clock, transfer: &transfer,
		log: log.With("network", net.Name, "component", "subscriptions"), abis: map[string]*abi.ABI{},
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
func (p *SubscriptionProcessor) Poll(ctx context.Context, fence NetworkFence, head *uint64) (res SubscriptionResult, err error) {
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
	for steps := 0; ; steps++ {
		group, from, to := p.nextGroup(subs, res.Head)
		if group == nil {
			break
		}
		if steps == p.cfg.MaxSteps {
			res.More = true
			break
		}
		n, err := p.step(ctx, fence, group, filters, from, to)
		if err != nil {
			return res, err
		}
		res.Delivered += n
	}
	res.Lag = lag(subs, res.Head)
	return res, nil
}

// subscriptions returns the network's live subscriptions: the cached ones
// while their version holds.
func (p *SubscriptionProcessor) subscriptions(ctx context.Context) ([]*Subscription, error) {
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

// forgetDeleted drops the cached ABIs of subscriptions no longer live.
func (p *SubscriptionProcessor) forgetDeleted(subs []*Subscription) {
	if len(p.abis) <= len(subs) {
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
}

// top returns the highest block deep enough for s at head, and false when
// none is.
func top(s *Subscription, head uint64) (uint64, bool) {
	if head < s.Confirmations {
		return 0, false
	}
	return head - s.Confirmations, true
}

// lag returns how many blocks deep enough for some subscription are not
// processed yet: the most of any subscription.
func lag(subs []*Subscription, head uint64) uint64 {
	var most uint64
	for _, s := range subs {
		if t, ok := top(s, head); ok && t+1 > s.Next {
			most = max(most, t+1-s.Next)
		}
	}
	return most
}

// nextGroup returns the subscriptions whose next block is the lowest one
// deep enough for them, and the range they read together: from that block
// to the lowest of their tops, at most Range blocks. nil when every
// subscription is caught up.
func (p *SubscriptionProcessor) nextGroup(subs []*Subscription, head uint64) ([]*Subscription, uint64, uint64) {
	var group []*Subscription
	var from, to uint64
	for _, s := range subs {
		t, ok := top(s, head)
		if !ok || s.Next > t {
			continue
		}
		switch {
		case group == nil || s.Next < from:
			group, from, to = []*Subscription{s}, s.Next, t
		case s.Next == from:
			group = append(group, s)
			to = min(to, t)
		}
	}
	if group == nil {
		return nil, 0, 0
	}
	return group, from, min(to, from+p.cfg.Range-1)
}

// filters returns the filter of every subscription by id: its own, or for
// deposits the Transfer logs to its owner's accounts, read now so that
// accounts created since the last poll are included.
func (p *SubscriptionProcessor) filters(ctx context.Context, subs []*Subscription) (map[string]SubscriptionFilter, error) {
	out := make(map[string]SubscriptionFilter, len(subs))
	var owners []string
	for _, s := range subs {
		if s.Kind == SubscriptionDeposits {
			owners = append(owners, s.Owner)
			continue
		}
		out[s.ID] = SubscriptionFilter{Address: s.Address, Topics: s.Topics}
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
		if s.Kind == SubscriptionDeposits {
			out[s.ID] = DepositFilter(addrs[s.Owner])
		}
	}
	return out, nil
}

// step reads blocks from..to for group and stores its deliveries; it
// returns how many.
func (p *SubscriptionProcessor) step(ctx context.Context, fence NetworkFence, group []*Subscription, all map[string]SubscriptionFilter, from, to uint64) (int, error) {
	filters := make(map[string]SubscriptionFilter, len(group))
	list := make([]SubscriptionFilter, 0, len(group))
	for _, s := range group {
		f := all[s.ID]
		if s.Kind == SubscriptionDeposits && len(f.Topics) > 2 && len(f.Topics[2]) == 0 {
			continue // an owner without accounts receives nothing
		}
		filters[s.ID] = f
		list = append(list, f)
	}
	header, results, err := HeaderAndLogs(ctx, p.chain, to, SubscriptionQueries(list, from, to))
	if err != nil {
		return 0, fmt.Errorf("subscriptions %s: blocks %d-%d: %w", p.net.Name, from, to, err)
	}
	logs, err := mergeLogs(results, to, header.Hash())
	if err != nil {
		return 0, fmt.Errorf("subscriptions %s: blocks %d-%d: %w", p.net.Name, from, to, err)
	}
	step := SubscriptionStep{Network: p.net.Name, Next: map[string]uint64{}, KeepBlocks: p.cfg.KeepBlocks,
		Blocks: []IndexedBlock{{Number: to, Hash: header.Hash()}}}
	byID := make(map[string]*Subscription, len(group))
	for _, s := range group {
		byID[s.ID] = s
	}
	matcher := NewSubscriptionMatcher(filters)
	seen := map[uint64]bool{to: true}
	for i := range logs {
		l := &logs[i]
		for _, id := range matcher.Match(l) {
			ev, ok, err := p.delivery(byID[id], l)
			if err != nil {
				return 0, err
			}
			if !ok {
				continue
			}
			step.Events = append(step.Events, ev)
			if !seen[l.BlockNumber] {
				seen[l.BlockNumber] = true
				step.Blocks = append(step.Blocks, IndexedBlock{Number: l.BlockNumber, Hash: l.BlockHash})
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
		return 0, fmt.Errorf("subscriptions %s: save blocks %d-%d: %w", p.net.Name, from, to, err)
	}
	for _, s := range group {
		s.Next = to + 1
	}
	p.storedNext(step.Next)
	return len(step.Events), nil
}

// mergeLogs returns the logs of the queries' results in chain order, each
// once (a log two queries return is one log), without removed ones. The
// logs of block to must be of the block whose header was read with them
// (hash): otherwise the chain moved between the calls, and the step is
// retried at the next poll.
func mergeLogs(results [][]types.Log, to uint64, hash common.Hash) ([]types.Log, error) {
	type key struct {
		block common.Hash
		index uint
	}
	seen := map[key]bool{}
	var out []types.Log
	for _, logs := range results {
		for _, l := range logs {
			if l.Removed || seen[key{l.BlockHash, l.Index}] {
				continue
			}
			if l.BlockNumber == to && l.BlockHash != hash {
				return nil, fmt.Errorf("logs of block %d are of block %s, its header of %s: the chain moved, retrying", to, l.BlockHash, hash)
			}
			seen[key{l.BlockHash, l.Index}] = true
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b types.Log) int {
		if a.BlockNumber != b.BlockNumber {
			return cmpUint(a.BlockNumber, b.BlockNumber)
		}
		return cmpUint(uint64(a.Index), uint64(b.Index))
	})
	return out, nil
}

// cmpUint compares a and b.
func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// delivery returns the delivery of l to s, numbered after s.LastSeq
// (which it advances); ok is false when l does not decode as s's event (a
// deposit subscription's Transfer of an ERC-721 token, for instance).
func (p *SubscriptionProcessor) delivery(s *Subscription, l *types.Log) (SubscriptionEvent, bool, error) {
	a, err := p.abiOf(s)
	if err != nil {
		return SubscriptionEvent{}, false, err
	}
	decoded, ok := DecodeLog(a, l)
	if !ok {
		return SubscriptionEvent{}, false, nil
	}
	ev := ViewEvent(decoded)
	s.LastSeq++
	view := SubscriptionEventView{
		ID: uuid.NewString(), SubscriptionID: s.ID, Sequence: s.LastSeq, Network: p.net.Name,
		ContractID: s.ContractID, Address: ev.Address, Event: ev.Event, Signature: ev.Signature,
		BlockNumber: ev.BlockNumber, BlockHash: ev.BlockHash, TransactionHash: ev.TransactionHash,
		LogIndex: ev.LogIndex, ReturnValues: ev.ReturnValues,
	}
	body, err := json.Marshal(view)
	if err != nil {
		return SubscriptionEvent{}, false, fmt.Errorf("subscriptions %s: delivery body: %w", p.net.Name, err)
	}
	return SubscriptionEvent{
		ID: view.ID, SubscriptionID: s.ID, Seq: view.Sequence, BlockNumber: l.BlockNumber, BlockHash: l.BlockHash,
		TxHash: l.TxHash, LogIndex: l.Index, Body: body, Created: p.clock.Now(),
	}, true, nil
}

// abiOf returns the parsed ABI of s's event.
func (p *SubscriptionProcessor) abiOf(s *Subscription) (*abi.ABI, error) {
	if s.Kind == SubscriptionDeposits {
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

// checkReorg compares the stored block hashes with the chain. When some
// are no longer on it, the subscriptions are rewound to their ReorgPoint:
// their deliveries from there on are retracted, newest first, and their
// next block becomes at most that block.
func (p *SubscriptionProcessor) checkReorg(ctx context.Context, fence NetworkFence, head uint64, subs []*Subscription, res *SubscriptionResult) error {
	blocks, err := p.store.SubscriptionBlocks(ctx, p.net.Name, int(p.cfg.KeepBlocks))
	if err != nil {
		return fmt.Errorf("subscriptions %s: processed blocks: %w", p.net.Name, err)
	}
	orphan, err := ReorgPoint(ctx, p.chain, blocks, head)
	if err != nil {
		return fmt.Errorf("subscriptions %s: %w", p.net.Name, err)
	}
	if orphan == nil {
		return nil
	}
	from := *orphan
	live, err := p.store.LiveDeliveries(ctx, p.net.Name, from)
	if err != nil {
		return fmt.Errorf("subscriptions %s: deliveries from block %d: %w", p.net.Name, from, err)
	}
	step := SubscriptionStep{Network: p.net.Name, Next: map[string]uint64{}, ForgetFrom: &from, KeepBlocks: p.cfg.KeepBlocks}
	byID := make(map[string]*Subscription, len(subs))
	for _, s := range subs {
		byID[s.ID] = s
		if s.Next > from {
			step.Next[s.ID] = from
		}
	}
	// live is by subscription, then Seq: retract each subscription's
	// deliveries newest first.
	for end := len(live); end > 0; {
		start := end - 1
		for start > 0 && live[start-1].SubscriptionID == live[end-1].SubscriptionID {
			start--
		}
		s := byID[live[start].SubscriptionID]
		for i := end - 1; i >= start && s != nil; i-- {
			ev, err := p.retraction(s, live[i])
			if err != nil {
				return err
			}
			step.Events = append(step.Events, ev)
			step.Retracted = append(step.Retracted, live[i].ID)
		}
		end = start
	}
	p.log.Warn("reorg: retracting deliveries and rewinding subscriptions", "from_block", from, "retracted", len(step.Retracted))
	if err := p.store.SaveSubscriptionStep(ctx, fence, step); err != nil {
		return fmt.Errorf("subscriptions %s: rewind from block %d: %w", p.net.Name, from, err)
	}
	for id, next := range step.Next {
		byID[id].Next = next
	}
	p.storedNext(step.Next)
	res.Rewound, res.Retracted = &from, len(step.Retracted)
	return nil
}

// storedNext records the next blocks a step stored.
func (p *SubscriptionProcessor) storedNext(next map[string]uint64) {
	for id, n := range next {
		p.stored[id] = n
	}
}

// retraction returns the Removed delivery of ev, numbered after s.LastSeq
// (which it advances): the same body with a new id and sequence.
func (p *SubscriptionProcessor) retraction(s *Subscription, ev SubscriptionEvent) (SubscriptionEvent, error) {
	var view SubscriptionEventView
	var values json.RawMessage
	view.ReturnValues = &values
	if err := json.Unmarshal(ev.Body, &view); err != nil {
		return SubscriptionEvent{}, fmt.Errorf("subscriptions %s: stored delivery %s: %w", p.net.Name, ev.ID, err)
	}
	s.LastSeq++
	view.ID, view.Sequence, view.Removed = uuid.NewString(), s.LastSeq, true
	body, err := json.Marshal(view)
	if err != nil {
		return SubscriptionEvent{}, fmt.Errorf("subscriptions %s: retraction body: %w", p.net.Name, err)
	}
	ev.ID, ev.Seq, ev.Removed, ev.Body, ev.Created = view.ID, view.Sequence, true, body, p.clock.Now()
	return ev, nil
}
