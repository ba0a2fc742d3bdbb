package storetest

import (
	"math/big"
	"reflect"
	"testing"

	"github.com/txengine/txengine/engine"
)

// poolMembers returns n new non-default accounts of owner for a pool,
// created at at(sec), each with quota q and a faucet grant on dev.
func poolMembers(t *testing.T, owner string, sec, n int, q *engine.Quota) []*engine.Account {
	t.Helper()
	out := make([]*engine.Account, n)
	for i := range out {
		out[i] = &engine.Account{
			ID: newID(), Owner: owner, Address: randomAddress(t), EncryptedKey: []byte("sealed-" + newID()),
			Created: at(sec), Quota: q, Faucet: []engine.FaucetGrant{{Network: "dev", Granted: true}},
		}
	}
	return out
}

// newPool creates a pool of owner on dev with size members, created at at(sec).
func newPool(t *testing.T, s engine.Store, owner, treasury string, sec, size int) (*engine.Pool, []*engine.Account) {
	t.Helper()
	p := &engine.Pool{ID: newID(), Owner: owner, Name: "payouts", Network: "dev", Size: size, TreasuryID: treasury, Created: at(sec)}
	members := poolMembers(t, owner, sec, size, nil)
	must(t, s.CreatePool(ctxOf(t), p, members))
	return p, members
}

// wantMembers fails unless p's members are accounts, in slots 0.. in order.
func wantMembers(t *testing.T, what string, p *engine.Pool, accounts []*engine.Account) {
	t.Helper()
	if p.Size != len(accounts) || len(p.Members) != len(accounts) {
		t.Fatalf("%s: size %d, %d members, want %d", what, p.Size, len(p.Members), len(accounts))
	}
	for i, a := range accounts {
		want := engine.PoolMember{AccountID: a.ID, Address: a.Address, Slot: i}
		if p.Members[i] != want {
			t.Errorf("%s: member %d = %+v, want %+v", what, i, p.Members[i], want)
		}
	}
}

// testPoolRoundTrip: CreatePool stores the pool, its members as ordinary
// non-default accounts with their faucet grants, and its idempotency
// record; PoolByID and ListPools read them back (members by slot, pools
// oldest first, only the owner's).
func testPoolRoundTrip(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	treasury := newAccount(t, s, u.ID, 0, true)
	p := &engine.Pool{ID: newID(), Owner: u.ID, Name: "payouts \"é\"", Network: "dev", Size: 3, TreasuryID: treasury.ID,
		Created: at(1), Idempotency: idem(u.ID, "pool-key", "h", at(1))}
	members := poolMembers(t, u.ID, 1, 3, nil)
	must(t, s.CreatePool(ctx, p, members))

	got, err := s.PoolByID(ctx, p.ID)
	must(t, err)
	if got.ID != p.ID || got.Owner != u.ID || got.Name != p.Name || got.Network != "dev" || got.TreasuryID != treasury.ID {
		t.Fatalf("PoolByID = %+v, want %+v", got, p)
	}
	wantTime(t, "Created", got.Created, at(1))
	wantMembers(t, "PoolByID", got, members)
	for _, m := range members {
		a, err := s.AccountByID(ctx, m.ID)
		must(t, err)
		if a.Default || a.Owner != u.ID || a.Address != m.Address {
			t.Errorf("member account = %+v", a)
		}
	}
	if def, err := s.DefaultAccount(ctx, u.ID); err != nil || def.ID != treasury.ID {
		t.Errorf("default account after CreatePool = %v, %v; want the treasury", def, err)
	}
	grants, err := s.FaucetGrantsSince(ctx, u.ID, at(0))
	must(t, err)
	if grants["dev"] != 3 {
		t.Errorf("faucet grants = %v, want 3 on dev", grants)
	}
	rec, err := s.IdempotencyRecord(ctx, u.ID, "pool-key")
	must(t, err)
	if rec.RequestHash != "h" || rec.Status != 201 {
		t.Errorf("idempotency record = %+v", rec)
	}

	// Without a treasury; a second pool lists after the first; another
	// user's pool is not listed.
	q, qm := newPool(t, s, u.ID, "", 2, 1)
	newPool(t, s, newUser(t, s, 0).ID, "", 0, 1)
	list, err := s.ListPools(ctx, u.ID)
	must(t, err)
	if len(list) != 2 || list[0].ID != p.ID || list[1].ID != q.ID {
		t.Fatalf("ListPools = %d pools, want [%s %s]", len(list), p.ID, q.ID)
	}
	wantMembers(t, "ListPools[0]", list[0], members)
	wantMembers(t, "ListPools[1]", list[1], qm)
	if list[1].TreasuryID != "" {
		t.Errorf("treasury of a pool without one = %q", list[1].TreasuryID)
	}
	if none, err := s.ListPools(ctx, newID()); err != nil || len(none) != 0 {
		t.Errorf("ListPools of a user without pools = %v, %v", none, err)
	}
	_, err = s.PoolByID(ctx, newID())
	wantCode(t, err, engine.CodeNotFound, "PoolByID of an unknown pool")

	// A live idempotency key is a conflict, and nothing is stored.
	r := &engine.Pool{ID: newID(), Owner: u.ID, Name: "again", Network: "dev", Size: 1, Created: at(3),
		Idempotency: idem(u.ID, "pool-key", "h2", at(3))}
	rm := poolMembers(t, u.ID, 3, 1, nil)
	wantCode(t, s.CreatePool(ctx, r, rm), engine.CodeConflict, "CreatePool with a live key")
	_, err = s.PoolByID(ctx, r.ID)
	wantCode(t, err, engine.CodeNotFound, "pool of the conflicting request")
	_, err = s.AccountByID(ctx, rm[0].ID)
	wantCode(t, err, engine.CodeNotFound, "member of the conflicting request")
}

