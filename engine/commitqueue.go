package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// CommitQueue merges the group commits of many account actors into one
// database transaction. An account actor already writes every Submit
// waiting in its mailbox in one transaction; but when many accounts send at
// once, each actor's batch holds a row or two, and a store that commits one
// transaction at a time (SQLite: one writer, one fsync per commit) becomes
// the bound: 1,000 accounts × 10 transfers accepted about 260/s here, one
// fsync each. The queue has one writer: while it commits, the batches of
// other actors wait, and the next commit takes all of them.
//
// An error means nothing was stored (docs/api-decisions.md#errors), and the queue keeps that
// promise in three places:
//   - A transaction whose Claim was abandoned (its waiter's deadline
//     passed while it waited here) is dropped when the writer takes the
//     batches of the next commit, and never written; the writer takes every
//     other claim, so its waiter waits for the outcome.
//   - A commit that fails without a certain answer (a lost connection at
//     COMMIT, a deadline during the commit: anything but a constraint the
//     database refused) may have committed. The rows are read again by id,
//     and the outcome follows what is stored: rows present are a success.
//   - A merged commit that certainly failed is not the others' fault: every
//     batch in it is then written again on its own, so each caller gets its
//     own batch's outcome (a conflicting Idempotency-Key fails only its own
//     request).
//
// Create it with NewCommitQueue; Close stops it after the batches already
// queued are written.
type CommitQueue struct {
	store   CommitStore
	maxRows int
	// commitTimeout bounds one insert; resolveFor bounds the re-reading of
	// a commit with an unknown outcome (retried with backoff while the
	// database does not answer).
	commitTimeout time.Duration
	resolveFor    time.Duration

	mu      sync.Mutex
	waiting []*commitRequest
	closed  bool
	// senders notes the accounts whose batches the queue got lately: the
	// queue is pressed while they are many (AwaitCalm).
	senders senderWindow

	wake chan struct{} // size 1: the writer has work (or must stop)
	done chan struct{} // closed when the writer returned
}

var _ Committer = (*CommitQueue)(nil)

// CommitStore is what a CommitQueue writes to: a store's insert of new
// transactions (all or none) and its read by id, which settles a commit
// whose outcome is unknown.
type CommitStore interface {
	InsertTransactions(ctx context.Context, txs []*Transaction) error
	TransactionByID(ctx context.Context, id string) (*Transaction, error)
}

// Default bounds of a CommitQueue's database calls.
const (
	defaultCommitTimeout = 30 * time.Second
	defaultResolveFor    = time.Minute
	// readTimeout bounds one re-read of a row by id.
	readTimeout = 5 * time.Second
)

// commitRequest is one caller's batch and where its outcome goes.
type commitRequest struct {
	all    []*Transaction
	claims []*Claim // nil, or one per transaction of all
	// taken says the writer claimed the batch's transactions: txs are those
	// it took (in order), pos their indexes in all; the others failed with
	// ErrAbandoned in errs.
	taken bool
	txs   []*Transaction
	pos   []int
	errs  []error       // one per transaction of all
	done  chan struct{} // closed when errs is final
}

