package subscribe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/internal/chaintest"
)

var (
	subToken = common.HexToAddress("0x70ce")
	subBad   = common.HexToAddress("0xbad0")
	subFrom  = common.HexToAddress("0xf00")
	subTo    = common.HexToAddress("0x7000")
)

// TestSubscriptionLiveNotDelayedByBackfill (issue 27, finding 5a): a
// subscription at the head gets the log of each new block at the next Poll
// while two subscriptions backfill 20,000 blocks, and both backfills move
// at every Poll (in turn), not the lowest alone.
func TestSubscriptionLiveNotDelayedByBackfill(t *testing.T) {
	ctx := context.Background()
	chain := chaintest.New(20_001)
	for b := uint64(1); b < 20_000; b += 50 {
		chain.Transfer(b, subToken, subFrom, subTo, 1)
	}
	head := uint64(20_000)
	live := transferSub("live", subToken, head+1)
	back := transferSub("back", subToken, 0)
	back2 := transferSub("back2", subToken, 10_000)
	store := newMemSubStore(live, back, back2)
	p := newTestProcessor(t, chain, store, Config{Range: 100, MaxSteps: 4}, &stepClock{t: time.Unix(1e9, 0)})
	prevBack, prevBack2 := back.Next, back2.Next
	for poll := uint64(1); poll <= 3; poll++ {
		chain.Extend(1, 0)
		chain.Transfer(head+poll, subToken, subFrom, subTo, 2)
		res, err := p.Poll(ctx, engine.NetworkFence{}, nil)
		if err != nil {
			t.Fatalf("poll %d: %v", poll, err)
		}
		evs := store.of("live")
		if len(evs) != int(poll) || evs[len(evs)-1].BlockNumber != head+poll {
			t.Fatalf("poll %d: the live subscription has %d deliveries (last of block %v), want %d (the last of block %d): "+
				"a backfill delays it", poll, len(evs), lastBlock(evs), poll, head+poll)
		}
		if !res.More {
			t.Fatalf("poll %d: More is false while backfills remain", poll)
		}
		if back.Next <= prevBack || back2.Next <= prevBack2 {
			t.Fatalf("poll %d: backfills at %d (was %d) and %d (was %d): both should move at every poll",
				poll, back.Next, prevBack, back2.Next, prevBack2)
		}
		prevBack, prevBack2 = back.Next, back2.Next
	}
}

func lastBlock(evs []engine.SubscriptionEvent) any {
	if len(evs) == 0 {
		return "none"
	}
	return evs[len(evs)-1].BlockNumber
}

// codedError is a JSON-RPC error with a code, as the node's client
// returns.
type codedError struct {
	code int
	msg  string
}

func (e codedError) Error() string  { return e.msg }
func (e codedError) ErrorCode() int { return e.code }

func logsError(code int, msg string) error { return codedError{code, msg} }

// limitChain is a chaintest.Chain behind a provider that refuses wide
// eth_getLogs ranges and, with refuse, some queries.
type limitChain struct {
	*chaintest.Chain
	maxRange uint64
	refuse   func(q ethereum.FilterQuery) error
	refused  int
	served   int
	// asked counts the queries over each address.
	asked map[common.Address]int
}

func (c *limitChain) FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	for _, a := range q.Addresses {
		c.asked[a]++
	}
	if c.maxRange > 0 && q.ToBlock.Uint64()-q.FromBlock.Uint64()+1 > c.maxRange {
		c.refused++
		return nil, logsError(-32005, "query returned more than 10000 results")
	}
	if c.refuse != nil {
		if err := c.refuse(q); err != nil {
			return nil, err
		}
	}
	c.served++
	return c.Chain.FilterLogs(ctx, q)
}

