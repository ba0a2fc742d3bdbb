// Command txengine runs the txengine service: an HTTP API in front of
// Ethereum-style chains for custodial accounts, contract calls and token
// transfers. This package is wiring only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gin-gonic/gin"
)

const usage = `txengine: an HTTP API in front of Ethereum-style chains.

Usage:
  txengine serve [--config FILE]                  run the service (default command)
  txengine migrate [--config FILE]                apply the store's schema migrations
  txengine users create [--admin] [--config FILE] create a user (an operator with --admin)
                                                  with a default account; print its token
  txengine token deploy --network NAME --name NAME --symbol SYMBOL --supply WEI [--config FILE]
                                                  deploy the built-in ERC-20 with the network's
                                                  faucet key, supply to the operator's default
                                                  account, registered to the operator (run it
                                                  while the service is stopped)
  txengine transactions abandon ID [--config FILE]
                                                  abandon a transaction that does not end: its
                                                  nonce is filled, it fails with abandoned
  txengine keys rotate|status|prune|generate [--config FILE]
                                                  rotate the master keys of the secrets at
                                                  rest, while the service runs ("txengine
                                                  keys --help", docs/operations.md#keys)
  txengine help                                   show this help

Run "txengine COMMAND --help" for the flags of a command.

With no configuration, serve runs the embedded default: an embedded store and
an in-process dev chain (network "dev") with a faucet and a demo ERC-20, all
kept in TXENGINE_DATA_DIR (default ./data), listening on TXENGINE_LISTEN
(default 127.0.0.1:8080). It prints the base URL and the operator token when
it creates it (later starts: the file that holds it).
With networks configured (--config FILE, or TXENGINE_NETWORK_* for one
network), serve connects to those JSON-RPC nodes instead.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Process-wide settings belong to the process: gin's release mode
	// silences its debug lines; a pprof build serves profiles beside the API.
	gin.SetMode(gin.ReleaseMode)
	stopProfiling := startProfiling(ctx, os.Getenv, os.Stderr)
	defer stopProfiling()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "txengine:", err)
		os.Exit(1)
	}
}

// run dispatches the subcommand.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	cmd := "serve"
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		cmd = "help"
	} else if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(stderr)
		configPath := fs.String("config", "", "YAML configuration file (TXENGINE_* environment variables override it)")
		fs.Usage = func() {
			fmt.Fprintln(stderr, "Usage: txengine serve [--config FILE]\n\nRuns the service; with no configuration, the embedded default.")
			fs.PrintDefaults()
		}
		if err := fs.Parse(args); err != nil {
			return err
		}
		return serve(ctx, *configPath, stdout, stderr, getenv)
	case "token":
		return tokenCmd(ctx, args, stdout, stderr, getenv)
	case "migrate":
		return migrate(ctx, args, stdout, stderr, getenv)
	case "users":
		return users(ctx, args, stdout, stderr, getenv)
	case "keys":
		return keysCmd(ctx, args, stdout, stderr, getenv)
	case "transactions":
		return transactionsCmd(ctx, args, stdout, stderr, getenv)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}
