package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/internal/provision"
)

// The data dir keyring of the embedded default (no masterKey configured).
const (
	// masterKeyFile holds the current master key (hex).
	masterKeyFile = "master.key"
	// previousKeysFile holds previous master keys, one hex key a line.
	previousKeysFile = "master.key.previous"
	// inUseFile is written by a running service: the id of the key it
	// seals under, rewritten every keyringPoll (its age says whether a
	// service runs).
	inUseFile = "master.key.in-use"
	// keyringPoll is how often serve reads the data dir keyring.
	keyringPoll = 2 * time.Second
	// adoptTimeout bounds the wait of `keys rotate` for the service to
	// adopt a new key (after a grace period of its request timeout).
	adoptTimeout = 5 * time.Minute
)

// keyringFiles reports whether the master keys come from the data dir
// (masterKey not configured).
func keyringFiles(cfg config.Config) bool { return cfg.MasterKey == "" }

// readKeyring returns the current and previous master keys: the configured
// ones, or <dataDir>/master.key (generated on first use) and
// <dataDir>/master.key.previous, plus the configured previousMasterKeys.
func readKeyring(cfg config.Config) (current []byte, previous [][]byte, err error) {
	return readKeyringFiles(cfg, true)
}

// readKeyringFiles is readKeyring; without create, a missing master.key is
// an error (a running service never makes up a new key).
func readKeyringFiles(cfg config.Config, create bool) (current []byte, previous [][]byte, err error) {
	previous = cfg.PreviousMasterKeyBytes()
	if !keyringFiles(cfg) {
		return cfg.MasterKeyBytes(), previous, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("data dir: %w", err)
	}
	path := filepath.Join(cfg.DataDir, masterKeyFile)
	if !create {
		if _, err := os.Stat(path); err != nil {
			return nil, nil, fmt.Errorf("master key: %w", err)
		}
	}
	if current, err = loadOrCreateSecret(path, keystore.MasterKeySize); err != nil {
		return nil, nil, fmt.Errorf("master key: %w", err)
	}
	files, err := readKeyLines(filepath.Join(cfg.DataDir, previousKeysFile))
	if err != nil {
		return nil, nil, fmt.Errorf("previous master keys: %w", err)
	}
	return current, append(files, previous...), nil
}

// readKeyLines reads one hex master key a line (blank lines and # comments
// skipped); a missing file is no key. Errors name the line, never its text.
func readKeyLines(path string) ([][]byte, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		b, err := hex.DecodeString(line)
		if err != nil || len(b) != keystore.MasterKeySize {
			return nil, fmt.Errorf("%s line %d: not %d hex-encoded bytes", path, n, keystore.MasterKeySize)
		}
		keys = append(keys, b)
	}
	return keys, sc.Err()
}

// writeKeyLines writes keys, one hex key a line, to path (mode 0600,
// atomically).
func writeKeyLines(path string, keys [][]byte) error {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(hex.EncodeToString(k) + "\n")
	}
	return provision.WriteSecretFile(path, []byte(b.String()))
}

const keysUsage = `Usage: txengine keys COMMAND [flags]

Master keys encrypt what txengine keeps secret at rest: account private keys,
stored idempotency responses and callback secrets, each under its own key
derived from the master key (HKDF-SHA256). Every encrypted value names the
id of its master key. Previous master keys (previousMasterKeys,
TXENGINE_PREVIOUS_MASTER_KEYS, or <data dir>/master.key.previous for the
embedded default) still decrypt but never encrypt.

Commands:
  txengine keys rotate [--new] [--batch N] [--pause D] [--config FILE]
      re-encrypt every value that is not under the current master key, while
      the service runs; see the procedure below
  txengine keys status [--config FILE]
      count the encrypted values per master key id
  txengine keys prune [--config FILE]
      check that every value is under the current key; then, for the
      embedded default, delete <data dir>/master.key.previous
  txengine keys generate
      print a new random master key (64 hex digits) for masterKey

Rotation with the embedded default (<data dir>/master.key), no restart:
  1. txengine keys rotate --new: writes a new master.key, keeps the old key
     in master.key.previous, waits until the running service has adopted the
     new key (it reads the files every 2 s and says so in master.key.in-use
     once its HTTP request timeout has passed), then re-encrypts;
  2. txengine keys prune: checks, then deletes master.key.previous.
Rotation with configured keys (masterKey / TXENGINE_MASTER_KEY), online:
  1. add the new key (txengine keys generate) to previousMasterKeys on every
     node; restart the nodes one at a time: all can now decrypt under it;
  2. make it masterKey and move the old key to previousMasterKeys; restart
     the nodes one at a time (a single node can skip step 1);
  3. once every node runs step 2, run txengine keys rotate while they serve;
  4. run txengine keys prune (it checks nothing is left under an old key),
     then remove the old key from previousMasterKeys.
rotate refuses, and changes nothing, if a value opens under no known key.
`