// TestSubscriptionLogLimitHalvesRange (finding 5b): a provider that refuses
// ranges over 100 blocks ("query returned more than 10000 results") no
// longer fails every Poll on the same range: the range halves until the
// provider takes it and stays small for a while, and every log is
// delivered once, in order.
func TestSubscriptionLogLimitHalvesRange(t *testing.T) {
	ctx := context.Background()
	chain := &limitChain{Chain: chaintest.New(2_001), maxRange: 100, asked: map[common.Address]int{}}
	var want []uint64
	for b := uint64(3); b <= 2_000; b += 10 {
		chain.Transfer(b, subToken, subFrom, subTo, 1)
		want = append(want, b)
	}
	sub := transferSub("s", subToken, 0)
	store := newMemSubStore(sub)
	p := newTestProcessor(t, chain, store, Config{Range: 512, MaxSteps: 8}, &stepClock{t: time.Unix(1e9, 0)})
	for poll := 1; sub.Next <= 2_000; poll++ {
		if poll > 40 {
			t.Fatalf("after 40 polls the subscription is at block %d of 2000 (refused %d, served %d)", sub.Next, chain.refused, chain.served)
		}
		if _, err := p.Poll(ctx, engine.NetworkFence{}, nil); err != nil {
			t.Fatalf("poll %d: %v", poll, err)
		}
	}
	var got []uint64
	for i, ev := range store.of("s") {
		if ev.Seq != int64(i+1) {
			t.Fatalf("delivery %d has seq %d", i, ev.Seq)
		}
		got = append(got, ev.BlockNumber)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("delivered blocks %v, want %v", got, want)
	}
	t.Logf("eth_getLogs over 2,000 blocks: %d refused, %d served", chain.refused, chain.served)
	if chain.refused*4 > chain.served {
		t.Fatalf("refused %d queries for %d served: the smaller range should be kept a while", chain.refused, chain.served)
	}
}

// TestSubscriptionFailingGroupIsolated (finding 5b): a backfill whose query
// the node keeps failing waits (doubling its pause) while the subscription
// at the head goes on at every Poll, and the Poll does not fail for it;
// once the node answers, the backfill catches up.
func TestSubscriptionFailingGroupIsolated(t *testing.T) {
	ctx := context.Background()
	chain := &limitChain{Chain: chaintest.New(1_001), asked: map[common.Address]int{}}
	broken := true
	chain.refuse = func(q ethereum.FilterQuery) error {
		if broken && slices.Contains(q.Addresses, subBad) {
			return errors.New("internal error: execution aborted (timeout = 5s)")
		}
		return nil
	}
	chain.Transfer(700, subBad, subFrom, subTo, 1)
	head := uint64(1_000)
	live := transferSub("live", subToken, head+1)
	bad := transferSub("bad", subBad, 500)
	store := newMemSubStore(live, bad)
	clock := &stepClock{t: time.Unix(1e9, 0)}
	p := newTestProcessor(t, chain, store, Config{Range: 100, GroupBackoff: time.Second}, clock)
	block := head
	poll := func(wantWaiting int) engine.SubscriptionResult {
		t.Helper()
		block++
		chain.Extend(1, 0)
		chain.Transfer(block, subToken, subFrom, subTo, 2)
		res, err := p.Poll(ctx, engine.NetworkFence{}, nil)
		if err != nil {
			t.Fatalf("block %d: the poll failed for the broken group: %v", block, err)
		}
		if evs := store.of("live"); len(evs) == 0 || evs[len(evs)-1].BlockNumber != block {
			t.Fatalf("block %d: the live subscription did not get it (last %v)", block, lastBlock(evs))
		}
		if res.Waiting != wantWaiting {
			t.Fatalf("block %d: %d subscriptions waiting, want %d", block, res.Waiting, wantWaiting)
		}
		return res
	}
	if res := poll(1); res.Failed != 1 {
		t.Fatalf("failed steps %d, want 1", res.Failed)
	}
	asked := chain.asked[subBad]
	poll(1) // within the pause: not asked again
	if chain.asked[subBad] != asked {
		t.Fatalf("the failing group was retried during its pause (%d queries, was %d)", chain.asked[subBad], asked)
	}
	clock.t = clock.t.Add(1100 * time.Millisecond)
	poll(1) // retried once, fails again: now 2 s
	if chain.asked[subBad] != asked+1 {
		t.Fatalf("the failing group was asked %d times after its pause, want once", chain.asked[subBad]-asked)
	}
	clock.t = clock.t.Add(1500 * time.Millisecond)
	poll(1)
	if chain.asked[subBad] != asked+1 {
		t.Fatal("the failing group was retried before its doubled pause")
	}
	broken = false
	clock.t = clock.t.Add(time.Second)
	for i := 0; ; i++ {
		if i > 10 {
			t.Fatalf("the healed group has not caught up after 10 polls (stored at block %d of %d)", bad.Next, block)
		}
		if poll(0).Lag == 0 {
			break
		}
	}
	if evs := store.of("bad"); len(evs) != 1 || evs[0].BlockNumber != 700 {
		t.Fatalf("the healed group's deliveries: %d (want the one of block 700)", len(evs))
	}
}

