// Package storetest is the contract test of engine.Store: every persistence
// backend (persistence/sqlite, persistence/postgres) runs the same cases with
// Run, each on a fresh, empty database.
package storetest

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
)

// Run runs the whole contract suite against the stores open returns, one
// store per test case. open must return a fresh, empty, migrated store for
// each call and arrange for it to be closed (t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) engine.Store) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s engine.Store)
	}{
		{"Ping", testPing},
		{"UserRoundTrip", testUserRoundTrip},
		{"UserNotFound", testUserNotFound},
		{"UserConflict", testUserConflict},
		{"UserWithAccount", testUserWithAccount},
		{"UserWithAccountConflictIsAtomic", testUserWithAccountConflictIsAtomic},
		{"Tokens", testTokens},
		{"TokenRevocation", testTokenRevocation},
		{"LastOperatorToken", testLastOperatorToken},
		{"LastOperatorTokenConcurrent", testLastOperatorTokenConcurrent},
		{"FirstOperator", testFirstOperator},
		{"BudgetRoots", testBudgetRoots},
		{"QuotaCaps", testQuotaCaps},
		{"QuotaCapsConcurrent", testQuotaCapsConcurrent},
		{"FaucetGrants", testFaucetGrants},
		{"AccountRoundTrip", testAccountRoundTrip},
		{"AccountConflict", testAccountConflict},
		{"ListAccounts", testListAccounts},
		{"DefaultAccountSwitching", testDefaultAccountSwitching},
		{"SetDefaultAccountNotOwner", testSetDefaultAccountNotOwner},
		{"ContractRoundTrip", testContractRoundTrip},
		{"ListContracts", testListContracts},
		{"TransactionRoundTripFull", testTransactionRoundTripFull},
		{"TransactionRoundTripMinimal", testTransactionRoundTripMinimal},
		{"TransactionNotFound", testTransactionNotFound},
		{"InsertTransactionsAllOrNone", testInsertTransactionsAllOrNone},
		{"ReadyTransactionsFIFO", testReadyTransactionsFIFO},
		{"MarkSubmitted", testMarkSubmitted},
		{"InFlightByNonce", testInFlightByNonce},
		{"MaxNonce", testMaxNonce},
		{"SubmittedByHash", testSubmittedByHash},
		{"MarkMined", testMarkMined},
		{"MarkMinedIsAtomic", testMarkMinedIsAtomic},
		{"MarkFailed", testMarkFailed},
		{"FailSubmitted", testFailSubmitted},
		{"NoteErrorAndFiller", testNoteErrorAndFiller},
		{"Cursors", testCursors},
		{"ProcessedHashes", testProcessedHashes},
		{"ReleaseNonce", testReleaseNonce},
		{"ReleaseNonces", testReleaseNonces},
		{"Unmine", testUnmine},
		{"PendingAccounts", testPendingAccounts},
		{"Conditions", testConditions},
		{"ResolveLeavesSubmitted", testResolveLeavesSubmitted},
		{"SweepExpiresPastAStarvingUser", testSweepExpiresPastAStarvingUser},
		{"PruneOutbox", testPruneOutbox},
		{"Replacement", testReplacement},
		{"MarkSubmittedMany", testMarkSubmittedMany},
		{"InFlightSummary", testInFlightSummary},
		{"CountQueued", testCountQueued},
		{"StageReads", testStageReads},
		{"MarkSubmittedGroups", testMarkSubmittedGroups},
		{"BulkMarkSubmitted", testBulkMarkSubmitted},
		{"BulkMarkSubmittedLarge", testBulkMarkSubmittedLarge},
		{"BulkMarkMined", testBulkMarkMined},
		{"ConcurrentWriters", testConcurrentWriters},
		{"Idempotency", testIdempotency},
		{"UserLimits", testUserLimits},
		{"TransferIndex", testTransferIndex},
		{"TransactionABIRoundTrip", testTransactionABIRoundTrip},
		{"ListTransactions", testListTransactions},
		{"CancelTransaction", testCancelTransaction},
		{"CallbacksOnTerminal", testCallbacksOnTerminal},
		{"DueCallbacks", testDueCallbacks},
		{"CallbackTransitions", testCallbackTransitions},
		{"AccountLease", testAccountLease},
		{"FencedWrites", testFencedWrites},
		{"FailQueued", testFailQueued},
		{"FencedMarkWaiting", testFencedMarkWaiting},
		{"Attempts", testAttempts},
		{"NetworkLease", testNetworkLease},
		{"ClaimDueCallbacks", testClaimDueCallbacks},
		{"ConcurrentClaims", testConcurrentClaims},
		{"RateCounters", testRateCounters},
		{"NonceUnique", testNonceUnique},
		{"MarkMinedOnlySubmitted", testMarkMinedOnlySubmitted},
		{"UnmineOnlyMined", testUnmineOnlyMined},
		{"NetworkFence", testNetworkFence},
		{"SealedValues", testSealedValues},
		{"KeyRotation", testKeyRotation},
		{"KMSAccounts", testKMSAccounts},
		{"SubscriptionRoundTrip", testSubscriptionRoundTrip},
		{"ListSubscriptions", testListSubscriptions},
		{"DeleteSubscription", testDeleteSubscription},
		{"CountSubscriptions", testCountSubscriptions},
		{"SubscriptionsVersion", testSubscriptionsVersion},
		{"SubscriptionStep", testSubscriptionStep},
		{"SubscriptionStepFenced", testSubscriptionStepFenced},
		{"SubscriptionStepLarge", testSubscriptionStepLarge},
		{"SubscriptionRewindChunks", testSubscriptionRewindChunks},
		{"EventOutboxOrder", testEventOutboxOrder},
		{"EventOutboxRace", testEventOutboxRace},
		{"PoolRoundTrip", testPoolRoundTrip},
		{"PoolResize", testPoolResize},
		{"PoolQuota", testPoolQuota},
		{"PoolQuotaConcurrent", testPoolQuotaConcurrent},
		{"PoolDelete", testPoolDelete},
		{"PoolLoads", testPoolLoads},
		{"PoolPendingAndKeys", testPoolPendingAndKeys},
		{"PoolTopUps", testPoolTopUps},
		{"PoolFilter", testPoolFilter},
		{"PoolColumnsOnEveryRead", testPoolColumnsOnEveryRead},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			c.fn(t, s)
		})
	}
}

