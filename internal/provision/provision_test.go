package provision

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/persistence/sqlite"
)

// openSealed opens a store in dir (closed when t ends) and a sealer of the
// all-zero master key.
func openSealed(t *testing.T, dir string) (*sqlite.Store, *keystore.KeySealer) {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	sealer, err := keystore.NewKeySealer(make([]byte, keystore.MasterKeySize))
	if err != nil {
		t.Fatal(err)
	}
	return store, sealer
}

func TestEnsureOperatorKeepsOrReissuesToken(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, sealer := openSealed(t, dir)
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
	// Only a token issued by the call is Created (the banner prints it then only).
	if !first.Created || again.Created {
		t.Fatalf("Created: first %v, again %v; want true, false", first.Created, again.Created)
	}
	// A token file that no longer authenticates gets a new, valid token.
	if err := os.WriteFile(path, []byte("txe_bogus\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh, err := EnsureOperator(ctx, store, sealer, path)
	if err != nil || fresh.User.ID != first.User.ID || fresh.Token == "txe_bogus" || !fresh.Created {
		t.Fatalf("after a bad token file: %+v, %v", fresh, err)
	}
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != fresh.Token {
		t.Fatalf("token file = %q, want the new token", b)
	}
	if u, err := store.UserByTokenHash(ctx, keystore.HashToken(fresh.Token)); err != nil || u.ID != first.User.ID {
		t.Fatalf("new token authenticates %v, %v", u, err)
	}
}

// TestEnsureOperatorRefusesAnotherMasterKey checks that a store opened with
// a master key other than the one it was created with is refused before
// anything is written, with a message that names the master key settings
// and not the key.
func TestEnsureOperatorRefusesAnotherMasterKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	right, err := keystore.NewKeySealer(make([]byte, keystore.MasterKeySize))
	if err != nil {
		t.Fatal(err)
	}
	otherKey := []byte(strings.Repeat("k", keystore.MasterKeySize))
	other, err := keystore.NewKeySealer(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "operator.token")
	if _, err := EnsureOperator(ctx, store, right, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err = EnsureOperator(ctx, store, other, path)
	if !errors.Is(err, ErrWrongMasterKey) || !strings.Contains(err.Error(), "TXENGINE_MASTER_KEY") {
		t.Fatalf("err = %v, want ErrWrongMasterKey naming the setting", err)
	}
	if strings.Contains(err.Error(), string(otherKey)) || strings.Contains(err.Error(), hex.EncodeToString(otherKey)) {
		t.Fatalf("error shows the key: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a token file was written with the wrong master key: %v", err)
	}
	if _, err := EnsureOperator(ctx, store, right, path); err != nil {
		t.Fatalf("right key after a refusal: %v", err)
	}
}

// TestEnsureOperatorCreatesMissingDataDir: with the store elsewhere
// (PostgreSQL) and the master key configured, nothing else creates the data
// dir; writing the operator token there creates it (mode 0700) instead of
// failing with "open .../operator.token.tmp: no such file or directory".
func TestEnsureOperatorCreatesMissingDataDir(t *testing.T) {
	store, sealer := openSealed(t, t.TempDir())
	dataDir := filepath.Join(t.TempDir(), "not", "yet")
	path := filepath.Join(dataDir, "operator.token")
	op, err := EnsureOperator(context.Background(), store, sealer, path)
	if err != nil {
		t.Fatalf("EnsureOperator into a missing data dir: %v", err)
	}
	raw, err := os.ReadFile(path)
	if err != nil || strings.TrimSpace(string(raw)) != op.Token {
		t.Fatalf("token file = %q, %v; want the operator's token", raw, err)
	}
	if fi, err := os.Stat(dataDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir: %v, %v; want mode 0700", fi, err)
	}
}
