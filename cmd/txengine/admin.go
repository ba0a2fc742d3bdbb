package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine"
)

const migrateUsage = `Usage: txengine migrate [--config FILE]

Opens the configured store and applies its pending schema migrations, then
exits: PostgreSQL when database.url (TXENGINE_DATABASE_URL) is set, else the
embedded store in the data dir (TXENGINE_DATA_DIR). serve applies them too;
run migrate to upgrade the schema before starting new versions.

Flags:
`

// migrate serves "txengine migrate".
func migrate(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := newFlagSet("migrate", migrateUsage, stderr)
	configPath := fs.String("config", "", "YAML configuration file (TXENGINE_* environment variables override it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("migrate: unexpected argument %q", fs.Arg(0))
	}
	cfg, err := config.Load(*configPath, getenv)
	if err != nil {
		return err
	}
	store, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}

const usersUsage = `Usage: txengine users create [--admin] [--config FILE]

Creates a user with a default account and an API token, and prints the
user id, the account id and address, and the token (shown once; only its
hash is stored). With --admin the user is an operator: exempt from rate
limits, may set other users' limits. Without it the user is a normal user
owned by nobody. The new account gets no gas from this command; the running
service's faucet funds accounts created through the API.

Flags:
`

// users serves "txengine users create".
func users(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if err := subcommand(args, "users", "create", usersUsage, stdout, stderr); err != nil {
		return err
	}
	fs := newFlagSet("users create", usersUsage, stderr)
	admin := fs.Bool("admin", false, "create an operator (administrator)")
	configPath := fs.String("config", "", "YAML configuration file (TXENGINE_* environment variables override it)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("users create: unexpected argument %q", fs.Arg(0))
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

	n, err := engine.MakeUser(sealer, engine.NewUserSpec{Operator: *admin, Token: true, Account: true}, engine.SystemClock{}.Now())
	if err != nil {
		return err
	}
	u, acct, token := n.User, n.Account, n.Token
	if err := store.CreateUser(ctx, u, n.TokenHash, acct); err != nil {
		return fmt.Errorf("create user: %w", err)
	}
	kind := "user"
	if *admin {
		kind = "operator"
	}
	fmt.Fprintf(stdout, "%s: %s\naccount: %s (%s)\ntoken: %s\n", kind, u.ID, acct.ID, acct.Address.Hex(), token)
	return nil
}

// subcommand checks that args start with the subcommand want of command:
// help (-h, --help, help) prints usage on stdout and returns flag.ErrHelp;
// anything else prints it on stderr and returns an error.
func subcommand(args []string, command, want, usage string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == want {
		return nil
	}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, usage)
		return flag.ErrHelp
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("%s: expected the subcommand %s", command, want)
}

// newFlagSet returns a flag set whose usage is text followed by the flags.
func newFlagSet(name, text string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, text)
		fs.PrintDefaults()
	}
	return fs
}
