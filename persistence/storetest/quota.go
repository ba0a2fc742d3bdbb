package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

// testBudgetRoots: CreateUser stores the budget root it is given (its own
// id when none), reads return it, and UserByTokenHash reads the root's
// limits with the user.
func testBudgetRoots(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	root := &engine.User{ID: newID(), Created: at(0)}
	must(t, s.CreateUser(ctx, root, keystore.HashToken("root"), nil))
	child := &engine.User{ID: newID(), Owner: root.ID, Root: root.ID, Created: at(1)}
	must(t, s.CreateUser(ctx, child, keystore.HashToken("child"), nil))
	for _, tt := range []struct {
		id, root string
	}{{root.ID, root.ID}, {child.ID, root.ID}} {
		got, err := s.UserByID(ctx, tt.id)
		must(t, err)
		if got.Root != tt.root {
			t.Errorf("UserByID(%s).Root = %q, want %q", tt.id, got.Root, tt.root)
		}
	}
	got, err := s.UserByTokenHash(ctx, keystore.HashToken("child"))
	must(t, err)
	if got.Root != root.ID || got.RootLimits != nil {
		t.Errorf("child = %+v, want root %s without limits", got, root.ID)
	}
	must(t, s.SetUserLimits(ctx, root.ID, &engine.RateLimits{PerSecond: 7, PerHour: 70}))
	got, err = s.UserByTokenHash(ctx, keystore.HashToken("child"))
	must(t, err)
	if got.Limits != nil || got.RootLimits == nil || *got.RootLimits != (engine.RateLimits{PerSecond: 7, PerHour: 70}) {
		t.Errorf("child after the root's override: limits %v, root limits %v", got.Limits, got.RootLimits)
	}
}

// testQuotaCaps: creations over a cap of their root are refused with
// forbidden and store nothing; the caps count the whole tree.
func testQuotaCaps(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	root := &engine.User{ID: newID(), Created: at(0)}
	must(t, s.CreateUser(ctx, root, nil, nil))
	q := &engine.Quota{Root: root.ID, MaxUsers: 2, MaxAccounts: 2}
	child := &engine.User{ID: newID(), Owner: root.ID, Root: root.ID, Created: at(1), Quota: q}
	acct := &engine.Account{ID: newID(), Address: randomAddress(t), EncryptedKey: []byte{1}, Created: at(1)}
	must(t, s.CreateUser(ctx, child, nil, acct))

	over := &engine.User{ID: newID(), Owner: child.ID, Root: root.ID, Created: at(2), Quota: q}
	wantCode(t, s.CreateUser(ctx, over, keystore.HashToken("over"), nil), engine.CodeForbidden, "CreateUser over the users cap")
	_, err := s.UserByID(ctx, over.ID)
	wantCode(t, err, engine.CodeNotFound, "user refused by the cap")
	_, err = s.UserByTokenHash(ctx, keystore.HashToken("over"))
	wantCode(t, err, engine.CodeNotFound, "token of a user refused by the cap")

	second := &engine.Account{ID: newID(), Owner: root.ID, Address: randomAddress(t), Created: at(3), Quota: q}
	must(t, s.CreateAccount(ctx, second))
	third := &engine.Account{ID: newID(), Owner: child.ID, Address: randomAddress(t), Created: at(4), Quota: q,
		Faucet: []engine.FaucetGrant{{Network: "dev", Granted: true}}}
	wantCode(t, s.CreateAccount(ctx, third), engine.CodeForbidden, "CreateAccount over the accounts cap")
	_, err = s.AccountByID(ctx, third.ID)
	wantCode(t, err, engine.CodeNotFound, "account refused by the cap")
	used, err := s.FaucetGrantsSince(ctx, root.ID, at(0))
	must(t, err)
	if len(used) != 0 {
		t.Errorf("grants after a refused account = %v", used)
	}

	// Another root's caps are its own; no quota is no cap.
	other := newUser(t, s, 5)
	must(t, s.CreateAccount(ctx, &engine.Account{ID: newID(), Owner: other.ID, Address: randomAddress(t), Created: at(5),
		Quota: &engine.Quota{Root: other.ID, MaxUsers: 1, MaxAccounts: 1}}))
	must(t, s.CreateAccount(ctx, &engine.Account{ID: newID(), Owner: root.ID, Address: randomAddress(t), Created: at(6)}))
}

// testQuotaCapsConcurrent: creations racing for the last places of a cap
// pass it together in no store.
func testQuotaCapsConcurrent(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	root := newUser(t, s, 0)
	const maxUsers, maxAccounts, racers = 4, 5, 12
	q := &engine.Quota{Root: root.ID, MaxUsers: maxUsers, MaxAccounts: maxAccounts}
	var wg sync.WaitGroup
	var mu sync.Mutex
	usersOK, accountsOK := 0, 0
	for i := range racers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			u := &engine.User{ID: newID(), Owner: root.ID, Root: root.ID, Created: at(1 + i), Quota: q}
			err := s.CreateUser(ctx, u, nil, nil)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				usersOK++
			} else if engine.ErrorCode(err) != engine.CodeForbidden {
				t.Errorf("racing CreateUser: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			a := &engine.Account{ID: newID(), Owner: root.ID, Address: randomAddress(t), Created: at(1 + i), Quota: q}
			err := s.CreateAccount(ctx, a)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				accountsOK++
			} else if engine.ErrorCode(err) != engine.CodeForbidden {
				t.Errorf("racing CreateAccount: %v", err)
			}
		}()
	}
	wg.Wait()
	if usersOK != maxUsers-1 || accountsOK != maxAccounts {
		t.Errorf("created %d users and %d accounts, want %d and %d (the root counts as a user)",
			usersOK, accountsOK, maxUsers-1, maxAccounts)
	}
	accts, err := s.ListAccounts(ctx, root.ID)
	must(t, err)
	if len(accts) != maxAccounts {
		t.Errorf("stored accounts = %d, want %d", len(accts), maxAccounts)
	}
}