// NewCommitQueue starts the writer of a queue in front of store. A merged
// commit holds at most maxRows rows unless a single batch is larger (it is
// written alone); maxRows <= 0 means no bound.
func NewCommitQueue(store CommitStore, maxRows int) *CommitQueue {
	q := &CommitQueue{
		store: store, maxRows: maxRows, commitTimeout: defaultCommitTimeout, resolveFor: defaultResolveFor,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	go q.run() // owned by q: Close stops it and waits
	return q
}

// InsertTransactions stores txs in one database transaction, possibly with
// the batches of other callers, and returns when they are committed (nil)
// or not stored (the error). It is Commit without claims: the caller waits
// for the outcome whatever happens.
func (q *CommitQueue) InsertTransactions(ctx context.Context, txs []*Transaction) error {
	for _, err := range q.Commit(ctx, txs, nil) {
		if err != nil {
			return err
		}
	}
	return nil
}

// Commit stores txs in one database transaction, possibly with the batches
// of other callers, and returns the outcome of each (nil: committed). claims
// (nil, or one per transaction; a nil claim is always taken) are taken when
// the writer puts their transactions into a commit; a transaction whose
// claim was abandoned before is not written and fails with ErrAbandoned.
// Commit waits for the outcome even if ctx ends meanwhile: a batch handed
// to the writer may be committed, and the caller must not report a failure
// for rows that are stored.
func (q *CommitQueue) Commit(_ context.Context, txs []*Transaction, claims []*Claim) []error {
	errs := make([]error, len(txs))
	if len(txs) == 0 {
		return errs
	}
	if claims != nil && len(claims) != len(txs) {
		panic("engine: CommitQueue.Commit: claims do not match transactions")
	}
	r := &commitRequest{all: txs, claims: claims, errs: errs, done: make(chan struct{})}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		err := Errorf(CodeUnavailable, "", "shutting down: the commit queue is closed")
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	q.waiting = append(q.waiting, r)
	q.senders.note(txs[0].AccountID, time.Now())
	q.mu.Unlock()
	q.signal()
	<-r.done
	return r.errs
}

// Close writes the batches already queued, refuses new ones and stops the
// writer. It is safe to call more than once.
func (q *CommitQueue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
	<-q.done
}

func (q *CommitQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run is the writer: it commits what is waiting, merged, until the queue is
// closed and empty.
func (q *CommitQueue) run() {
	defer close(q.done)
	for range q.wake {
		for {
			batch, last, progress := q.take()
			if len(batch) > 0 {
				q.commit(batch)
			}
			if last {
				return
			}
			if !progress {
				break
			}
		}
	}
}

// AwaitCalm returns when accepts of many accounts no longer arrive (at
// once when they do not), after max at the latest, or when ctx ends. The
// submit stage waits here before a pump's first read (SubmitStage.YieldTo):
// while a burst of many accounts' requests keeps the writer busy, their
// pumps, each a read, an estimate, a signature and a write for a transfer
// or two, would take the CPU and the writer from the requests that clients
// wait for; after the burst, or max, they run merged.
func (q *CommitQueue) AwaitCalm(ctx context.Context, max time.Duration) {
	if !q.pressed() {
		return
	}
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	tick := time.NewTicker(calmFor / 2)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if !q.pressed() {
				return
			}
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (q *CommitQueue) pressed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.senders.pressed(time.Now())
}

// Pressure: the queue is pressed while pressAccounts distinct accounts or
// more handed it batches within calmFor (the window now or the one
// before). One account's burst is one account, however fast it is
// accepted (its actor hands its mailbox over one group commit at a time);
// a burst of many accounts is many. Measured on the embedded default,
// counting the callers waiting at once instead missed bursts: with the
// writer fast, a burst of 1,000 accounts' requests was committed one
// caller at a time for tens of milliseconds, and the pumps held back ran
// into the rest of it.
const (
	pressAccounts = 4
	calmFor       = 50 * time.Millisecond
)

// senderWindow counts the distinct accounts (up to pressAccounts) seen in
// the current window of calmFor and in the window before it.
type senderWindow struct {
	start     time.Time
	cur, prev int
	seen      [pressAccounts]string // the current window's accounts
}

// roll starts a new window when the current one is calmFor old.
func (w *senderWindow) roll(now time.Time) {
	age := now.Sub(w.start)
	if age < calmFor {
		return
	}
	w.prev = 0
	if age < 2*calmFor {
		w.prev = w.cur
	}
	w.start, w.cur = now, 0
}

func (w *senderWindow) note(account string, now time.Time) {
	w.roll(now)
	if w.cur == pressAccounts || slices.Contains(w.seen[:w.cur], account) {
		return
	}
	w.seen[w.cur] = account
	w.cur++
}

func (w *senderWindow) pressed(now time.Time) bool {
	w.roll(now)
	return w.cur >= pressAccounts || w.prev >= pressAccounts
}

// take removes the next merged commit from the queue: the oldest batches,
// up to maxRows rows (at least one batch), after claiming their
// transactions. A batch with nothing left to write (every claim abandoned)
// is answered at once. last is true when the queue is closed and nothing is
// left after these; progress when anything left the queue.
func (q *CommitQueue) take() (batch []*commitRequest, last, progress bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	rows, n := 0, 0
	for n < len(q.waiting) {
		r := q.waiting[n]
		r.claim()
		if len(r.txs) > 0 && len(batch) > 0 && q.maxRows > 0 && rows+len(r.txs) > q.maxRows {
			break
		}
		n++
		if len(r.txs) == 0 {
			close(r.done) // all abandoned: nothing to write
			continue
		}
		rows += len(r.txs)
		batch = append(batch, r)
	}
	q.waiting = q.waiting[n:]
	if len(q.waiting) == 0 {
		q.waiting = nil // let the array go
	}
	return batch, q.closed && len(q.waiting) == 0, n > 0
}

// claim takes the claims of r's transactions once: those taken are written,
// the abandoned ones fail with ErrAbandoned.
func (r *commitRequest) claim() {
	if r.taken {
		return
	}
	r.taken = true
	if r.claims == nil {
		r.txs = r.all
		r.pos = nil
		return
	}
	for i, tx := range r.all {
		if r.claims[i].Take() {
			r.txs = append(r.txs, tx)
			r.pos = append(r.pos, i)
		} else {
			r.errs[i] = ErrAbandoned
		}
	}
}

// finish sets the outcome of r's written transactions and wakes its caller.
func (r *commitRequest) finish(err error) {
	if r.pos == nil {
		for i := range r.errs {
			r.errs[i] = err
		}
	} else {
		for _, i := range r.pos {
			r.errs[i] = err
		}
	}
	close(r.done)
}

// commit writes the batches in one transaction; if that certainly fails,
// each again on its own.
func (q *CommitQueue) commit(batch []*commitRequest) {
	if len(batch) == 1 {
		batch[0].finish(q.write(batch[0].txs))
		return
	}
	rows := 0
	for _, r := range batch {
		rows += len(r.txs)
	}
	all := make([]*Transaction, 0, rows)
	for _, r := range batch {
		all = append(all, r.txs...)
	}
	err := q.write(all)
	if err == nil || !certainFailure(err) && !errors.Is(err, errNotStored) {
		// Stored, or the outcome stays unknown: writing the batches again
		// could store them twice (or fail them for rows that exist).
		for _, r := range batch {
			r.finish(err)
		}
		return
	}
	for _, r := range batch {
		r.finish(q.write(r.txs))
	}
}

// errNotStored marks an unknown outcome that the re-read settled: the rows
// are not stored.
var errNotStored = errors.New("rows not stored")

// write inserts txs in one database transaction and returns the outcome:
// nil when they are stored. An error that leaves the outcome unknown is
// settled by reading the rows again (resolve).
func (q *CommitQueue) write(txs []*Transaction) error {
	// The callers wait for the outcome whatever their contexts; the
	// commit's own deadline bounds it.
	ctx, cancel := context.WithTimeout(context.Background(), q.commitTimeout)
	err := q.store.InsertTransactions(ctx, txs)
	cancel()
	if err == nil || certainFailure(err) {
		return err
	}
	return q.resolve(txs, err)
}

// certainFailure reports whether err of an insert means that nothing was
// committed: the database refused a row (a taken id or key, a missing
// reference, an invalid value) and rolled back, or the store marked the
// error NotCommitted (it failed before the commit). Anything else (a lost
// connection, a deadline, a failed COMMIT) leaves the outcome unknown.
func certainFailure(err error) bool {
	if IsNotCommitted(err) {
		return true
	}
	switch ErrorCode(err) {
	case CodeConflict, CodeNotFound, CodeInvalidArgument:
		return true
	}
	return false
}

// resolve settles an insert of txs that failed with err, an unknown
// outcome: it reads the rows again by id until the database answers. All
// present: the commit happened (nil). None present: it did not (err). The
// rows of one database transaction are all there or none; a mix is reported
// as an internal error. If the database does not answer within resolveFor,
// the outcome stays unknown and the error says so.
func (q *CommitQueue) resolve(txs []*Transaction, err error) error {
	deadline := time.Now().Add(q.resolveFor)
	pause := 50 * time.Millisecond
	for {
		present, readErr := q.present(txs)
		switch {
		case readErr == nil && present == len(txs):
			return nil
		case readErr == nil && present == 0:
			return fmt.Errorf("%w (read again: %w)", err, errNotStored)
		case readErr == nil:
			return fmt.Errorf("commit of %d transactions: %d of them stored after %w", len(txs), present, err)
		}
		if time.Now().Add(pause).After(deadline) {
			return fmt.Errorf("commit outcome unknown (re-reading the rows: %w): %w", readErr, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Second)
	}
}

// present counts the transactions of txs whose rows are stored.
func (q *CommitQueue) present(txs []*Transaction) (int, error) {
	n := 0
	for _, tx := range txs {
		ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
		_, err := q.store.TransactionByID(ctx, tx.ID)
		cancel()
		switch {
		case err == nil:
			n++
		case !IsNotFound(err):
			return 0, fmt.Errorf("read transaction %s: %w", tx.ID, err)
		}
	}
	return n, nil
}

// Committer stores transactions (status new) in one database transaction:
// every one or none. CommitQueue implements it, merging the commits of
// many callers.
type Committer interface {
	// Commit stores txs and returns the outcome of each (nil: stored).
	// claims (nil, or one per transaction) are taken when their
	// transactions go into the commit; an abandoned one is not written
	// (ErrAbandoned).
	Commit(ctx context.Context, txs []*Transaction, claims []*Claim) []error
}

// Accept stores txs durably (status new) in one database transaction, the
// group commit of an account actor, and returns the outcome of each
// transaction (nil: stored; see Committer).
func Accept(ctx context.Context, store Committer, txs []*Transaction, claims []*Claim) []error {
	errs := store.Commit(ctx, txs, claims)
	for i, err := range errs {
		if err != nil && !errors.Is(err, ErrAbandoned) {
			errs[i] = fmt.Errorf("accept %d transactions: %w", len(txs), err)
		}
	}
	return errs
}