// TestIsLogLimit: the refusals a smaller range cures, and not a rate limit
// under the same code.
func TestIsLogLimit(t *testing.T) {
	for _, err := range []error{
		errors.New("exceed maximum block range 1000"),
		logsError(-32005, "query returned more than 10000 results"),
		logsError(-32602, "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range and no limit on the response size"),
		errors.New("query exceeds max results 20000, retry with the range 24383075-24383096"),
		errors.New("logs matched by query exceeds limit of 10000"),
		errors.New("block range too large"),
		errors.New("Under the Free tier plan, you can make eth_getLogs requests with up to a 10 block range."),
		logsError(-32005, "limit exceeded"),
		fmt.Errorf("subscriptions dev: blocks 1-500: %w", logsError(-32005, "limit exceeded")),
	} {
		if !engine.IsLogLimit(err) {
			t.Errorf("%q: not a log limit", err)
		}
	}
	for _, err := range []error{
		nil,
		errors.New("429 Too Many Requests"),
		logsError(-32005, "daily request count exceeded, request rate limited"),
		errors.New("header not found"),
		context.DeadlineExceeded,
	} {
		if engine.IsLogLimit(err) {
			t.Errorf("%v: a log limit", err)
		}
	}
}

// TestSubscriptionReorgRetractsInChunks (finding 8): a reorg that takes
// back 100 deliveries (20 subscriptions, 5 logs each) under a store that
// can only retract 25 rows per Poll (as a transaction that times out): the
// retractions are stored in chunks (of at most 12) that each commit, a
// subscription's 5 in one, every Poll makes progress, and the next resumes
// where the last stopped. In the end every
// delivery is retracted exactly once, before the new branch's log is
// delivered, with sequence numbers without gaps.
func TestSubscriptionReorgRetractsInChunks(t *testing.T) {
	ctx := context.Background()
	chain := chaintest.New(51)
	var subs []*engine.Subscription
	for i := range 20 {
		subs = append(subs, transferSub(fmt.Sprintf("s%02d", i), subToken, 0))
	}
	store := newMemSubStore(subs...)
	p := newTestProcessor(t, chain, store, Config{Range: 500, RetractChunk: 12}, &stepClock{t: time.Unix(1e9, 0)})
	if _, err := p.Poll(ctx, engine.NetworkFence{}, nil); err != nil { // blocks 0-50, nothing to deliver
		t.Fatal(err)
	}
	chain.Extend(50, 0)
	for b := uint64(60); b < 65; b++ {
		chain.Transfer(b, subToken, subFrom, subTo, 1)
	}
	if _, err := p.Poll(ctx, engine.NetworkFence{}, nil); err != nil {
		t.Fatal(err)
	}
	if len(store.events) != 100 {
		t.Fatalf("%d deliveries before the reorg, want 100", len(store.events))
	}
	chain.Reorg(55, 110)
	chain.Transfer(70, subToken, subFrom, subTo, 3)
	budget := 0
	chunkOf := map[string]int{} // the chunk that retracted each subscription's deliveries
	chunks := 0
	store.fail = func(step engine.SubscriptionStep) error {
		if len(step.Retracted) > budget {
			return errors.New("canceling statement due to statement timeout")
		}
		budget -= len(step.Retracted)
		if len(step.Retracted) > 0 {
			chunks++
		}
		for _, ev := range step.Events {
			if !ev.Removed {
				continue
			}
			if c, ok := chunkOf[ev.SubscriptionID]; ok && c != chunks {
				t.Errorf("%s: retractions in chunks %d and %d; 5 fit in one of 12", ev.SubscriptionID, c, chunks)
			}
			chunkOf[ev.SubscriptionID] = chunks
		}
		return nil
	}
	done := 0
	for poll := 1; done < 100 || len(store.events) < 220; poll++ {
		if poll > 10 {
			t.Fatalf("after 10 polls %d of 100 deliveries are retracted", done)
		}
		budget = 25
		_, err := p.Poll(ctx, engine.NetworkFence{}, nil)
		now := len(store.retracted)
		if err != nil && now <= done {
			t.Fatalf("poll %d made no progress (%d retracted): %v", poll, now, err)
		}
		if err == nil && now != 100 {
			t.Fatalf("poll %d succeeded with %d of 100 retracted", poll, now)
		}
		if poll == 1 && err == nil {
			t.Fatal("the first poll retracted 100 rows under a budget of 25")
		}
		done = now
	}
	for _, s := range subs {
		evs := store.of(s.ID)
		if len(evs) != 11 {
			t.Fatalf("%s: %d deliveries, want 5 logs, 5 retractions, 1 new log", s.ID, len(evs))
		}
		removed := map[string]int{}
		for i, ev := range evs[5:10] {
			if !ev.Removed || ev.BlockNumber != uint64(64-i) {
				t.Fatalf("%s: delivery %d is %+v, want the retraction of block %d", s.ID, ev.Seq, ev, 64-i)
			}
			removed[ev.TxHash.Hex()]++
		}
		if len(removed) != 5 {
			t.Fatalf("%s: retractions of %d distinct logs, want 5", s.ID, len(removed))
		}
		if last := evs[10]; last.Removed || last.BlockNumber != 70 || last.Seq != 11 {
			t.Fatalf("%s: last delivery %+v, want the new branch's log of block 70, seq 11", s.ID, last)
		}
	}
}

