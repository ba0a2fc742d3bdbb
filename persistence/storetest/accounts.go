package storetest

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

func wantAccount(t *testing.T, got, want *engine.Account) {
	t.Helper()
	if got.ID != want.ID || got.Owner != want.Owner || got.Address != want.Address ||
		got.Default != want.Default || !bytes.Equal(got.EncryptedKey, want.EncryptedKey) {
		t.Errorf("account = %+v, want %+v", got, want)
	}
	wantTime(t, "account.Created", got.Created, want.Created)
}

func testAccountRoundTrip(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	a := newAccount(t, s, u.ID, 1, true)
	b := newAccount(t, s, u.ID, 2, false)

	for _, want := range []*engine.Account{a, b} {
		got, err := s.AccountByID(ctx, want.ID)
		must(t, err)
		wantAccount(t, got, want)
		got, err = s.AccountByAddress(ctx, want.Address)
		must(t, err)
		wantAccount(t, got, want)
	}
	_, err := s.AccountByID(ctx, newID())
	wantCode(t, err, engine.CodeNotFound, "AccountByID unknown")
	_, err = s.AccountByAddress(ctx, randomAddress(t))
	wantCode(t, err, engine.CodeNotFound, "AccountByAddress unknown")
	_, err = s.DefaultAccount(ctx, newUser(t, s, 3).ID)
	wantCode(t, err, engine.CodeNotFound, "DefaultAccount of a user without accounts")
}

func testAccountConflict(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	a := newAccount(t, s, u.ID, 1, true)

	sameAddr := &engine.Account{ID: newID(), Owner: u.ID, Address: a.Address, EncryptedKey: []byte{1}, Created: at(2)}
	wantCode(t, s.CreateAccount(ctx, sameAddr), engine.CodeConflict, "CreateAccount with a taken address")
	sameID := &engine.Account{ID: a.ID, Owner: u.ID, Address: randomAddress(t), EncryptedKey: []byte{1}, Created: at(2)}
	wantCode(t, s.CreateAccount(ctx, sameID), engine.CodeConflict, "CreateAccount with a taken id")

	// A failed default account creation leaves the old default in place.
	dupDefault := &engine.Account{ID: newID(), Owner: u.ID, Address: a.Address, Default: true, EncryptedKey: []byte{1}, Created: at(3)}
	wantCode(t, s.CreateAccount(ctx, dupDefault), engine.CodeConflict, "CreateAccount default with a taken address")
	def, err := s.DefaultAccount(ctx, u.ID)
	must(t, err)
	wantAccount(t, def, a)

	orphan := &engine.Account{ID: newID(), Owner: newID(), Address: randomAddress(t), EncryptedKey: []byte{1}, Created: at(4)}
	if err := s.CreateAccount(ctx, orphan); err == nil {
		t.Fatalf("CreateAccount for an unknown owner succeeded")
	}
}

func testListAccounts(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	other := newUser(t, s, 0)

	got, err := s.ListAccounts(ctx, u.ID)
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("ListAccounts of a user without accounts = %d accounts", len(got))
	}

	// Created out of insertion order: the list is by creation time.
	c := newAccount(t, s, u.ID, 30, false)
	a := newAccount(t, s, u.ID, 10, true)
	newAccount(t, s, other.ID, 5, true)
	b := newAccount(t, s, u.ID, 20, false)

	got, err = s.ListAccounts(ctx, u.ID)
	must(t, err)
	want := []*engine.Account{a, b, c}
	if len(got) != len(want) {
		t.Fatalf("ListAccounts = %d accounts, want %d", len(got), len(want))
	}
	for i := range want {
		wantAccount(t, got[i], want[i])
	}
}

// defaults returns the ids of the owner's default accounts.
func defaults(t *testing.T, s engine.Store, owner string) []string {
	t.Helper()
	list, err := s.ListAccounts(ctxOf(t), owner)
	must(t, err)
	var ids []string
	for _, a := range list {
		if a.Default {
			ids = append(ids, a.ID)
		}
	}
	return ids
}