// testPoolResize: up adds new members in the next slots, down removes the
// highest slots, whose accounts stay; a removed member never comes back.
func testPoolResize(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	p, members := newPool(t, s, u.ID, "", 1, 2)

	more := poolMembers(t, u.ID, 2, 3, nil)
	must(t, s.ResizePool(ctx, p.ID, 5, more))
	got, err := s.PoolByID(ctx, p.ID)
	must(t, err)
	all := append(append([]*engine.Account{}, members...), more...)
	wantMembers(t, "after resizing up to 5", got, all)

	must(t, s.ResizePool(ctx, p.ID, 2, nil))
	got, err = s.PoolByID(ctx, p.ID)
	must(t, err)
	wantMembers(t, "after resizing down to 2", got, members)
	for _, a := range more {
		if _, err := s.AccountByID(ctx, a.ID); err != nil {
			t.Errorf("account of a removed member: %v", err)
		}
	}

	again := poolMembers(t, u.ID, 3, 1, nil)
	must(t, s.ResizePool(ctx, p.ID, 3, again))
	got, err = s.PoolByID(ctx, p.ID)
	must(t, err)
	wantMembers(t, "after resizing up to 3", got, append(append([]*engine.Account{}, members...), again...))

	// The wrong number of new members, an unknown pool: refused, nothing changes.
	if err := s.ResizePool(ctx, p.ID, 5, poolMembers(t, u.ID, 4, 1, nil)); err == nil {
		t.Errorf("ResizePool to 5 with 1 new member: no error")
	}
	wantCode(t, s.ResizePool(ctx, newID(), 1, nil), engine.CodeNotFound, "ResizePool of an unknown pool")
	got, err = s.PoolByID(ctx, p.ID)
	must(t, err)
	if got.Size != 3 {
		t.Errorf("size after refused resizes = %d, want 3", got.Size)
	}
}

