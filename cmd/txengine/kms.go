package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/engine/keystore/awskms"
	"github.com/txengine/txengine/internal/redact"
)

// custody returns the signer of every account (its sealed key, or AWS KMS
// when kms is enabled) and the KMS signer the API creates and attaches KMS
// accounts with (nil when kms is off: the transactions of KMS accounts
// then wait, and the API refuses custody kms).
func custody(ctx context.Context, cfg config.KMS, sealer *keystore.KeySealer, log *slog.Logger) (*keystore.Custody, error) {
	c := &keystore.Custody{Local: sealer}
	if !cfg.Enabled {
		return c, nil
	}
	client, err := awskms.New(ctx, awskms.Options{Region: cfg.Region, Endpoint: cfg.Endpoint, Conns: cfg.Concurrency})
	if err != nil {
		return nil, fmt.Errorf("kms: %w", err)
	}
	c.KMS = keystore.NewKMSSigner(client, keystore.KMSOptions{
		Concurrency: cfg.Concurrency, CallTimeout: cfg.CallTimeout, Retries: cfg.Retries, Backoff: cfg.Backoff,
	})
	log.Info("KMS custody on", "region", cfg.Region, "endpoint", redact.URL(cfg.Endpoint), "concurrency", cfg.Concurrency)
	return c, nil
}