func wantDefault(t *testing.T, s engine.Store, owner, id string) {
	t.Helper()
	if got := defaults(t, s, owner); !slices.Equal(got, []string{id}) {
		t.Fatalf("default accounts of %s = %v, want only %s", owner, got, id)
	}
	def, err := s.DefaultAccount(ctxOf(t), owner)
	must(t, err)
	if def.ID != id || !def.Default {
		t.Fatalf("DefaultAccount = %s (default %v), want %s", def.ID, def.Default, id)
	}
}

func testDefaultAccountSwitching(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	other := newUser(t, s, 0)
	otherDef := newAccount(t, s, other.ID, 0, true)

	a := newAccount(t, s, u.ID, 1, true)
	wantDefault(t, s, u.ID, a.ID)
	b := newAccount(t, s, u.ID, 2, false)
	wantDefault(t, s, u.ID, a.ID)
	c := newAccount(t, s, u.ID, 3, true) // takes over
	wantDefault(t, s, u.ID, c.ID)

	must(t, s.SetDefaultAccount(ctx, u.ID, b.ID))
	wantDefault(t, s, u.ID, b.ID)
	must(t, s.SetDefaultAccount(ctx, u.ID, b.ID)) // idempotent
	wantDefault(t, s, u.ID, b.ID)
	must(t, s.SetDefaultAccount(ctx, u.ID, a.ID))
	wantDefault(t, s, u.ID, a.ID)

	// Other owners are untouched.
	wantDefault(t, s, other.ID, otherDef.ID)
}

func testSetDefaultAccountNotOwner(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	other := newUser(t, s, 0)
	mine := newAccount(t, s, u.ID, 1, true)
	theirs := newAccount(t, s, other.ID, 2, true)

	wantCode(t, s.SetDefaultAccount(ctx, u.ID, theirs.ID), engine.CodeNotFound, "SetDefaultAccount of another owner's account")
	wantCode(t, s.SetDefaultAccount(ctx, u.ID, newID()), engine.CodeNotFound, "SetDefaultAccount of an unknown account")
	wantDefault(t, s, u.ID, mine.ID)
	wantDefault(t, s, other.ID, theirs.ID)
}

func wantContract(t *testing.T, got, want *engine.Contract) {
	t.Helper()
	if got.ID != want.ID || got.Owner != want.Owner || got.Name != want.Name || got.Network != want.Network ||
		got.Address != want.Address || got.BWType != want.BWType || got.BWVer != want.BWVer || got.Block != want.Block {
		t.Errorf("contract = %+v, want %+v", got, want)
	}
	if !bytes.Equal(got.ABI, want.ABI) {
		t.Errorf("contract.ABI = %s, want %s", got.ABI, want.ABI)
	}
	wantTime(t, "contract.Created", got.Created, want.Created)
}

func newContract(t *testing.T, s engine.Store, owner, name, network, bwtype string, sec int) *engine.Contract {
	t.Helper()
	c := &engine.Contract{
		ID:      newID(),
		Owner:   owner,
		Name:    name,
		Network: network,
		Address: randomAddress(t),
		ABI:     json.RawMessage(`[{"type":"function","name":"transfer","inputs":[]}]`),
		BWType:  bwtype,
		Block:   uint64(1000 + sec),
		Created: at(sec),
	}
	if bwtype != "" {
		c.BWVer = "1"
	}
	must(t, s.CreateContract(ctxOf(t), c))
	return c
}

func testContractRoundTrip(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	c := &engine.Contract{
		ID:      newID(),
		Owner:   u.ID,
		Name:    "Token Ünïcode",
		Network: "dev",
		Address: common.HexToAddress("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"),
		ABI:     json.RawMessage(`[{"type":"event","name":"Transfer","anonymous":false,"inputs":[]}]`),
		BWType:  engine.TypeERC20Security,
		BWVer:   "2.1",
		Block:   1<<40 + 7,
		Created: at(1),
	}
	must(t, s.CreateContract(ctx, c))
	got, err := s.ContractByID(ctx, c.ID)
	must(t, err)
	wantContract(t, got, c)

	plain := newContract(t, s, u.ID, "plain", "dev", "", 2)
	got, err = s.ContractByID(ctx, plain.ID)
	must(t, err)
	wantContract(t, got, plain)

	_, err = s.ContractByID(ctx, newID())
	wantCode(t, err, engine.CodeNotFound, "ContractByID unknown")
	dup := *c
	wantCode(t, s.CreateContract(ctx, &dup), engine.CodeConflict, "CreateContract with a taken id")
}

