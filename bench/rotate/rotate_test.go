// Package rotate measures `txengine keys rotate` (keystore.RotateKeys, what
// the command runs) on a store with many accounts, on SQLite and on
// PostgreSQL, while a reader and a writer keep using the store as the
// service does.
//
// It runs only with TXENGINE_BENCH=rotate (it bulk-creates
// TXENGINE_BENCH_ROTATE_ACCOUNTS accounts, default 100,000, and takes
// minutes):
//
//	TXENGINE_BENCH=rotate go test -v -count=1 -timeout 60m -run TestRotate ./bench/rotate/
package rotate

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	_ "github.com/lib/pq"  // PostgreSQL driver, for the bulk insert
	_ "modernc.org/sqlite" // SQLite driver, for the bulk insert

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/persistence/postgres"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
	"github.com/txengine/txengine/persistence/sqlite"
)

func TestMain(m *testing.M) { pgtest.RunMain(m) }

// accountsPerUser is how many accounts each bulk user owns (each user
// also has a callback secret and an idempotency record).
const accountsPerUser = 100

// rotationStore is a store the rotation runs on.
type rotationStore interface {
	engine.Store
	keystore.SealedStore
}

// dialect is what the bulk insert needs to know of a database.
type dialect struct {
	driver, dsn string
	// bind turns ? placeholders into the driver's.
	bind func(string) string
	// created is a timestamp column's value.
	created func(time.Time) any
}

func TestRotate(t *testing.T) {
	if os.Getenv("TXENGINE_BENCH") != "rotate" {
		t.Skip("measurement: run with TXENGINE_BENCH=rotate (TXENGINE_BENCH_ROTATE_ACCOUNTS accounts, default 100000)")
	}
	n := 100_000
	if v := os.Getenv("TXENGINE_BENCH_ROTATE_ACCOUNTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < accountsPerUser {
			t.Fatalf("TXENGINE_BENCH_ROTATE_ACCOUNTS=%q: want a number of at least %d", v, accountsPerUser)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "txengine.db")
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		measure(t, s, dialect{
			driver: "sqlite", dsn: "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)",
			bind: func(q string) string { return q }, created: func(at time.Time) any { return at.UnixMilli() },
		}, n)
	})
	t.Run("postgres", func(t *testing.T) {
		ctx := context.Background()
		url := pgtest.New(t)
		s, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		measure(t, s, dialect{
			driver: "postgres", dsn: url,
			bind: func(q string) string {
				var b bytes.Buffer
				i := 0
				for _, c := range q {
					if c == '?' {
						i++
						b.WriteString("$" + strconv.Itoa(i))
						continue
					}
					b.WriteRune(c)
				}
				return b.String()
			},
			created: func(at time.Time) any { return at },
		}, n)
	})
}

// bulkAccount is one account the bulk insert made.
type bulkAccount struct {
	id   string
	addr common.Address
	key  []byte
}

