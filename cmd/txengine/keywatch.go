package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/internal/provision"
)

// keyringWatcher is serve's reader of the data dir keyring: every
// keyringPoll, and when the sealer meets a value under a key id it does not
// know, it reads the key files and, when they changed, makes the sealer use
// them (a new current key written by `keys rotate --new` is adopted without
// a restart); and it writes the id of the key it seals
// under to <dataDir>/master.key.in-use, which `keys rotate` waits for.
//
// A new id is written only a grace period (the HTTP request timeout and a
// poll) after the adoption: a request that sealed a value under the old
// key before it can no longer write it (its context has expired), so once
// rotate reads the new id, no value under the old key is written any more.
type keyringWatcher struct {
	cfg    config.Config
	sealer *keystore.KeySealer
	log    *slog.Logger
	grace  time.Duration
	done   chan struct{}
	once   sync.Once
	stop   context.CancelFunc
	// mu serialises reload and markInUse (the poll, and the sealer's
	// reload when a value names a key id it does not know).
	mu sync.Mutex
	// advertised is the id in the in-use file; adopted is when the
	// sealer's current key was adopted.
	advertised keystore.KeyID
	adopted    time.Time
}

// startKeyringWatcher starts the watcher when the keys come from the data
// dir, and returns nil otherwise. Close stops it.
func startKeyringWatcher(ctx context.Context, cfg config.Config, sealer *keystore.KeySealer, log *slog.Logger) (*keyringWatcher, error) {
	if !keyringFiles(cfg) {
		return nil, nil
	}
	w := &keyringWatcher{cfg: cfg, sealer: sealer, log: log, done: make(chan struct{}),
		grace: cfg.HTTP.RequestTimeout + keyringPoll, advertised: sealer.CurrentKeyID()}
	if err := w.markInUse(); err != nil {
		return nil, err
	}
	// A value under a key id the sealer does not know (sealed by a
	// process that read a newer key file): read the files at once.
	sealer.SetReload(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if err := w.reload(); err != nil {
			w.log.Error("reading the data dir keyring failed; the keys in use are kept", "err", err)
		}
	})
	ctx, w.stop = context.WithCancel(ctx)
	go w.run(ctx)
	return w, nil
}

// run polls until ctx ends.
func (w *keyringWatcher) run(ctx context.Context) {
	defer close(w.done)
	t := time.NewTicker(keyringPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		if err := w.reload(); err != nil {
			w.log.Error("reading the data dir keyring failed; the keys in use are kept", "err", err)
		}
		if err := w.markInUse(); err != nil {
			w.log.Error("writing "+inUseFile+" failed", "err", err)
		}
		w.mu.Unlock()
	}
}

// reload adopts the key files when they name other keys than the sealer's.
func (w *keyringWatcher) reload() error {
	current, previous, err := readKeyringFiles(w.cfg, false)
	if err != nil {
		return err
	}
	defer clear(current)
	fresh, err := keystore.NewKeySealer(current, previous...)
	if err != nil {
		return err
	}
	if fresh.CurrentKeyID() == w.sealer.CurrentKeyID() && w.sealer.Knows(fresh.KeyIDs()...) {
		return nil
	}
	was := w.sealer.CurrentKeyID()
	// Adopt, not Replace: keys dropped from the files stay known until
	// the service restarts.
	if err := w.sealer.Adopt(current, previous...); err != nil {
		return err
	}
	if w.sealer.CurrentKeyID() != was {
		w.adopted = time.Now()
	}
	w.log.Info("master keys reloaded from the data dir", "key_id", w.sealer.CurrentKeyID().String(),
		"was", was.String(), "keys", len(w.sealer.KeyIDs()))
	return nil
}

// markInUse writes the key id to the in-use file: the current one once
// the grace period after its adoption has passed, the one before until
// then.
func (w *keyringWatcher) markInUse() error {
	if id := w.sealer.CurrentKeyID(); id != w.advertised && time.Since(w.adopted) >= w.grace {
		w.advertised = id
	}
	return provision.WriteSecretFile(filepath.Join(w.cfg.DataDir, inUseFile), []byte(w.advertised.String()+"\n"))
}

// Close stops the watcher and removes the in-use file.
func (w *keyringWatcher) Close() {
	if w == nil {
		return
	}
	w.once.Do(func() {
		w.sealer.SetReload(nil)
		w.stop()
		<-w.done
		_ = os.Remove(filepath.Join(w.cfg.DataDir, inUseFile))
	})
}

// awaitAdoption waits until no service runs on the data dir with a key
// other than id: the in-use file names id, or is missing or older than
// three polls (no service runs). It gives up after adoptTimeout.
func awaitAdoption(ctx context.Context, dataDir string, id keystore.KeyID, out io.Writer) error {
	path := filepath.Join(dataDir, inUseFile)
	deadline := time.Now().Add(adoptTimeout)
	said := false
	for {
		st, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if strings.TrimSpace(string(raw)) == id.String() || time.Since(st.ModTime()) > 3*keyringPoll {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the service on %s still seals under key %s after %s, not %s: is it stuck? nothing was re-encrypted",
				dataDir, strings.TrimSpace(string(raw)), adoptTimeout, id)
		}
		if !said {
			fmt.Fprintf(out, "waiting for the running service to adopt key %s (it reads %s every %s, "+
				"and says so once its requests begun under the old key have ended: its HTTP request timeout)\n", id, masterKeyFile, keyringPoll)
			said = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
