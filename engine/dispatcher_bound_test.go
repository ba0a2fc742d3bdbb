package engine_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// brokenSecrets opens no secret (a sealed secret from another key, say).
type brokenSecrets struct{}

func (brokenSecrets) OpenCallbackSecret(string, []byte) (string, error) {
	return "", errors.New("message authentication failed")
}

// TestDispatcherCountsUnbuildableRows: a row whose request cannot be built
// (its owner's secret does not open) counts as a failed attempt each time:
// retried with backoff, then abandoned after the usual bound with the
// reason, instead of staying due and tried at every poll for ever.
func TestDispatcherCountsUnbuildableRows(t *testing.T) {
	rc := newReceiver(t, func(int, *http.Request) int { return http.StatusOK })
	store := newMemOutbox()
	_, ids := store.add(engine.StatusCompleted, "s", rc.URL)
	b := engine.Backoff{Initial: time.Millisecond, Max: time.Millisecond, MinTotal: 2 * time.Millisecond}
	d := engine.NewDispatcher(engine.DispatcherConfig{Store: store, Secrets: brokenSecrets{}, AllowPrivate: true, Backoff: b})
	defer d.Close(time.Second)

	pump(t, d, 5*time.Second, store.settled(ids))
	row := store.row(ids[0])
	if row.Status != engine.CallbackAbandoned || row.Attempts != b.MaxAttempts() ||
		!strings.Contains(row.LastError, "not sent: callback secret: message authentication failed") {
		t.Fatalf("row = %+v, want abandoned after %d attempts with the reason", row, b.MaxAttempts())
	}
	if n := len(rc.got()); n != 0 {
		t.Fatalf("receiver got %d requests, want none", n)
	}
}

// hangingOutbox is a memOutbox whose transaction reads hang until their
// context ends (a database connection that hung).
type hangingOutbox struct{ *memOutbox }

func (h hangingOutbox) TransactionByID(ctx context.Context, _ string) (*engine.Transaction, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestDispatcherStoreReadsHaveADeadline: a read that hangs ends at
// StoreTimeout, and the row is tried again later (one attempt counted),
// instead of holding its delivery slot for ever.
func TestDispatcherStoreReadsHaveADeadline(t *testing.T) {
	store := newMemOutbox()
	_, ids := store.add(engine.StatusCompleted, "s", "http://127.0.0.1:9/cb")
	d := engine.NewDispatcher(engine.DispatcherConfig{Store: hangingOutbox{store}, Secrets: testSecrets(), AllowPrivate: true,
		Backoff: engine.DefaultBackoff(), StoreTimeout: 50 * time.Millisecond})
	defer d.Close(time.Second)

	pump(t, d, 5*time.Second, func() bool { return store.row(ids[0]).Attempts == 1 })
	row := store.row(ids[0])
	if row.Status != engine.CallbackPending || !strings.Contains(row.LastError, context.DeadlineExceeded.Error()) || !row.NextAttempt.After(time.Now()) {
		t.Fatalf("row = %+v, want pending, retried later, with the deadline as its error", row)
	}
	if n := d.InFlight(); n != 0 {
		t.Fatalf("%d deliveries in flight, want 0", n)
	}
}