// at returns the fixtures' time plus n seconds: millisecond precision, in a
// zone other than UTC so that the store's normalisation to UTC shows.
func at(n int) time.Time {
	base := time.Date(2026, 11, 21, 23, 25, 31, 123_000_000, time.FixedZone("UTC+2", 2*3600))
	return base.Add(time.Duration(n) * time.Second)
}

func ctxOf(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newID() string { return uuid.NewString() }

func randomAddress(t testing.TB) common.Address {
	t.Helper()
	var a common.Address
	if _, err := rand.Read(a[:]); err != nil {
		t.Fatal(err)
	}
	return a
}

func randomHash(t *testing.T) common.Hash {
	t.Helper()
	var h common.Hash
	if _, err := rand.Read(h[:]); err != nil {
		t.Fatal(err)
	}
	return h
}

func ptr[T any](v T) *T { return &v }

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// wantCode fails the test unless err carries code.
func wantCode(t *testing.T, err error, code engine.Code, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got no error, want %s", what, code)
	}
	if got := engine.ErrorCode(err); got != code {
		t.Fatalf("%s: got code %q (%v), want %q", what, got, err, code)
	}
	var want error = engine.ErrNotFound
	if code == engine.CodeConflict {
		want = engine.ErrConflict
	}
	if (code == engine.CodeNotFound || code == engine.CodeConflict) && !errors.Is(err, want) {
		t.Fatalf("%s: %v does not wrap the engine sentinel %v", what, err, want)
	}
}

// wantTime fails unless got is the instant want, in UTC.
func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
	if got.Location() != time.UTC {
		t.Errorf("%s location = %v, want UTC", what, got.Location())
	}
}

// wantTimePtr is wantTime for optional times.
func wantTimePtr(t *testing.T, what string, got, want *time.Time) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("%s = %v, want %v", what, got, want)
	default:
		wantTime(t, what, *got, *want)
	}
}

// newUser inserts a user (with no token) created at at(sec).
func newUser(t *testing.T, s engine.Store, sec int) *engine.User {
	t.Helper()
	u := &engine.User{ID: newID(), CallbackSecret: []byte("secret-" + newID()), Created: at(sec)}
	must(t, s.CreateUser(ctxOf(t), u, nil, nil))
	return u
}

// newAccount inserts an account of owner created at at(sec).
func newAccount(t *testing.T, s engine.Store, owner string, sec int, isDefault bool) *engine.Account {
	t.Helper()
	a := &engine.Account{
		ID:           newID(),
		Owner:        owner,
		Address:      randomAddress(t),
		Default:      isDefault,
		EncryptedKey: []byte("sealed-" + newID()),
		Created:      at(sec),
	}
	must(t, s.CreateAccount(ctxOf(t), a))
	return a
}

func testPing(t *testing.T, s engine.Store) {
	must(t, s.Ping(ctxOf(t)))
}
