// Command temporal-setup prepares a Temporal namespace for chargeonce: it
// creates the namespace unless it exists, and registers the payment
// workflow's search attributes (workflows.SearchAttributes) that it lacks.
// Every step is idempotent, so it is safe to run on every deploy; the worker
// and the API refuse to start against a namespace that lacks an attribute.
//
// It talks to Temporal's own APIs, so it needs no Temporal CLI. On Temporal
// Cloud, namespaces and search attributes are managed in Cloud itself, and
// this command only reports what is missing.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"chargeonce/internal/cli"
	"chargeonce/internal/logging"
	"chargeonce/internal/temporalclient"
	"chargeonce/workflows"
)

// minRetention is the shortest namespace retention Temporal accepts.
const minRetention = 24 * time.Hour

func main() {
	cli.Run("temporal-setup", run)
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("temporal-setup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	connFlags := temporalclient.RegisterFlags(fs)
	retention := fs.Duration("retention", 7*24*time.Hour, "how long Temporal keeps the history of a closed workflow, for a namespace this command creates")
	wait := fs.Duration("wait", 2*time.Minute, "how long to wait for the Temporal frontend to answer")
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}
	if *retention < minRetention {
		return cli.UsageError{Err: fmt.Errorf("--retention %v is shorter than Temporal's minimum of %v", *retention, minRetention)}
	}
	if *wait <= 0 {
		return cli.UsageError{Err: fmt.Errorf("--wait %v must be positive", *wait)}
	}
	conn, err := connFlags.Resolve(getenv)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()

	// Nothing here sends a payload, so no codec is needed.
	sdkLogger := logging.AtLeast(slog.New(slog.NewTextHandler(stderr, nil)), slog.LevelError)
	var c client.Client
	err = temporalclient.WaitFor(ctx, "Temporal at "+conn.Address, func(ctx context.Context) error {
		var err error
		c, err = temporalclient.Dial(ctx, conn, temporalclient.Options{DataConverter: converter.GetDefaultDataConverter(), Logger: sdkLogger})
		return err
	})
	if err != nil {
		return err
	}
	defer c.Close()

	created, err := temporalclient.EnsureNamespace(ctx, c, conn.Namespace, *retention)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(stdout, "namespace %s: created, retention %v\n", conn.Namespace, *retention)
	} else {
		fmt.Fprintf(stdout, "namespace %s: exists\n", conn.Namespace)
	}
	want := workflows.SearchAttributes()
	missing, err := temporalclient.MissingSearchAttributes(ctx, c.OperatorService(), conn.Namespace, want)
	if err != nil {
		return err
	}
	if err := temporalclient.AddSearchAttributes(ctx, c, conn.Namespace, missing); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		state := "present"
		if _, ok := missing[name]; ok {
			state = "added"
		}
		fmt.Fprintf(stdout, "search attribute %s (%s): %s\n", name, want[name], state)
	}
	fmt.Fprintf(stdout, "namespace %s is ready for chargeonce (%s)\n", conn.Namespace, strings.Join(slices.Sorted(maps.Keys(want)), ", "))
	return nil
}
