package main

import (
	"context"
	"fmt"
	"io"

	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine"
)

const transactionsUsage = `Usage: txengine transactions abandon ID [--config FILE]

Abandons a transaction that does not end (an operator's way out; the API's
POST /transactions/{id}/abandon does the same). One still new or waiting
fails at once with error code abandoned. One submitted gets abandoned
noted: the running service fills its nonce with a 0-value transfer of the
account to itself at its next check of the account (within the network's
rebroadcastBlocks blocks), so later transactions proceed, and the
transaction fails abandoned when that transfer is mined (or completes, if
one of its own versions is mined first). It works on the store the
configuration names, whether the service runs or not.

Flags:
`

// transactionsCmd serves "txengine transactions abandon ID".
func transactionsCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if err := subcommand(args, "transactions", "abandon", transactionsUsage, stdout, stderr); err != nil {
		return err
	}
	fs := newFlagSet("transactions abandon", transactionsUsage, stderr)
	configPath := fs.String("config", "", "YAML configuration file (TXENGINE_* environment variables override it)")
	// The id may come before or after the flags.
	rest := args[1:]
	var id string
	if len(rest) > 0 && len(rest[0]) > 0 && rest[0][0] != '-' {
		id, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if id == "" && fs.NArg() > 0 {
		id = fs.Arg(0)
	} else if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("transactions abandon: unexpected argument %q", fs.Arg(0))
	}
	if id == "" {
		fs.Usage()
		return fmt.Errorf("transactions abandon: the transaction id is required")
	}
	cfg, err := config.Load(*configPath, getenv)
	if err != nil {
		return err
	}
	store, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	tx, ended, err := engine.Abandon(ctx, store, id, engine.SystemClock{}.Now())
	if err != nil {
		return fmt.Errorf("transactions abandon: %w", err)
	}
	if ended {
		fmt.Fprintf(stdout, "transaction %s: failed (abandoned)\n", tx.ID)
		return nil
	}
	nonce := "?"
	if tx.Nonce != nil {
		nonce = fmt.Sprint(*tx.Nonce)
	}
	fmt.Fprintf(stdout, "transaction %s: submitted with nonce %s on %s; abandoned noted: the service fills its nonce at its next check and it then fails abandoned\n", tx.ID, nonce, tx.Network)
	return nil
}
