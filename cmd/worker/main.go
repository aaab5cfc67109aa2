// Command worker runs the chargeonce payment worker against any Temporal
// service and merchant database. Run several for availability: they share
// the task queue, and the outbox sweep is safe to run in each.
//
// It serves /healthz, /metrics, and the payload codec for the Temporal Web
// UI under /codec on --listen.
//
// --provider chooses the API the card provider speaks: ietf (the default,
// docs/provider-http.md) or stripe, with --stripe-api-key.
//
// The worker owns the payment timing (--attempt-timeout … --abandon-after):
// it checks --abandon-after against the provider's key retention and
// publishes the timing in the merchant database, where every checkout reads
// it. A worker whose timing differs from the published one refuses to start
// unless --replace-timing is given.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/internal/alert"
	"chargeonce/internal/cli"
	"chargeonce/internal/codec"
	"chargeonce/internal/metrics"
	"chargeonce/internal/serve"
	"chargeonce/worker"
)

func main() {
	cli.Run("worker", run)
}

func run(ctx context.Context, args []string, getenv func(string) string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backend := cli.Backend(fs)
	timing := cli.WorkerTiming(fs)
	logFlags := cli.Logging(fs)
	providerFlags := providerFlagsOf(fs)
	settlementURL := fs.String("settlement-url", "", "base `URL` of the provider's settlement reports (GET /v1/settlements/{date}); default the provider URL, except Stripe's own API, whose reports chargeonce does not read, so that no settlement runs there")
	graceDays := fs.Int("settlement-grace-days", worker.DefaultSettlementGraceDays, "days after its date that a charge may first appear in a settlement report before its attempt is missing_in_report")
	sweepEvery := fs.Duration("sweep-every", worker.DefaultSweepEvery, "period of the outbox sweep that starts lost workflow starts")
	listen := fs.String("listen", ":9090", "`address` of /healthz, /metrics and the payload codec (/codec)")
	uiOrigin := fs.String("codec-cors-origin", "http://localhost:8233", "Temporal Web UI `origin` allowed to call the payload codec")
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}
	if *sweepEvery <= 0 {
		return cli.UsageError{Err: errors.New("--sweep-every must be positive")}
	}
	if *graceDays < 0 {
		return cli.UsageError{Err: fmt.Errorf("--settlement-grace-days must be 0 or more, got %d", *graceDays)}
	}
	logger, err := logFlags.Logger(stderr)
	if err != nil {
		return err
	}
	pc, providerURL, err := providerFlags.port(logger)
	if err != nil {
		return err
	}
	reports, err := settlementReports(*settlementURL, providerURL, logger)
	if err != nil {
		return err
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

	// The sweep starts the workflows of stored attempts and creates none,
	// so it needs no reference prefix.
	svc, err := checkout.New(checkout.Config{Store: conn.Store, Temporal: conn.Temporal, Logger: logger})
	if err != nil {
		return err
	}
	w, err := worker.Start(ctx, worker.Deps{
		Client: conn.Temporal, Namespace: conn.Namespace, Provider: pc, Store: conn.Store, Checkout: svc,
		Timing: timing.Timing, ReplaceTiming: timing.Replace, SweepEvery: *sweepEvery, Registerer: reg, Logger: logger,
		Reports: reports, SettlementGraceDays: *graceDays,
	})
	if err != nil {
		return err
	}
	defer w.Stop()

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(reg))
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, r *http.Request) {
		if _, err := conn.Temporal.CheckHealth(r.Context(), nil); err != nil {
			http.Error(rw, "temporal does not answer: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(rw, "ok")
	})
	mux.Handle("/codec/", http.StripPrefix("/codec", codec.NewHTTPHandler(conn.Keyring, *uiOrigin)))
	logger.Info("worker started", "task_queue", chargeonce.TaskQueue, "listen", ln.Addr().String(), "provider", providerURL, "provider_api", *providerFlags.api)
	return serve.Run(ctx, ln, mux)
}