// testPoolQuota: a pool whose members would take the tree over its
// account cap is refused as a whole (forbidden): no pool, no member
// account, no faucet grant; the same holds for resizing up.
func testPoolQuota(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	newAccount(t, s, u.ID, 0, true)
	q := &engine.Quota{Root: u.ID, MaxAccounts: 4}
	p := &engine.Pool{ID: newID(), Owner: u.ID, Name: "big", Network: "dev", Size: 4, Created: at(1)}
	members := poolMembers(t, u.ID, 1, 4, q)
	wantCode(t, s.CreatePool(ctx, p, members), engine.CodeForbidden, "CreatePool over the accounts cap")
	_, err := s.PoolByID(ctx, p.ID)
	wantCode(t, err, engine.CodeNotFound, "pool refused by the cap")
	accounts, err := s.ListAccounts(ctx, u.ID)
	must(t, err)
	if len(accounts) != 1 {
		t.Errorf("accounts after a refused pool = %d, want 1", len(accounts))
	}
	if grants, err := s.FaucetGrantsSince(ctx, u.ID, at(0)); err != nil || len(grants) != 0 {
		t.Errorf("grants after a refused pool = %v, %v", grants, err)
	}

	// Three members fit; resizing to 4 does not.
	p.Size = 3
	must(t, s.CreatePool(ctx, p, members[:3]))
	wantCode(t, s.ResizePool(ctx, p.ID, 4, poolMembers(t, u.ID, 2, 1, q)), engine.CodeForbidden, "ResizePool over the cap")
	got, err := s.PoolByID(ctx, p.ID)
	must(t, err)
	wantMembers(t, "after a refused resize", got, members[:3])
}

// testPoolDelete: a deleted pool is not found nor listed, its members stay
// accounts, its transactions keep their pool; deleting again is not found.
func testPoolDelete(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	p, members := newPool(t, s, u.ID, "", 1, 2)
	f := fixture{user: u, account: members[0]}
	tx := f.tx("dev", 2)
	tx.PoolID = p.ID
	insert(t, s, tx)

	must(t, s.DeletePool(ctx, p.ID))
	_, err := s.PoolByID(ctx, p.ID)
	wantCode(t, err, engine.CodeNotFound, "PoolByID of a deleted pool")
	if list, err := s.ListPools(ctx, u.ID); err != nil || len(list) != 0 {
		t.Errorf("ListPools after delete = %v, %v", list, err)
	}
	_, err = s.PoolLoads(ctx, p.ID)
	wantCode(t, err, engine.CodeNotFound, "PoolLoads of a deleted pool")
	wantCode(t, s.DeletePool(ctx, p.ID), engine.CodeNotFound, "DeletePool again")
	wantCode(t, s.ResizePool(ctx, p.ID, 3, poolMembers(t, u.ID, 3, 1, nil)), engine.CodeNotFound, "ResizePool of a deleted pool")
	for _, m := range members {
		if _, err := s.AccountByID(ctx, m.ID); err != nil {
			t.Errorf("member account after delete: %v", err)
		}
	}
	if got := get(t, s, tx.ID); got.PoolID != p.ID {
		t.Errorf("transaction's pool after delete = %q, want %s", got.PoolID, p.ID)
	}
	page, _, err := s.ListTransactions(ctx, engine.TxFilter{Owner: u.ID, Pool: p.ID, Limit: 10})
	must(t, err)
	if len(page) != 1 || page[0].ID != tx.ID {
		t.Errorf("ListTransactions of a deleted pool = %v", txIDs(page))
	}
	// The members may join another pool.
	q := &engine.Pool{ID: newID(), Owner: u.ID, Name: "next", Network: "dev", Size: 1, Created: at(4)}
	must(t, s.CreatePool(ctx, q, poolMembers(t, u.ID, 4, 1, nil)))
}

// poolTx returns a new transaction of member m through pool p, of value v
// (nil: none) of asset, in status st.
func poolTx(u *engine.User, m *engine.Account, p *engine.Pool, sec int, asset string, v int64, st engine.TxStatus) *engine.Transaction {
	tx := fixture{user: u, account: m}.tx(p.Network, sec)
	tx.PoolID, tx.PoolAsset, tx.Status = p.ID, asset, st
	if v >= 0 {
		tx.PoolValue = big.NewInt(v)
	}
	return tx
}

// loadOf returns the load of member id in loads.
func loadOf(t *testing.T, loads []engine.PoolMemberLoad, id string) engine.PoolMemberLoad {
	t.Helper()
	for _, l := range loads {
		if l.AccountID == id {
			return l
		}
	}
	t.Fatalf("no load of member %s in %+v", id, loads)
	return engine.PoolMemberLoad{}
}

