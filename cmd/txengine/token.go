package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"path/filepath"
	"strings"

	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/internal/provision"
)

// tokenCmd runs `txengine token deploy`.
func tokenCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 || args[0] != "deploy" {
		fmt.Fprintln(stderr, "Usage: txengine token deploy --network NAME --name NAME --symbol SYMBOL --supply WEI [--config FILE]")
		return errors.New("token: the only subcommand is deploy")
	}
	fs := flag.NewFlagSet("token deploy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML configuration file (TXENGINE_* environment variables override it)")
	network := fs.String("network", "", "network to deploy on (required)")
	name := fs.String("name", "", "token name (required)")
	symbol := fs.String("symbol", "", "token symbol (required)")
	supplyArg := fs.String("supply", "", "supply in the smallest unit (18 decimals), minted to the operator's default account (required)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: txengine token deploy --network NAME --name NAME --symbol SYMBOL --supply WEI [--config FILE]\n\n"+
			"Deploys the built-in ERC-20 with the network's faucet key, mints the supply to the operator's\n"+
			"default account and registers the token to the operator (creating the operator on first use).\n"+
			"Run it while the service is stopped: it opens the embedded store in the data dir.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	supply, ok := new(big.Int).SetString(*supplyArg, 10)
	switch {
	case *network == "":
		return errors.New("token deploy: --network is required")
	case *name == "" || *symbol == "":
		return errors.New("token deploy: --name and --symbol are required")
	case !ok || supply.Sign() < 0 || strings.HasPrefix(*supplyArg, "+"):
		return fmt.Errorf("token deploy: --supply %q is not a non-negative decimal amount", *supplyArg)
	}

	cfg, err := config.Load(*configPath, getenv)
	if err != nil {
		return err
	}
	store, sealer, err := openSealed(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	op, err := provision.EnsureOperator(ctx, store, sealer, filepath.Join(cfg.DataDir, "operator.token"))
	if err != nil {
		return err
	}
	nets, err := startNetworks(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer nets.Close()
	net, ok := nets.byName[*network]
	if !ok {
		return fmt.Errorf("token deploy: network %q is not configured (configured: %s)", *network, strings.Join(nets.names(), ", "))
	}
	faucet, ok := nets.faucets[*network]
	if !ok {
		return fmt.Errorf("token deploy: network %q has no faucetKey to pay for the deployment", *network)
	}
	c, err := provision.DeployToken(ctx, store, net, faucet.Key(), provision.Token{
		Name: *name, Symbol: *symbol, Supply: supply, Holder: op.Account.Address, Owner: op.User.ID,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "token %s (%s) deployed on %s at %s\n", *name, *symbol, *network, c.Address.Hex())
	fmt.Fprintf(stdout, "contract id: %s\n", c.ID)
	fmt.Fprintf(stdout, "supply %s held by %s (operator's default account)\n", supply, op.Account.Address.Hex())
	return nil
}