// keysCmd serves "txengine keys".
func keysCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, keysUsage)
		if len(args) == 0 {
			return errors.New("keys: expected a command: rotate, status, prune or generate")
		}
		return nil
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("keys "+sub, keysUsage+"\nFlags:\n", stderr)
	configPath := fs.String("config", "", "YAML configuration file (TXENGINE_* environment variables override it)")
	newKey := fs.Bool("new", false, "rotate: first write a new master key into the data dir (embedded default only)")
	batch := fs.Int("batch", keystore.DefaultRotateOptions().Batch, "rotate: rows per database transaction")
	pause := fs.Duration("pause", 0, "rotate: pause between batches, to leave the store to the service")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("keys %s: unexpected argument %q", sub, fs.Arg(0))
	}
	if sub == "generate" {
		k := make([]byte, keystore.MasterKeySize)
		if _, err := rand.Read(k); err != nil {
			return fmt.Errorf("keys generate: %w", err)
		}
		fmt.Fprintln(stdout, hex.EncodeToString(k))
		return nil
	}
	if sub != "rotate" && sub != "status" && sub != "prune" {
		fmt.Fprint(stderr, keysUsage)
		return fmt.Errorf("keys: unknown command %q", sub)
	}
	cfg, err := config.Load(*configPath, getenv)
	if err != nil {
		return err
	}
	if *newKey {
		if sub != "rotate" {
			return fmt.Errorf("keys %s: --new is a flag of rotate", sub)
		}
		if err := newDataDirKey(cfg, stdout); err != nil {
			return err
		}
	}
	store, sealer, err := openSealed(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	sealed, ok := store.(keystore.SealedStore)
	if !ok {
		return fmt.Errorf("keys: the store %T cannot list its encrypted values", store)
	}
	if keyringFiles(cfg) && sub != "status" {
		if err := awaitAdoption(ctx, cfg.DataDir, sealer.CurrentKeyID(), stdout); err != nil {
			return fmt.Errorf("keys %s: %w", sub, err)
		}
	}
	switch sub {
	case "rotate":
		return rotateKeys(ctx, sealed, sealer, keystore.RotateOptions{Batch: *batch, Pause: *pause}, stdout)
	case "status":
		return keyStatus(ctx, sealed, sealer, stdout)
	default:
		return pruneKeys(ctx, cfg, sealed, sealer, stdout)
	}
}

// newDataDirKey makes a new random key the data dir's current master key,
// the old one first among the previous keys. The previous file is written
// first: a crash in between leaves the old key known twice, never lost.
func newDataDirKey(cfg config.Config, out io.Writer) error {
	if !keyringFiles(cfg) {
		return errors.New("keys rotate --new: masterKey is configured (TXENGINE_MASTER_KEY): set it to a new key " +
			"(txengine keys generate), add the old one to previousMasterKeys, restart the service, then run txengine keys rotate")
	}
	current, _, err := readKeyring(cfg)
	if err != nil {
		return err
	}
	defer clear(current)
	prevPath := filepath.Join(cfg.DataDir, previousKeysFile)
	previous, err := readKeyLines(prevPath)
	if err != nil {
		return err
	}
	next := make([]byte, keystore.MasterKeySize)
	if _, err := rand.Read(next); err != nil {
		return fmt.Errorf("new master key: %w", err)
	}
	defer clear(next)
	if err := writeKeyLines(prevPath, append([][]byte{current}, previous...)); err != nil {
		return fmt.Errorf("write %s: %w", previousKeysFile, err)
	}
	if err := writeKeyLines(filepath.Join(cfg.DataDir, masterKeyFile), [][]byte{next}); err != nil {
		return fmt.Errorf("write %s: %w", masterKeyFile, err)
	}
	s, err := keystore.NewKeySealer(next)
	if err != nil {
		return err
	}
	old, err := keystore.NewKeySealer(current)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "new master key %s in %s; the old key %s is kept in %s\n",
		s.CurrentKeyID(), filepath.Join(cfg.DataDir, masterKeyFile), old.CurrentKeyID(), previousKeysFile)
	return nil
}

