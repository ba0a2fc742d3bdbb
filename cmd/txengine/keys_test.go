package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine/keystore"
)

// dataDirConfig is the embedded default's configuration on dir.
func dataDirConfig(dir string) config.Config {
	cfg := config.Default()
	cfg.DataDir = dir
	return cfg
}

// TestNewDataDirKey: the new key becomes master.key, the old one the first
// previous key (both files 0600); the keyring opens what the old key
// sealed and seals under the new one.
func TestNewDataDirKey(t *testing.T) {
	dir := t.TempDir()
	cfg := dataDirConfig(dir)
	before, err := loadSealer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := before.SealCallbackSecret("u", "s")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := newDataDirKey(cfg, &out); err != nil {
		t.Fatal(err)
	}
	if err := newDataDirKey(cfg, &out); err != nil {
		t.Fatal(err)
	}
	after, err := loadSealer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ids := after.KeyIDs()
	if len(ids) != 3 || ids[2] != before.CurrentKeyID() || ids[0] == before.CurrentKeyID() {
		t.Fatalf("key ids after two new keys: %v (first %s)", ids, before.CurrentKeyID())
	}
	if got, err := after.OpenCallbackSecret("u", sealed); err != nil || got != "s" {
		t.Fatalf("a value of the first key opens as %q, %v", got, err)
	}
	for _, f := range []string{masterKeyFile, previousKeysFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, st.Mode(), err)
		}
	}
	// The output names key ids, never keys.
	raw, err := os.ReadFile(filepath.Join(dir, previousKeysFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Fields(string(raw)) {
		if strings.Contains(out.String(), line) {
			t.Errorf("output shows a key: %s", out.String())
		}
	}
	// Configured keys: --new refuses and says what to do.
	cfg.MasterKey = strings.Repeat("ab", 32)
	if err := newDataDirKey(cfg, io.Discard); err == nil || !strings.Contains(err.Error(), "previousMasterKeys") {
		t.Errorf("--new with a configured masterKey: %v", err)
	}
}

// TestReadKeyLinesNamesLineNotKey: a bad line is named by its number, not
// shown.
func TestReadKeyLinesNamesLineNotKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), previousKeysFile)
	good := hex.EncodeToString(bytes.Repeat([]byte{1}, 32))
	bad := strings.Repeat("c", 63)
	if err := os.WriteFile(path, []byte("# old keys\n"+good+"\n\n"+bad+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := readKeyLines(path)
	if err == nil || !strings.Contains(err.Error(), "line 4") || strings.Contains(err.Error(), bad) {
		t.Fatalf("err = %v", err)
	}
	if err := os.WriteFile(path, []byte("# old keys\n"+good+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := readKeyLines(path)
	if err != nil || len(keys) != 1 || keys[0][0] != 1 {
		t.Fatalf("keys %x, %v", keys, err)
	}
}

// TestKeyringWatcher: the watcher adopts a new master.key at its next poll
// and advertises it in master.key.in-use only after the grace period.
func TestKeyringWatcher(t *testing.T) {
	if testing.Short() {
		t.Skip("polls the data dir for seconds")
	}
	dir := t.TempDir()
	cfg := dataDirConfig(dir)
	cfg.HTTP.RequestTimeout = time.Second
	sealer, err := loadSealer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := sealer.CurrentKeyID()
	w, err := startKeyringWatcher(context.Background(), cfg, sealer, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	inUse := func() string {
		raw, _ := os.ReadFile(filepath.Join(dir, inUseFile))
		return strings.TrimSpace(string(raw))
	}
	if inUse() != old.String() {
		t.Fatalf("in use %q, want %s", inUse(), old)
	}
	if err := newDataDirKey(cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * keyringPoll)
	for sealer.CurrentKeyID() == old {
		if time.Now().After(deadline) {
			t.Fatal("the new key was not adopted")
		}
		time.Sleep(50 * time.Millisecond)
	}
	adopted := time.Now()
	if inUse() != old.String() {
		t.Errorf("the new key is advertised at once, before the grace period")
	}
	awaited := make(chan error, 1)
	go func() { awaited <- awaitAdoption(context.Background(), dir, sealer.CurrentKeyID(), io.Discard) }()
	select {
	case err := <-awaited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(4 * keyringPoll):
		t.Fatal("awaitAdoption did not return")
	}
	if since := time.Since(adopted); since < cfg.HTTP.RequestTimeout {
		t.Errorf("awaitAdoption returned %s after the adoption, before the request timeout", since)
	}
	if inUse() != sealer.CurrentKeyID().String() {
		t.Errorf("in use %q, want the new key %s", inUse(), sealer.CurrentKeyID())
	}
	w.Close()
	if _, err := os.Stat(filepath.Join(dir, inUseFile)); !os.IsNotExist(err) {
		t.Errorf("in-use file left after Close: %v", err)
	}
	// No service: awaitAdoption returns at once.
	if err := awaitAdoption(context.Background(), dir, keystore.KeyID{}, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// TestKeyringWatcherReloadsForUnknownKey: a value sealed by another
// process under a key the service has not read yet opens at once (the
// sealer reads the files), without waiting for the poll.
func TestKeyringWatcherReloadsForUnknownKey(t *testing.T) {
	dir := t.TempDir()
	cfg := dataDirConfig(dir)
	sealer, err := loadSealer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := startKeyringWatcher(context.Background(), cfg, sealer, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := newDataDirKey(cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	other, err := loadSealer(cfg) // e.g. `txengine users create` run now
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := other.SealCallbackSecret("u", "s")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sealer.OpenCallbackSecret("u", sealed); err != nil || got != "s" {
		t.Fatalf("open a value under the new key = %q, %v", got, err)
	}
	if sealer.CurrentKeyID() != other.CurrentKeyID() {
		t.Fatal("the service did not adopt the new key")
	}
}

// TestKeyringWatcherKeepsKeysWhenFileGoes: a master.key removed while the
// service runs is not made up again; the keys in use stay.
func TestKeyringWatcherKeepsKeysWhenFileGoes(t *testing.T) {
	dir := t.TempDir()
	cfg := dataDirConfig(dir)
	sealer, err := loadSealer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := sealer.CurrentKeyID()
	w := &keyringWatcher{cfg: cfg, sealer: sealer, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := os.Remove(filepath.Join(dir, masterKeyFile)); err != nil {
		t.Fatal(err)
	}
	if err := w.reload(); err == nil {
		t.Fatal("reload without master.key: no error")
	}
	if _, err := os.Stat(filepath.Join(dir, masterKeyFile)); !os.IsNotExist(err) {
		t.Fatalf("reload wrote a master.key: %v", err)
	}
	if sealer.CurrentKeyID() != before {
		t.Fatal("the keys in use changed")
	}
}