func contractIDs(cs []*engine.Contract) []string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids
}

func testListContracts(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	v := newUser(t, s, 0)

	// Created out of insertion order: lists are by creation time.
	tokA := newContract(t, s, u.ID, "Alpha Token", "dev", engine.TypeERC20, 20)
	sec := newContract(t, s, u.ID, "Security", "dev", engine.TypeERC20Security, 10)
	nft := newContract(t, s, u.ID, "Art", "sepolia", engine.TypeERC721, 30)
	custom := newContract(t, s, u.ID, "alphabet soup", "sepolia", "", 40)
	vTok := newContract(t, s, v.ID, "ALPHA", "dev", engine.TypeERC20, 5)

	cases := []struct {
		name string
		f    engine.ContractFilter
		want []*engine.Contract
	}{
		{"all", engine.ContractFilter{}, []*engine.Contract{vTok, sec, tokA, nft, custom}},
		{"owner", engine.ContractFilter{Owner: u.ID}, []*engine.Contract{sec, tokA, nft, custom}},
		{"owner none", engine.ContractFilter{Owner: newID()}, nil},
		{"network", engine.ContractFilter{Network: "sepolia"}, []*engine.Contract{nft, custom}},
		{"owner and network", engine.ContractFilter{Owner: u.ID, Network: "dev"}, []*engine.Contract{sec, tokA}},
		{"text name any case", engine.ContractFilter{Text: "aLpHa"}, []*engine.Contract{vTok, tokA, custom}},
		{"text owner", engine.ContractFilter{Owner: u.ID, Text: "ALPHA"}, []*engine.Contract{tokA, custom}},
		{"text substring", engine.ContractFilter{Text: "curi"}, []*engine.Contract{sec}},
		{"text no match", engine.ContractFilter{Text: "zzz"}, nil},
		{"text like wildcard is literal", engine.ContractFilter{Text: "%"}, nil},
		{"text address lower", engine.ContractFilter{Text: strings.ToLower(nft.Address.Hex())}, []*engine.Contract{nft}},
		{"text address upper", engine.ContractFilter{Text: "0x" + strings.ToUpper(nft.Address.Hex()[2:])}, []*engine.Contract{nft}},
		{"text address part", engine.ContractFilter{Text: strings.ToUpper(sec.Address.Hex()[2:14])}, []*engine.Contract{sec}},
		{"types one", engine.ContractFilter{Types: []string{engine.TypeERC20}}, []*engine.Contract{vTok, tokA}},
		{"types tokens of owner", engine.ContractFilter{Owner: u.ID, Types: []string{engine.TypeERC20, engine.TypeERC20Security}}, []*engine.Contract{sec, tokA}},
		{"types none match", engine.ContractFilter{Types: []string{"nope"}}, nil},
		{"all filters", engine.ContractFilter{Owner: u.ID, Network: "dev", Text: "token", Types: []string{engine.TypeERC20}}, []*engine.Contract{tokA}},
	}
	for _, c := range cases {
		got, err := s.ListContracts(ctx, c.f)
		must(t, err)
		if g, w := contractIDs(got), contractIDs(c.want); !slices.Equal(g, w) {
			t.Errorf("%s: ListContracts = %v, want %v", c.name, g, w)
		}
	}
	got, err := s.ListContracts(ctx, engine.ContractFilter{Owner: u.ID, Network: "sepolia", Types: []string{engine.TypeERC721}})
	must(t, err)
	if len(got) != 1 {
		t.Fatalf("ListContracts erc721 = %d contracts", len(got))
	}
	wantContract(t, got[0], nft)
}