// rotateKeys runs the rotation and prints its counts.
func rotateKeys(ctx context.Context, store keystore.SealedStore, sealer *keystore.KeySealer, opts keystore.RotateOptions, out io.Writer) error {
	fmt.Fprintf(out, "re-encrypting under master key %s (known keys: %s)\n", sealer.CurrentKeyID(), keyIDList(sealer.KeyIDs()))
	report, err := keystore.RotateKeys(ctx, store, sealer, opts)
	if err != nil {
		return fmt.Errorf("keys rotate: %w", err)
	}
	for _, c := range report.Counts {
		fmt.Fprintf(out, "%-20s %8d scanned %8d re-encrypted (%d without key id, %d in plain text, %d changed meanwhile and read again)\n",
			c.Kind, c.Scanned, c.Resealed, c.Legacy, c.Plain, c.Raced)
		if c.InKMS > 0 {
			fmt.Fprintf(out, "%-20s %8d in AWS KMS: left alone (their keys never leave KMS; rotate them there)\n", "", c.InKMS)
		}
	}
	fmt.Fprintf(out, "done in %s: every value is under key %s; the previous keys can be removed (txengine keys prune)\n",
		report.Elapsed.Round(time.Millisecond), report.KeyID)
	return nil
}

// keyIDList formats ids, comma-separated.
func keyIDList(ids []keystore.KeyID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return strings.Join(s, ", ")
}

// keyStatus prints the counts of keystore.SealedStatus.
func keyStatus(ctx context.Context, store keystore.SealedStore, sealer *keystore.KeySealer, out io.Writer) error {
	uses, err := keystore.SealedStatus(ctx, store, sealer, 1000)
	if err != nil {
		return fmt.Errorf("keys status: %w", err)
	}
	ids := sealer.KeyIDs()
	fmt.Fprintf(out, "current master key %s; previous: %s\n", ids[0], keyIDList(ids[1:]))
	for _, u := range uses {
		fmt.Fprintf(out, "%-20s", u.Kind)
		for _, id := range ids {
			fmt.Fprintf(out, " %s:%d", id, u.ByKey[id])
		}
		fmt.Fprintf(out, " legacy:%d plain:%d unopenable:%d", u.Legacy, u.Plain, u.Unopenable)
		if u.InKMS > 0 {
			fmt.Fprintf(out, " in-kms:%d", u.InKMS)
		}
		fmt.Fprintln(out)
	}
	return nil
}

// pruneKeys checks that every value is under the current key and then
// deletes the data dir's previous keys.
func pruneKeys(ctx context.Context, cfg config.Config, store keystore.SealedStore, sealer *keystore.KeySealer, out io.Writer) error {
	uses, err := keystore.SealedStatus(ctx, store, sealer, 1000)
	if err != nil {
		return fmt.Errorf("keys prune: %w", err)
	}
	left := 0
	for _, u := range uses {
		left += u.NotCurrent(sealer.CurrentKeyID())
	}
	if left > 0 {
		return fmt.Errorf("keys prune: %d values are not under the current key %s: run txengine keys rotate first; nothing was removed",
			left, sealer.CurrentKeyID())
	}
	if keyringFiles(cfg) {
		path := filepath.Join(cfg.DataDir, previousKeysFile)
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("keys prune: %w", err)
		}
		fmt.Fprintf(out, "every value is under key %s; removed %s\n", sealer.CurrentKeyID(), path)
	}
	if len(cfg.PreviousMasterKeys) > 0 {
		fmt.Fprintf(out, "every value is under key %s; remove previousMasterKeys (TXENGINE_PREVIOUS_MASTER_KEYS) from the configuration\n",
			sealer.CurrentKeyID())
	}
	return nil
}

// sealPlainSecrets seals the callback secrets migration 0012 left in plain
// text (once: later starts find none).
func sealPlainSecrets(ctx context.Context, store engine.Store, sealer *keystore.KeySealer, log *slog.Logger) error {
	sealed, ok := store.(keystore.SealedStore)
	if !ok {
		return nil
	}
	n, err := keystore.SealPlainCallbackSecrets(ctx, sealed, sealer)
	if err != nil {
		return fmt.Errorf("seal plain callback secrets: %w", err)
	}
	if n > 0 {
		log.Info("sealed callback secrets stored in plain text", "count", n)
	}
	return nil
}