// TestSubscriptionEachDepthEveryPoll: subscriptions of twelve confirmation
// depths are twelve groups at the head; each gets its newly deep block at
// the next Poll, though that is more steps than MaxSteps.
func TestSubscriptionEachDepthEveryPoll(t *testing.T) {
	ctx := context.Background()
	chain := chaintest.New(101)
	for b := uint64(80); b <= 100; b++ {
		chain.Transfer(b, subToken, subFrom, subTo, 1)
	}
	head := uint64(100)
	var subs []*engine.Subscription
	for i := range uint64(12) {
		s := transferSub(fmt.Sprintf("c%02d", i), subToken, head-i+1)
		s.Confirmations = i
		subs = append(subs, s)
	}
	store := newMemSubStore(subs...)
	p := newTestProcessor(t, chain, store, Config{MaxSteps: 4}, &stepClock{t: time.Unix(1e9, 0)})
	chain.Extend(1, 0)
	chain.Transfer(head+1, subToken, subFrom, subTo, 2)
	if _, err := p.Poll(ctx, engine.NetworkFence{}, nil); err != nil {
		t.Fatal(err)
	}
	for i, s := range subs {
		evs := store.of(s.ID)
		if len(evs) != 1 || evs[0].BlockNumber != head+1-uint64(i) {
			t.Fatalf("%s (%d confirmations): deliveries %d (last of block %v), want the one of block %d",
				s.ID, i, len(evs), lastBlock(evs), head+1-uint64(i))
		}
	}
}

// slowChain is a chaintest.Chain whose every eth_getLogs takes 400 ms of
// the test's clock.
type slowChain struct {
	*chaintest.Chain
	clock *stepClock
	calls int
}

func (c *slowChain) FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	c.clock.t = c.clock.t.Add(400 * time.Millisecond)
	c.calls++
	return c.Chain.FilterLogs(ctx, q)
}

// TestSubscriptionBackfillBudget: when a backfill's steps are slow (400
// ms each), a Poll stops its backfill once BackfillBudget (1 s) is spent,
// well before MaxSteps, so the next Poll, and the subscriptions at the
// head, come sooner; the backfill goes on at the next Poll.
func TestSubscriptionBackfillBudget(t *testing.T) {
	ctx := context.Background()
	clock := &stepClock{t: time.Unix(1e9, 0)}
	chain := &slowChain{Chain: chaintest.New(10_001), clock: clock}
	back := transferSub("back", subToken, 0)
	store := newMemSubStore(back)
	p := newTestProcessor(t, chain, store, Config{Range: 100, MaxSteps: 8, BackfillBudget: time.Second,
		CheckpointBlocks: 1}, clock)
	for poll := 1; poll <= 2; poll++ {
		calls := chain.calls
		res, err := p.Poll(ctx, engine.NetworkFence{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if steps := chain.calls - calls; steps != 3 || !res.More {
			t.Fatalf("poll %d: %d backfill steps (More %v), want 3 (1 s of 400 ms steps) and more to come", poll, steps, res.More)
		}
		if back.Next != uint64(poll*300) {
			t.Fatalf("poll %d: the backfill is at block %d, want %d", poll, back.Next, poll*300)
		}
	}
}