// bulkCreate inserts n accounts (accountsPerUser per user), their users
// (callback secrets) and one idempotency record per user, all sealed under
// old, in transactions of 10,000 rows.
func bulkCreate(t *testing.T, d dialect, old *keystore.KeySealer, n int) []bulkAccount {
	t.Helper()
	db, err := sql.Open(d.driver, d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UTC()
	accounts := make([]bulkAccount, 0, n)
	var tx *sql.Tx
	rows := 0
	exec := func(q string, args ...any) {
		if tx == nil {
			if tx, err = db.Begin(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tx.Exec(d.bind(q), args...); err != nil {
			t.Fatal(err)
		}
		if rows++; rows%10_000 == 0 {
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			tx = nil
		}
	}
	for u := 0; u < n/accountsPerUser; u++ {
		uid := uuid.NewString()
		secret, err := old.NewCallbackSecret(uid)
		if err != nil {
			t.Fatal(err)
		}
		exec(`INSERT INTO users (id, operator, callback_secret, created) VALUES (?, ?, ?, ?)`, uid, false, secret, d.created(now))
		body, err := old.SealIdempotency(uid, "k", []byte(`{"data":{"id":"`+uid+`"}}`))
		if err != nil {
			t.Fatal(err)
		}
		exec(`INSERT INTO idempotency_keys (user_id, key, request_hash, status, body, created) VALUES (?, ?, ?, ?, ?, ?)`,
			uid, "k", "h", 201, body, d.created(now))
		for range accountsPerUser {
			var a bulkAccount
			a.id = uuid.NewString()
			a.key = make([]byte, 32)
			if _, err := rand.Read(a.key); err != nil {
				t.Fatal(err)
			}
			if _, err := rand.Read(a.addr[:]); err != nil {
				t.Fatal(err)
			}
			sealed, err := old.SealAccountKey(a.addr, a.key)
			if err != nil {
				t.Fatal(err)
			}
			exec(`INSERT INTO accounts (id, owner, address, is_default, encrypted_key, created) VALUES (?, ?, ?, ?, ?, ?)`,
				a.id, uid, a.addr.Hex(), false, sealed, d.created(now))
			accounts = append(accounts, a)
		}
	}
	if tx != nil {
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return accounts
}

// measure bulk-creates n accounts under an old key and times the rotation
// to a new one while a reader opens random accounts' keys and a writer
// creates accounts, as the service would.
func measure(t *testing.T, s rotationStore, d dialect, n int) {
	ctx := context.Background()
	oldMaster, newMaster := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	old, err := keystore.NewKeySealer(oldMaster)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	accounts := bulkCreate(t, d, old, n)
	t.Logf("%s: bulk-created %d accounts, %d users and idempotency records in %s", d.driver, len(accounts), n/accountsPerUser, time.Since(began).Round(time.Millisecond))
	// The service after step (a): the new key current, the old previous.
	ring, err := keystore.NewKeySealer(newMaster, oldMaster)
	if err != nil {
		t.Fatal(err)
	}
	owner := &engine.User{ID: uuid.NewString(), Created: time.Now()}
	if owner.CallbackSecret, err = ring.NewCallbackSecret(owner.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUser(ctx, owner, nil, nil); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads, writes, failures atomic.Int64
	var mu sync.Mutex
	var latencies []time.Duration
	var firstErr atomic.Value
	fail := func(err error) {
		failures.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	wg.Add(2)
	go func() { // reader: a random account's key opens and is the one stored
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			i, _ := rand.Int(rand.Reader, big.NewInt(int64(len(accounts))))
			want := accounts[i.Int64()]
			t0 := time.Now()
			a, err := s.AccountByID(ctx, want.id)
			if err == nil {
				var key []byte
				key, err = ring.OpenAccountKey(a.Address, a.EncryptedKey)
				if err == nil && !bytes.Equal(key, want.key) {
					err = fmt.Errorf("account %s: another key", want.id)
				}
			}
			if err != nil {
				fail(err)
				continue
			}
			mu.Lock()
			latencies = append(latencies, time.Since(t0))
			mu.Unlock()
			reads.Add(1)
		}
	}()
	go func() { // writer: an account every 10 ms
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			a, err := engine.NewLocalAccount(ring)
			if err == nil {
				a.ID, a.Owner, a.Created = uuid.NewString(), owner.ID, time.Now()
				err = s.CreateAccount(ctx, a)
			}
			if err != nil {
				fail(err)
				continue
			}
			writes.Add(1)
		}
	}()

	time.Sleep(200 * time.Millisecond)
	report, err := keystore.RotateKeys(ctx, s, ring, keystore.RotateOptions{Batch: 1000})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range report.Counts {
		t.Logf("%s: %-20s %7d scanned %7d re-encrypted %d raced", d.driver, c.Kind, c.Scanned, c.Resealed, c.Raced)
	}
	mu.Lock()
	slices.Sort(latencies)
	var p50, p99, maxLat time.Duration
	if k := len(latencies); k > 0 {
		p50, p99, maxLat = latencies[k/2], latencies[k*99/100], latencies[k-1]
	}
	mu.Unlock()
	t.Logf("%s: rotation of %d accounts in %s (%.0f accounts/s); meanwhile %d reads (p50 %s, p99 %s, max %s), %d account creations, %d failures",
		d.driver, n, report.Elapsed.Round(time.Millisecond), float64(n)/report.Elapsed.Seconds(), reads.Load(),
		p50, p99, maxLat, writes.Load(), failures.Load())
	if failures.Load() > 0 {
		t.Errorf("%d requests failed during the rotation, first: %v", failures.Load(), firstErr.Load())
	}
	if reads.Load() == 0 {
		t.Error("no read answered during the rotation")
	}
	// Everything is under the new key: the new key alone opens it all.
	only, err := keystore.NewKeySealer(newMaster)
	if err != nil {
		t.Fatal(err)
	}
	uses, err := keystore.SealedStatus(ctx, s, only, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range uses {
		if left := u.NotCurrent(only.CurrentKeyID()); left > 0 {
			t.Errorf("%s: %d values not under the new key after the rotation", u.Kind, left)
		}
	}
	if got := uses[0].ByKey[only.CurrentKeyID()]; got != n+int(writes.Load()) {
		t.Errorf("%d account keys under the new key, want %d", got, n+int(writes.Load()))
	}
}