// wantLoad fails unless member id's load is queued, inFlight and reserved.
func wantLoad(t *testing.T, what string, loads []engine.PoolMemberLoad, id string, queued, inFlight int, reserved map[string]*big.Int) {
	t.Helper()
	l := loadOf(t, loads, id)
	if l.Queued != queued || l.InFlight != inFlight {
		t.Errorf("%s: queued %d in flight %d, want %d and %d", what, l.Queued, l.InFlight, queued, inFlight)
	}
	if len(l.Reserved) != len(reserved) {
		t.Errorf("%s: reserved %v, want %v", what, l.Reserved, reserved)
	}
	for asset, v := range reserved {
		if l.Reserved[asset] == nil || l.Reserved[asset].Cmp(v) != 0 {
			t.Errorf("%s: reserved %s = %v, want %v", what, asset, l.Reserved[asset], v)
		}
	}
}

// testPoolLoads: counts and sums per member follow the status changes
// (new and waiting are queued, submitted in flight, ended nothing); the
// sums are exact for amounts near 2^256; the treasury's top-ups and
// another pool's transactions do not count.
func testPoolLoads(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	treasury := newAccount(t, s, u.ID, 0, true)
	p, m := newPool(t, s, u.ID, treasury.ID, 1, 3)
	other, om := newPool(t, s, u.ID, "", 1, 1)
	const token = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"

	loads, err := s.PoolLoads(ctx, p.ID)
	must(t, err)
	if len(loads) != 3 || loads[0].AccountID != m[0].ID || loads[2].AccountID != m[2].ID {
		t.Fatalf("loads of an idle pool = %+v", loads)
	}
	wantLoad(t, "idle", loads, m[1].ID, 0, 0, nil)

	huge := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(1)) // 2^255-1: two of them exceed 2^256-1
	a := poolTx(u, m[0], p, 2, "ETH", 5, engine.StatusNew)
	b := poolTx(u, m[0], p, 3, "ETH", 7, engine.StatusNew)
	c := poolTx(u, m[0], p, 4, token, -1, engine.StatusWaiting)
	c.PoolValue = huge
	d := poolTx(u, m[0], p, 5, token, -1, engine.StatusNew)
	d.PoolValue = huge
	e := poolTx(u, m[1], p, 6, "", -1, engine.StatusNew) // gas only
	topUp := poolTx(u, treasury, p, 7, "ETH", 1000, engine.StatusNew)
	topUp.OrderingKey = engine.TopUpKeyPrefix + m[0].ID + ":ETH"
	elsewhere := poolTx(u, om[0], other, 8, "ETH", 9, engine.StatusNew)
	insert(t, s, a, b, c, d, e, topUp, elsewhere)

	twoHuge := new(big.Int).Mul(huge, big.NewInt(2))
	loads, err = s.PoolLoads(ctx, p.ID)
	must(t, err)
	if len(loads) != 3 {
		t.Fatalf("loads = %+v, want the 3 members only", loads)
	}
	wantLoad(t, "queued", loads, m[0].ID, 4, 0, map[string]*big.Int{"ETH": big.NewInt(12), token: twoHuge})
	wantLoad(t, "queued", loads, m[1].ID, 1, 0, nil)
	wantLoad(t, "queued", loads, m[2].ID, 0, 0, nil)

	submit(t, s, a, 0)
	loads, err = s.PoolLoads(ctx, p.ID)
	must(t, err)
	wantLoad(t, "a submitted", loads, m[0].ID, 3, 1, map[string]*big.Int{"ETH": big.NewInt(12), token: twoHuge})

	must(t, s.MarkMined(ctx, []engine.Mined{{ID: a.ID, Status: engine.StatusCompleted, BlockNumber: 1, Ended: at(9)}}))
	loads, err = s.PoolLoads(ctx, p.ID)
	must(t, err)
	wantLoad(t, "a completed", loads, m[0].ID, 3, 0, map[string]*big.Int{"ETH": big.NewInt(7), token: twoHuge})

	// A member that left no longer has a load.
	must(t, s.ResizePool(ctx, p.ID, 1, nil))
	loads, err = s.PoolLoads(ctx, p.ID)
	must(t, err)
	if len(loads) != 1 || loads[0].AccountID != m[0].ID {
		t.Errorf("loads after resizing down to 1 = %+v", loads)
	}
	_, err = s.PoolLoads(ctx, newID())
	wantCode(t, err, engine.CodeNotFound, "PoolLoads of an unknown pool")
}

