package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/persistence/postgres"
	"github.com/txengine/txengine/persistence/sqlite"
)

// openStore opens the store cfg selects, applying pending migrations:
// PostgreSQL when database.url is set, else the embedded store in the data
// dir (created if needed).
func openStore(ctx context.Context, cfg config.Config) (engine.Store, error) {
	if cfg.Database.URL != "" {
		s, err := postgres.Open(ctx, cfg.Database.URL)
		if err != nil {
			// The URL may hold a password: name the store, not the URL.
			return nil, fmt.Errorf("open PostgreSQL store (database.url): %w", err)
		}
		return s, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	s, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, "txengine.db"))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	return s, nil
}

// loadSealer returns the keyring of the configured master keys, or of the
// data dir's (readKeyring).
func loadSealer(cfg config.Config) (*keystore.KeySealer, error) {
	current, previous, err := readKeyring(cfg)
	if err != nil {
		return nil, err
	}
	defer clear(current)
	return keystore.NewKeySealer(current, previous...)
}

// openSealed loads the key sealer and opens the store: what every command
// that creates accounts or signs needs.
func openSealed(ctx context.Context, cfg config.Config) (engine.Store, *keystore.KeySealer, error) {
	sealer, err := loadSealer(cfg)
	if err != nil {
		return nil, nil, err
	}
	store, err := openStore(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return store, sealer, nil
}
