// Command apikey creates, lists and revokes the checkout API's keys
// (internal/apikey) in the merchant database.
//
// Usage:
//
//	apikey create --name shop --scopes checkout [--out FILE]
//	apikey list
//	apikey revoke --id ID [--after 24h]
//
// A key is shown once, when it is created: the database keeps only a hash
// of its secret. To rotate a key, create the new one, give it to the
// client, and revoke the old one with --after, which keeps it working for
// that long, so that both work while the client switches.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"chargeonce/internal/apikey"
	"chargeonce/internal/cli"
	"chargeonce/store"
)

func main() {
	cli.Run("apikey", run)
}

const usage = `apikey: create, list and revoke the checkout API's keys.

Usage:
  apikey create --name NAME [--scopes checkout,refund,operator,viewer] [--out FILE]
  apikey list
  apikey revoke --id ID [--after 24h]

Every subcommand takes --database-url (or CHARGEONCE_DATABASE_URL); run
"apikey SUBCOMMAND --help" for its flags.
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return cli.UsageError{Err: errors.New("a subcommand is required: create, list or revoke")}
	}
	sub := args[0]
	fs := flag.NewFlagSet("apikey "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	databaseURL := cli.DatabaseURL(fs)
	var do func(context.Context, store.Store) error
	switch sub {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "create":
		name := fs.String("name", "", "who or what the key is for, shown by list")
		scopes := fs.String("scopes", string(apikey.ScopeCheckout), "comma-separated `scopes`: "+apikey.FormatScopes(apikey.AllScopes()))
		out := fs.String("out", "", "write the key to this `file` (mode 0600) instead of standard output")
		do = func(ctx context.Context, st store.Store) error {
			return create(ctx, st, *name, *scopes, *out, stdout, stderr)
		}
	case "list":
		do = func(ctx context.Context, st store.Store) error { return list(ctx, st, stdout) }
	case "revoke":
		id := fs.String("id", "", "`id` of the key to revoke, as list shows it")
		after := fs.Duration("after", 0, "keep the key working for this long, so that its successor can be rolled out (default: it stops at once)")
		do = func(ctx context.Context, st store.Store) error { return revoke(ctx, st, *id, *after, stdout) }
	default:
		return cli.UsageError{Err: fmt.Errorf("unknown subcommand %q: the subcommands are create, list and revoke", sub)}
	}
	if err := cli.Parse(fs, args[1:], getenv); err != nil {
		return err
	}
	if *databaseURL == "" {
		return cli.UsageError{Err: errors.New("--database-url is required")}
	}
	st, err := store.Open(ctx, *databaseURL)
	if err != nil {
		return err
	}
	defer st.Close()
	return do(ctx, st)
}

func create(ctx context.Context, st store.Store, name, scopeList, out string, stdout, stderr io.Writer) error {
	scopes, err := apikey.ParseScopes(scopeList)
	if err != nil {
		return cli.UsageError{Err: fmt.Errorf("--scopes: %w", err)}
	}
	if err := apikey.ValidateName(name); err != nil {
		return cli.UsageError{Err: fmt.Errorf("--name: %w", err)}
	}
	key, rec, err := apikey.New(name, scopes, time.Now())
	if err != nil {
		return err
	}
	if err := st.CreateAPIKey(ctx, rec); err != nil {
		return err
	}
	if out != "" {
		if err := apikey.WriteFile(out, key); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "created key %s (scopes %s) into %s\n", rec.ID, apikey.FormatScopes(scopes), out)
		return nil
	}
	fmt.Fprintf(stderr, "created key %s (scopes %s); it is shown once, here:\n", rec.ID, apikey.FormatScopes(scopes))
	_, err = fmt.Fprintln(stdout, key.String())
	return err
}

func list(ctx context.Context, st store.Store, stdout io.Writer) error {
	keys, err := st.APIKeys(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tSCOPES\tCREATED\tSTATUS")
	for _, k := range keys {
		status := "active"
		switch {
		case k.RevokedAt == nil:
		case k.ActiveAt(now):
			status = "active until " + k.RevokedAt.Format(time.RFC3339)
		default:
			status = "revoked since " + k.RevokedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%q\t%s\t%s\t%s\n", k.ID, k.Name, apikey.FormatScopes(k.Scopes), k.CreatedAt.Format(time.RFC3339), status)
	}
	return w.Flush()
}

func revoke(ctx context.Context, st store.Store, id string, after time.Duration, stdout io.Writer) error {
	if !apikey.ValidID(id) {
		return cli.UsageError{Err: fmt.Errorf("--id %q is not a key's id (16 hex digits, as list shows them)", id)}
	}
	if after < 0 {
		return cli.UsageError{Err: fmt.Errorf("--after %v is negative", after)}
	}
	rec, err := st.RevokeAPIKey(ctx, id, time.Now().Add(after))
	if errors.Is(err, apikey.ErrUnknown) {
		return fmt.Errorf("no key has the id %s", id)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "key %s stops working at %s\n", rec.ID, rec.RevokedAt.Format(time.RFC3339))
	return err
}
