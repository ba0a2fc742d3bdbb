package provision

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlite"
)

func TestEnsureOperatorKeepsOrReissuesToken(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sealer, err := engine.NewKeySealer(make([]byte, engine.MasterKeySize))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "operator.token")

	first, err := EnsureOperator(ctx, store, sealer, path)
	if err != nil {
		t.Fatal(err)
	}
	if !first.User.Operator || !first.Account.Default || first.Account.Owner != first.User.ID {
		t.Fatalf("operator = %+v, account = %+v", first.User, first.Account)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", fi, err)
	}
	// Again: same user, account and token.
	again, err := EnsureOperator(ctx, store, sealer, path)
	if err != nil || again.User.ID != first.User.ID || again.Token != first.Token || again.Account.Address != first.Account.Address {
		t.Fatalf("second call: %+v, %v", again, err)
	}
	// A token file that no longer authenticates gets a new, valid token.
	if err := os.WriteFile(path, []byte("txe_bogus\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh, err := EnsureOperator(ctx, store, sealer, path)
	if err != nil || fresh.User.ID != first.User.ID || fresh.Token == "txe_bogus" {
		t.Fatalf("after a bad token file: %+v, %v", fresh, err)
	}
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != fresh.Token {
		t.Fatalf("token file = %q, want the new token", b)
	}
	if u, err := store.UserByTokenHash(ctx, engine.HashToken(fresh.Token)); err != nil || u.ID != first.User.ID {
		t.Fatalf("new token authenticates %v, %v", u, err)
	}
}
