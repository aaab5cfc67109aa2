// Command worker runs the chargeonce payment worker against any Temporal
// service and merchant database. Run several for availability: they share
// the task queue, and the outbox sweep is safe to run in each.
//
// It serves /healthz, /metrics, and the payload codec for the Temporal Web
// UI under /codec on --listen, for callers that present --codec-token.
//
// --provider chooses the API the card provider speaks: ietf (the default,
// docs/provider-http.md) or stripe, with --stripe-api-key.
//
// Every worker joins the Temporal Worker Deployment "chargeonce" as the
// version --build-id; a new version takes over new payments only when the
// rollout makes it current (docs/operations.md).
//
// The worker owns the payment timing (--attempt-timeout … --abandon-after):
// it checks --abandon-after against the provider's key retention and
// publishes the timing in the merchant database, where every checkout reads
// it. A worker whose timing differs from the published one refuses to start
// unless --replace-timing is given.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"

	"chargeonce"
	"chargeonce/internal/alert"
	"chargeonce/internal/cli"
	"chargeonce/internal/codec"
	"chargeonce/internal/metrics"
	"chargeonce/internal/serve"
	"chargeonce/notify"
	"chargeonce/provider/dialect"
	"chargeonce/provider/routing"
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
	providerFlags := dialect.RegisterFlags(fs)
	routingFlag := routing.RegisterFlag(fs)
	settlementURL := fs.String("settlement-url", "", "base `URL` of the provider's settlement reports (GET /v1/settlements/{date}); default the provider URL, except Stripe's own API, whose reports chargeonce does not read, so that no settlement runs there; not with --routing, which reads each provider's reports at its URL")
	graceDays := fs.Int("settlement-grace-days", worker.DefaultSettlementGraceDays, "days after its date that a charge may first appear in a settlement report before its attempt is missing_in_report")
	sweepEvery := fs.Duration("sweep-every", worker.DefaultSweepEvery, "period of the outbox sweep that starts lost workflow starts")
	eventRetries := fs.String("event-retries", notify.FormatSchedule(notify.DefaultSchedule), "`waits` between the tries of a merchant event's delivery, comma-separated Go durations, none shorter than the one before; after the last it is given up")
	eventPoll := fs.Duration("event-poll", notify.DefaultPoll, "how often the events' dispatcher looks for deliveries that are due")
	// Loopback by default: the codec decrypts for whoever holds its token,
	// and /metrics has no credentials at all.
	listen := fs.String("listen", "127.0.0.1:9090", "`address` of /healthz, /metrics and the payload codec (/codec)")
	codecToken := fs.String("codec-token", "", "`secret` every caller of the payload codec must present (Authorization: Bearer, or the Web UI's endpoint <url>/codec/<secret>); at least 32 characters of A-Z a-z 0-9 - _")
	tlsFlags := cli.ServerTLS(fs, "/healthz, /metrics and the payload codec")
	uiOrigin := fs.String("codec-cors-origin", "http://localhost:8233", "Temporal Web UI `origin` allowed to call the payload codec")
	eventNetworks := cli.EventNetworks(fs, nil)
	var buildID string
	fs.Func("build-id", "`version` of the Worker Deployment "+chargeonce.DeploymentName+" that this worker joins: up to 255 letters, digits, '.', '_', '+' or '-'; default the binary's VCS revision (with -dirty- and its hash for a changed tree), or its hash",
		func(v string) error {
			buildID = v
			return chargeonce.CheckBuildID(v)
		})
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
	reg := metrics.NewRegistry()
	if logger, err = alert.Counting(logger, reg); err != nil {
		return err
	}
	table, err := routingFlag.Table(append(providerFlags.Names(), "settlement-url")...)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	var pc dialect.Settings
	if table == nil {
		if pc, err = providerFlags.Settings(); err != nil {
			return cli.UsageError{Err: err}
		}
	}
	retries, err := notify.ParseSchedule(*eventRetries)
	if err != nil {
		return cli.UsageError{Err: fmt.Errorf("--event-retries: %w", err)}
	}
	prepared, err := worker.Prepare(worker.Config{
		Provider: pc, Routing: table, SettlementURL: *settlementURL, SettlementGraceDays: *graceDays,
		Timing: timing.Timing, ReplaceTiming: timing.Replace, SweepEvery: *sweepEvery,
		EventRetries: retries, EventPoll: *eventPoll, EventNetworks: *eventNetworks, BuildID: buildID,
	}, logger)
	if err != nil {
		return cli.UsageError{Err: err}
	}

	if *codecToken == "" {
		return cli.UsageError{Err: errors.New("--codec-token is required: without it the codec would decrypt payloads for anyone")}
	}
	token, err := codec.ParseToken(*codecToken)
	if err != nil {
		return cli.UsageError{Err: err}
	}

	ln, err := serve.Listen(*listen, "listen")
	if err != nil {
		return err
	}
	defer ln.Close() // in case a later step fails; serving closes it too
	conn, err := backend.Connect(ctx, getenv, logger, reg)
	if err != nil {
		return err
	}
	defer conn.Close()
	w, err := prepared.Start(ctx, conn)
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
	mux.Handle("/codec/", http.StripPrefix("/codec", codec.NewHTTPHandler(conn.Keyring, token, *uiOrigin)))
	for _, p := range prepared.Providers() {
		logger.Info("provider reached", "provider", p.NameOrDefault(), "provider_api", cmp.Or(p.API, dialect.IETF), "url", p.URL)
	}
	logger.Info("worker started", "task_queue", chargeonce.TaskQueue, "listen", ln.Addr().String(), "tls", tlsConfig != nil)
	return serve.Run(ctx, ln, mux, tlsConfig)
}