// testFaucetGrants: a grant is recorded once per (account, network) with
// its root, counted per network in the period; one over the budget fails
// the creation with ErrFaucetBudget and stores nothing.
func testFaucetGrants(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	root := newUser(t, s, 0)
	child := &engine.User{ID: newID(), Owner: root.ID, Root: root.ID, Created: at(0)}
	must(t, s.CreateUser(ctx, child, nil, nil))
	q := &engine.Quota{Root: root.ID, FaucetBudget: 2, FaucetSince: at(0)}
	grant := func(owner string, sec int, nets ...string) (*engine.Account, error) {
		a := &engine.Account{ID: newID(), Owner: owner, Address: randomAddress(t), Created: at(sec), Quota: q}
		for _, n := range nets {
			a.Faucet = append(a.Faucet, engine.FaucetGrant{Network: n, Granted: true})
		}
		return a, s.CreateAccount(ctx, a)
	}
	_, err := grant(root.ID, 1, "dev", "sepolia")
	must(t, err)
	_, err = grant(child.ID, 2, "dev")
	must(t, err)
	// A refused grant (Granted false) records nothing and fails nothing.
	must(t, s.CreateAccount(ctx, &engine.Account{ID: newID(), Owner: child.ID, Address: randomAddress(t), Created: at(3),
		Quota: q, Faucet: []engine.FaucetGrant{{Network: "dev"}}}))
	used, err := s.FaucetGrantsSince(ctx, root.ID, at(0))
	must(t, err)
	if used["dev"] != 2 || used["sepolia"] != 1 || len(used) != 2 {
		t.Errorf("grants = %v, want dev 2, sepolia 1", used)
	}
	// Over the budget: nothing stored.
	a, err := grant(child.ID, 4, "dev")
	if !errors.Is(err, engine.ErrFaucetBudget) {
		t.Fatalf("grant over the budget: %v, want ErrFaucetBudget", err)
	}
	_, err = s.AccountByID(ctx, a.ID)
	wantCode(t, err, engine.CodeNotFound, "account whose grant was over the budget")
	// The period slides: grants before FaucetSince do not count.
	q.FaucetSince = at(2)
	_, err = grant(child.ID, 5, "dev")
	must(t, err)
	used, err = s.FaucetGrantsSince(ctx, root.ID, at(2))
	must(t, err)
	if used["dev"] != 2 {
		t.Errorf("grants since at(2) = %v, want dev 2", used)
	}
	// Another root counts apart.
	other, err := s.FaucetGrantsSince(ctx, child.ID, at(0))
	must(t, err)
	if len(other) != 0 {
		t.Errorf("grants of a non-root = %v", other)
	}
}

// Backfill0011 checks migration 0011's backfill of users.root_id: old is a
// store before it, insertUser inserts a row of users there (the columns of
// 0001), migrate closes old and returns the store migrated.
func Backfill0011(t *testing.T, insertUser func(id, owner string, operator bool) error, migrate func() engine.Store) {
	ids := map[string]string{}
	for _, name := range []string{"op", "a", "b", "c", "o", "p", "op2", "q"} {
		ids[name] = newID()
	}
	for _, u := range []struct {
		name, owner string
		operator    bool
	}{
		{"op", "", true}, {"a", "op", false}, {"b", "a", false}, {"c", "b", false},
		{"o", "", false}, {"p", "o", false}, {"op2", "op", true}, {"q", "op2", false},
	} {
		must(t, insertUser(ids[u.name], ids[u.owner], u.operator))
	}
	s := migrate()
	// A root is ownerless, an operator, or created by an operator.
	for name, root := range map[string]string{
		"op": "op", "a": "a", "b": "a", "c": "a", "o": "o", "p": "o", "op2": "op2", "q": "q",
	} {
		got, err := s.UserByID(ctxOf(t), ids[name])
		must(t, err)
		if got.Root != ids[root] {
			t.Errorf("root of %s = %s, want %s's", name, got.Root, root)
		}
	}
}

// testPoolQuotaConcurrent: pools created at once in one tree count their
// members one pool after the other: with room for 7 accounts, exactly two
// pools of 3 of the racers get in, the others are refused whole.
func testPoolQuotaConcurrent(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	root := newUser(t, s, 0)
	const maxAccounts, size, racers = 7, 3, 6
	q := &engine.Quota{Root: root.ID, MaxAccounts: maxAccounts}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		ok int
	)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &engine.Pool{ID: newID(), Owner: root.ID, Name: "racer", Network: "dev", Size: size, Created: at(1 + i)}
			err := s.CreatePool(ctx, p, poolMembers(t, root.ID, 1+i, size, q))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
			} else if engine.ErrorCode(err) != engine.CodeForbidden {
				t.Errorf("racing CreatePool: %v", err)
			}
		}()
	}
	wg.Wait()
	accounts, err := s.ListAccounts(ctx, root.ID)
	must(t, err)
	pools, err := s.ListPools(ctx, root.ID)
	must(t, err)
	if ok != 2 || len(pools) != 2 || len(accounts) != 2*size {
		t.Errorf("%d pools created (%d listed), %d accounts; want 2 pools of %d", ok, len(pools), len(accounts), size)
	}
}