// testPoolPendingAndKeys: PendingPools lists the live pools of the
// network with a non-ended transaction; OrderingKeyMember finds the member
// of a key's latest non-ended transaction, none once they all ended.
func testPoolPendingAndKeys(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	p, m := newPool(t, s, u.ID, "", 1, 2)
	idle, _ := newPool(t, s, u.ID, "", 2, 1)
	q, qm := newPool(t, s, u.ID, "", 3, 1)
	_ = idle

	if ids, err := s.PendingPools(ctx, "dev"); err != nil || len(ids) != 0 {
		t.Fatalf("PendingPools before any transaction = %v, %v", ids, err)
	}
	k1 := poolTx(u, m[1], p, 4, "ETH", 1, engine.StatusNew)
	k1.OrderingKey = "customer-1"
	k2 := poolTx(u, m[1], p, 5, "ETH", 1, engine.StatusNew)
	k2.OrderingKey = "customer-1"
	done := poolTx(u, qm[0], q, 6, "ETH", 1, engine.StatusCompleted)
	done.OrderingKey = "customer-2"
	insert(t, s, k1, k2, done)

	ids, err := s.PendingPools(ctx, "dev")
	must(t, err)
	if !reflect.DeepEqual(ids, []string{p.ID}) {
		t.Errorf("PendingPools = %v, want [%s]", ids, p.ID)
	}
	if ids, err := s.PendingPools(ctx, "other"); err != nil || len(ids) != 0 {
		t.Errorf("PendingPools of another network = %v, %v", ids, err)
	}

	wantKey := func(what, pool, key, member string) {
		t.Helper()
		got, ok, err := s.OrderingKeyMember(ctx, pool, key)
		must(t, err)
		if ok != (member != "") || got != member {
			t.Errorf("%s: OrderingKeyMember = %q, %v; want %q", what, got, ok, member)
		}
	}
	wantKey("pending key", p.ID, "customer-1", m[1].ID)
	wantKey("key of ended transactions", q.ID, "customer-2", "")
	wantKey("key of another pool", q.ID, "customer-1", "")
	wantKey("unknown key", p.ID, "customer-3", "")

	// The latest pending row decides: k2 moved (by hand here) to m[0].
	k3 := poolTx(u, m[0], p, 7, "ETH", 1, engine.StatusWaiting)
	k3.OrderingKey = "customer-1"
	insert(t, s, k3)
	wantKey("latest pending", p.ID, "customer-1", m[0].ID)

	for _, tx := range []*engine.Transaction{k1, k2, k3} {
		_, err := s.CancelTransaction(ctx, tx.ID, &engine.TxError{Code: engine.TxCancelled, Message: "cancelled"}, at(8))
		must(t, err)
	}
	wantKey("all ended", p.ID, "customer-1", "")
	if ids, err := s.PendingPools(ctx, "dev"); err != nil || len(ids) != 0 {
		t.Errorf("PendingPools after every transaction ended = %v, %v", ids, err)
	}
}

// testPoolFilter: ListTransactions with TxFilter.Pool lists the pool's
// transactions only, pages included.
func testPoolFilter(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	p, m := newPool(t, s, u.ID, "", 1, 1)
	f := fixture{user: u, account: m[0]}
	var want []string
	for i := 0; i < 3; i++ {
		tx := poolTx(u, m[0], p, 10+i, "ETH", 1, engine.StatusNew)
		insert(t, s, tx, f.tx("dev", 10+i))
		want = append(want, tx.ID)
	}
	first, next, err := s.ListTransactions(ctx, engine.TxFilter{Owner: u.ID, Pool: p.ID, Ascending: true, Limit: 2})
	must(t, err)
	if next == nil {
		t.Fatalf("no cursor after the first page of 3 with limit 2")
	}
	rest, _, err := s.ListTransactions(ctx, engine.TxFilter{Owner: u.ID, Pool: p.ID, Ascending: true, Limit: 2, After: next})
	must(t, err)
	if got := append(txIDs(first), txIDs(rest)...); !reflect.DeepEqual(got, want) {
		t.Errorf("ListTransactions of the pool = %v, want %v", got, want)
	}
	all, _, err := s.ListTransactions(ctx, engine.TxFilter{Owner: u.ID, Limit: 10})
	must(t, err)
	if len(all) != 6 {
		t.Errorf("ListTransactions without a pool = %d, want 6", len(all))
	}
}
