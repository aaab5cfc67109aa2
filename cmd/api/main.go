// Command api serves the chargeonce checkout API (docs/checkout-api.md)
// against any Temporal service and merchant database. It is stateless: run
// as many as the traffic needs.
//
// It has no timing flags: every checkout uses the payment timing that the
// workers checked against the provider and published in the merchant
// database. Until a worker has started, checkouts answer 503.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"chargeonce/api"
	"chargeonce/checkout"
	"chargeonce/internal/alert"
	"chargeonce/internal/cli"
	"chargeonce/internal/envflag"
	"chargeonce/internal/metrics"
	"chargeonce/internal/serve"
	"chargeonce/internal/webhook"
	"chargeonce/provider/dialect"
	"chargeonce/provider/routing"
)

func main() {
	cli.Run("api", run)
}

func run(ctx context.Context, args []string, getenv func(string) string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backend := cli.Backend(fs)
	logFlags := cli.Logging(fs)
	listen := fs.String("listen", ":8080", "`address` of the checkout API")
	tlsFlags := cli.ServerTLS(fs, "the checkout API")
	budget := fs.Duration("checkout-budget", 0, "how long a checkout waits for the charge before it answers 202 pending (default: the published charge budget + 2s)")
	providerName := dialect.NameFlag(fs)
	routingFlag := routing.RegisterFlag(fs)
	prefix := fs.String("reference-prefix", checkout.DefaultReferencePrefix, "first part of every merchant reference")
	capture := cli.Capture(fs)
	var secretList envflag.List
	fs.Var(&secretList, "webhook-secret", "whsec_ `secret` that signs the provider's events at POST /webhooks/provider/<provider-name>, and at the legacy\nPOST /webhooks/provider, which stays that provider's; repeat it, or give a comma-separated list,\nto keep an old secret valid while the provider rotates to a new one (default: no webhook endpoint)")
	eventNetworks := cli.EventNetworks(fs, nil)
	webUI := fs.String("temporal-ui-url", "", "base `URL` of the Temporal Web UI, which the operator's console at /console links each workflow to (default: no links)")
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}

	logger, err := logFlags.Logger(stderr)
	if err != nil {
		return err
	}
	tlsConfig, err := tlsFlags.Config()
	if err != nil {
		return err
	}
	table, err := routingFlag.Table(dialect.NameFlagName, "webhook-secret")
	if err != nil {
		return cli.UsageError{Err: err}
	}
	settings := api.Settings{CheckoutBudget: *budget, Routing: table, ReferencePrefix: *prefix, Capture: *capture, EventNetworks: *eventNetworks, WebUI: *webUI}
	if table == nil {
		settings.Provider = *providerName
	}
	if len(secretList) > 0 {
		if settings.WebhookSecrets, err = webhook.ParseSecrets(secretList); err != nil {
			return cli.UsageError{Err: fmt.Errorf("--webhook-secret: %w", err)}
		}
	}
	ln, err := serve.Listen(*listen, "listen")
	if err != nil {
		return err
	}
	defer ln.Close() // in case a later step fails; serving closes it too
	reg := metrics.NewRegistry()
	if logger, err = alert.Counting(logger, reg); err != nil {
		return err
	}
	conn, err := backend.Connect(ctx, getenv, logger, reg)
	if err != nil {
		return err
	}
	defer conn.Close()

	handler, _, err := api.Build(ctx, conn, settings)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	logger.Info("checkout API started", "listen", ln.Addr().String(), "tls", tlsConfig != nil, "routing", routingFlag.Path())
	return serve.Run(ctx, ln, handler, tlsConfig)
}
