package storetest

import (
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

func idem(user, key, hash string, created time.Time) *engine.IdempotencyRecord {
	return &engine.IdempotencyRecord{UserID: user, Key: key, RequestHash: hash, Status: 201, Body: []byte("sealed " + key), Created: created}
}

// testIdempotency: records are stored with what they create, read back,
// unique per (user, key) while live, replaced once expired, and a conflict
// rolls back the creation it came with.
func testIdempotency(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	_, err := s.IdempotencyRecord(ctx, u.ID, "k1")
	wantCode(t, err, engine.CodeNotFound, "IdempotencyRecord before any")

	a := &engine.Account{ID: newID(), Owner: u.ID, Address: randomAddress(t), EncryptedKey: []byte("k"), Created: at(1)}
	a.Idempotency = idem(u.ID, "k1", "h1", at(1))
	must(t, s.CreateAccount(ctx, a))
	got, err := s.IdempotencyRecord(ctx, u.ID, "k1")
	must(t, err)
	if got.RequestHash != "h1" || got.Status != 201 || string(got.Body) != "sealed k1" || got.Key != "k1" || got.UserID != u.ID {
		t.Fatalf("record = %+v", got)
	}
	wantTime(t, "Created", got.Created, at(1))

	// The same key again while live: conflict, and the account is not created.
	b := &engine.Account{ID: newID(), Owner: u.ID, Address: randomAddress(t), EncryptedKey: []byte("k"), Created: at(2)}
	b.Idempotency = idem(u.ID, "k1", "h2", at(2))
	wantCode(t, s.CreateAccount(ctx, b), engine.CodeConflict, "CreateAccount with a live key")
	_, err = s.AccountByID(ctx, b.ID)
	wantCode(t, err, engine.CodeNotFound, "account of the conflicting request")

	// Another user may use the same key.
	v := newUser(t, s, 0)
	w := &engine.User{ID: newID(), Owner: v.ID, CallbackSecret: []byte("s"), Created: at(3), Idempotency: idem(v.ID, "k1", "h3", at(3))}
	must(t, s.CreateUser(ctx, w, nil, nil))

	// A transaction batch with a live key fails as a whole.
	f := fixture{user: u, account: a}
	t1, t2 := f.tx("dev", 4), f.tx("dev", 4)
	t2.Idempotency = idem(u.ID, "k1", "h4", at(4))
	wantCode(t, s.InsertTransactions(ctx, []*engine.Transaction{t1, t2}), engine.CodeConflict, "InsertTransactions with a live key")
	_, err = s.TransactionByID(ctx, t1.ID)
	wantCode(t, err, engine.CodeNotFound, "transaction of the failed batch")

	// Tokens and contracts carry records too.
	must(t, s.AddToken(ctx, u.ID, keystore.HashToken("tok-"+newID()), idem(u.ID, "k2", "h5", at(5))))
	c := &engine.Contract{ID: newID(), Owner: u.ID, Name: "c", Network: "dev", Address: randomAddress(t), Created: at(6),
		Idempotency: idem(u.ID, "k3", "h6", at(6))}
	must(t, s.CreateContract(ctx, c))
	wantCode(t, s.AddToken(ctx, u.ID, keystore.HashToken("tok-"+newID()), idem(u.ID, "k3", "h7", at(7))), engine.CodeConflict, "AddToken with a live key")

	// Once expired, the key is free again and the new record replaces it.
	later := at(1).Add(engine.IdempotencyTTL + time.Second)
	t3 := f.tx("dev", 8)
	t3.Idempotency = idem(u.ID, "k1", "h8", later)
	insert(t, s, t3)
	got, err = s.IdempotencyRecord(ctx, u.ID, "k1")
	must(t, err)
	if got.RequestHash != "h8" {
		t.Errorf("after expiry: record hash %s, want h8", got.RequestHash)
	}

	// One key twice in a batch: conflict, nothing written.
	t4, t5 := f.tx("dev", 9), f.tx("dev", 9)
	t4.Idempotency, t5.Idempotency = idem(u.ID, "k9", "h9", later), idem(u.ID, "k9", "h10", later)
	wantCode(t, s.InsertTransactions(ctx, []*engine.Transaction{t4, t5}), engine.CodeConflict, "InsertTransactions with one key twice")
	_, err = s.IdempotencyRecord(ctx, u.ID, "k9")
	wantCode(t, err, engine.CodeNotFound, "record of the batch with one key twice")

	// A live key among new ones fails the batch as a whole; once it and an
	// older one have expired, a batch of expired and new keys is written
	// whole and replaces the expired records.
	must(t, s.CreateContract(ctx, &engine.Contract{ID: newID(), Owner: u.ID, Name: "c2", Network: "dev", Address: randomAddress(t), Created: at(10),
		Idempotency: idem(u.ID, "k10", "h11", at(10))}))
	t6, t7, t8 := f.tx("dev", 11), f.tx("dev", 11), f.tx("dev", 11)
	t6.Idempotency, t7.Idempotency = idem(u.ID, "k11", "h12", later), idem(u.ID, "k1", "h13", later) // k1: h8, live
	wantCode(t, s.InsertTransactions(ctx, []*engine.Transaction{t6, t7}), engine.CodeConflict, "InsertTransactions with a live key among new ones")
	_, err = s.IdempotencyRecord(ctx, u.ID, "k11")
	wantCode(t, err, engine.CodeNotFound, "new key of the failed batch")
	muchLater := later.Add(engine.IdempotencyTTL) // k1's h8 and k10's h11 have expired
	t6.Idempotency.Created, t7.Idempotency.Created = muchLater, muchLater
	t8.Idempotency = idem(u.ID, "k10", "h14", muchLater)
	insert(t, s, t6, t7, t8)
	for key, want := range map[string]string{"k11": "h12", "k1": "h13", "k10": "h14"} {
		if got, err = s.IdempotencyRecord(ctx, u.ID, key); err != nil || got.RequestHash != want {
			t.Errorf("record of %s after the batch: %+v, %v; want %s", key, got, err, want)
		}
	}

	// IdempotencyRecords: IdempotencyRecord of each key that exists, in one
	// read; an unknown key and another user's key (v has a k1 too) absent.
	recs, err := s.IdempotencyRecords(ctx, u.ID, []string{"k1", "k2", "k3", "k9", "k11", "no-such-key"})
	must(t, err)
	for _, key := range []string{"k1", "k2", "k3", "k11"} {
		one, err := s.IdempotencyRecord(ctx, u.ID, key)
		must(t, err)
		got := recs[key]
		if got == nil || got.UserID != u.ID || got.Key != key || got.RequestHash != one.RequestHash ||
			got.Status != one.Status || string(got.Body) != string(one.Body) || !got.Created.Equal(one.Created) {
			t.Errorf("IdempotencyRecords[%s] = %+v, IdempotencyRecord = %+v", key, got, one)
		}
	}
	if len(recs) != 4 {
		t.Errorf("IdempotencyRecords = %d records, want the 4 of u's keys that exist", len(recs))
	}
	if recs, err = s.IdempotencyRecords(ctx, v.ID, []string{"k1", "k2"}); err != nil || len(recs) != 1 || recs["k1"].RequestHash != "h3" {
		t.Errorf("IdempotencyRecords of v = %v, %v; want k1 only, with v's hash h3", recs, err)
	}
}

func testUserLimits(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	got, err := s.UserByID(ctx, u.ID)
	must(t, err)
	if got.Limits != nil {
		t.Fatalf("new user has limits %+v", got.Limits)
	}
	must(t, s.SetUserLimits(ctx, u.ID, &engine.RateLimits{PerSecond: 50, PerHour: 100000}))
	got, err = s.UserByID(ctx, u.ID)
	must(t, err)
	if got.Limits == nil || *got.Limits != (engine.RateLimits{PerSecond: 50, PerHour: 100000}) {
		t.Fatalf("limits = %+v", got.Limits)
	}
	must(t, s.AddToken(ctx, u.ID, keystore.HashToken("lim"), nil))
	byTok, err := s.UserByTokenHash(ctx, keystore.HashToken("lim"))
	must(t, err)
	if byTok.Limits == nil || byTok.Limits.PerSecond != 50 {
		t.Errorf("by token: limits = %+v", byTok.Limits)
	}
	must(t, s.SetUserLimits(ctx, u.ID, nil))
	got, err = s.UserByID(ctx, u.ID)
	must(t, err)
	if got.Limits != nil {
		t.Errorf("after reset: limits = %+v", got.Limits)
	}
	wantCode(t, s.SetUserLimits(ctx, newID(), &engine.RateLimits{PerSecond: 1, PerHour: 1}), engine.CodeNotFound, "SetUserLimits of nobody")
}

func xfer(t *testing.T, token common.Address, block uint64, idx uint, from, to common.Address, v int64) engine.TokenTransfer {
	return engine.TokenTransfer{
		Network: "dev", Token: token, BlockNumber: block, BlockHash: common.BigToHash(big.NewInt(int64(block))),
		TxHash: randomHash(t), LogIndex: idx, From: from, To: to, Value: big.NewInt(v),
	}
}

func testTransferIndex(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	tok, nft := randomAddress(t), randomAddress(t)
	a, b, c := randomAddress(t), randomAddress(t), randomAddress(t)
	streams, err := s.IndexStreams(ctx, "dev")
	must(t, err)
	if len(streams) != 0 {
		t.Fatalf("streams = %v", streams)
	}
	batch1 := []engine.TokenTransfer{
		xfer(t, tok, 10, 0, a, b, 1), xfer(t, tok, 10, 3, b, c, 2), xfer(t, tok, 12, 1, a, c, 3),
		xfer(t, nft, 11, 0, common.Address{}, a, 7), xfer(t, nft, 11, 1, common.Address{}, b, 8),
	}
	must(t, s.SaveIndex(ctx, engine.IndexBatch{
		Network: "dev", Streams: []common.Address{tok, nft}, Next: 13, Transfers: batch1,
		Blocks: []engine.IndexedBlock{{Number: 10, Hash: common.HexToHash("0x10")}, {Number: 12, Hash: common.HexToHash("0x12")}}, KeepBlocks: 100,
	}))
	// Saving the same transfers again stores them once.
	must(t, s.SaveIndex(ctx, engine.IndexBatch{Network: "dev", Streams: []common.Address{tok}, Next: 13, Transfers: batch1[:1]}))
	batch2 := []engine.TokenTransfer{xfer(t, tok, 14, 0, c, a, 4), xfer(t, nft, 14, 1, a, c, 7)}
	must(t, s.SaveIndex(ctx, engine.IndexBatch{
		Network: "dev", Streams: []common.Address{tok, nft}, Next: 15, Transfers: batch2,
		Blocks: []engine.IndexedBlock{{Number: 14, Hash: common.HexToHash("0x14")}}, KeepBlocks: 100,
	}))
	streams, err = s.IndexStreams(ctx, "dev")
	must(t, err)
	if streams[tok] != 15 || streams[nft] != 15 || len(streams) != 2 {
		t.Fatalf("streams = %v", streams)
	}
	blocks, err := s.IndexedBlocks(ctx, "dev", 2)
	must(t, err)
	if len(blocks) != 2 || blocks[0].Number != 14 || blocks[1].Number != 12 || blocks[0].Hash != common.HexToHash("0x14") {
		t.Fatalf("blocks = %+v", blocks)
	}

	values := func(f engine.TransferFilter) []int64 {
		t.Helper()
		var out []int64
		for {
			page, next, err := s.ListTransfers(ctx, f)
			must(t, err)
			for _, x := range page {
				out = append(out, x.Value.Int64())
			}
			if next == nil {
				return out
			}
			f.After = next
		}
	}
	all := engine.TransferFilter{Network: "dev", Token: tok, Limit: 2}
	if got := values(all); !slices.Equal(got, []int64{4, 3, 2, 1}) {
		t.Errorf("all, newest first, pages of 2: %v", got)
	}
	page, _, err := s.ListTransfers(ctx, engine.TransferFilter{Network: "dev", Token: tok, Limit: 10})
	must(t, err)
	if len(page) != 4 || page[0].From != c || page[0].To != a || page[0].BlockNumber != 14 || page[0].TxHash != batch2[0].TxHash || page[0].BlockHash != batch2[0].BlockHash {
		t.Errorf("first row = %+v", page[0])
	}
	for _, tt := range []struct {
		name string
		f    engine.TransferFilter
		want []int64
	}{
		{"from a", engine.TransferFilter{From: &a}, []int64{3, 1}},
		{"to c", engine.TransferFilter{To: &c}, []int64{3, 2}},
		{"address b", engine.TransferFilter{Address: &b}, []int64{2, 1}},
		{"blocks 11-13", engine.TransferFilter{FromBlock: ptr(uint64(11)), ToBlock: ptr(uint64(13))}, []int64{3}},
		{"after 12/1", engine.TransferFilter{After: &engine.TransferCursor{BlockNumber: 12, LogIndex: 1}}, []int64{2, 1}},
		{"after 10/3", engine.TransferFilter{After: &engine.TransferCursor{BlockNumber: 10, LogIndex: 3}}, []int64{1}},
	} {
		tt.f.Network, tt.f.Token, tt.f.Limit = "dev", tok, 1
		if got := values(tt.f); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}

	owners, err := s.NFTOwners(ctx, "dev", []common.Address{nft})
	must(t, err)
	want := []common.Address{b, c}
	slices.SortFunc(want, func(x, y common.Address) int { return x.Cmp(y) })
	slices.SortFunc(owners, func(x, y common.Address) int { return x.Cmp(y) })
	if !slices.Equal(owners, want) {
		t.Errorf("NFT owners = %v, want %v", owners, want)
	}

	// A reorg from block 12 drops the transfers and hashes of 12 and later
	// and moves the streams back.
	must(t, s.RewindIndex(ctx, "dev", 12))
	if got := values(all); !slices.Equal(got, []int64{2, 1}) {
		t.Errorf("after rewind: %v", got)
	}
	streams, err = s.IndexStreams(ctx, "dev")
	must(t, err)
	if streams[tok] != 12 || streams[nft] != 12 {
		t.Errorf("streams after rewind = %v", streams)
	}
	blocks, err = s.IndexedBlocks(ctx, "dev", 10)
	must(t, err)
	if len(blocks) != 1 || blocks[0].Number != 10 {
		t.Errorf("blocks after rewind = %+v", blocks)
	}
	owners, err = s.NFTOwners(ctx, "dev", []common.Address{nft})
	must(t, err)
	if len(owners) != 2 || !slices.Contains(owners, a) {
		t.Errorf("NFT owners after rewind = %v", owners)
	}
	// Pruning keeps the last KeepBlocks hashes.
	must(t, s.SaveIndex(ctx, engine.IndexBatch{Network: "dev", Streams: []common.Address{tok}, Next: 120,
		Blocks: []engine.IndexedBlock{{Number: 119, Hash: common.HexToHash("0x119")}}, KeepBlocks: 100}))
	blocks, err = s.IndexedBlocks(ctx, "dev", 10)
	must(t, err)
	if len(blocks) != 1 || blocks[0].Number != 119 {
		t.Errorf("blocks after pruning = %+v", blocks)
	}
	other, _, err := s.ListTransfers(ctx, engine.TransferFilter{Network: "other", Token: tok, Limit: 5})
	must(t, err)
	if len(other) != 0 {
		t.Errorf("other network: %v", other)
	}
}
