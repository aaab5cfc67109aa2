// Command fakeprovider serves the fake card payment provider of the provider
// HTTP contract, with its chaos modes and admin API, on its own.
//
// Every setting comes from a flag or from its FAKEPROVIDER_ environment
// variable; a flag overrides the variable. Run it with --help for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"chargeonce/fakeprovider"
	"chargeonce/internal/cli"
	"chargeonce/internal/envflag"
	"chargeonce/internal/serve"
)

const name = "fakeprovider"

const about = `Serves the fake card payment provider (POST /v1/charges and POST /v1/refunds
with Idempotency-Key, GET /v1/charges, GET /v1/refunds, GET /v1/idempotency,
GET /v1/settlements/{date}) and its admin API under /_admin/.
With --webhook-url it posts every finished charge and settled refund, signed
per Standard Webhooks, to each URL, and retries what is not acknowledged.
It serves --lookup-rate lookups by merchant reference a second and answers
429 past it, and publishes that rate, its key retention and its hold window:
how long an authorization waits for POST /v1/charges/{id}/capture or /void.
Its state is in memory, or with --data-file in a SQLite file that a restart
reads back.

`

const example = "\nExample: fakeprovider --mode slow --delay 5s\n"

func main() {
	cli.Run(name, run)
}

// config is everything the command needs, parsed and validated.
type config struct {
	addr            string
	shutdownTimeout time.Duration
	provider        fakeprovider.Config
}

// parseConfig reads the settings from args and getenv and validates them.
// It prints the help on stdout and returns flag.ErrHelp for --help; every
// other error is a cli.UsageError.
func parseConfig(args []string, getenv func(string) string, stdout io.Writer) (config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Parse errors are reported once, by cli.ExitCode, not also by the flag
	// package.
	fs.SetOutput(io.Discard)
	var c config
	mode := &c.provider.Mode
	fs.StringVar(&c.addr, "addr", ":8099", "address to listen on")
	modeName := fs.String("mode", string(fakeprovider.ModeNormal), "chaos mode: normal, slow, drop, error, lost_response or rate_limit")
	fs.DurationVar(&mode.Delay, "delay", 0, "processing time in slow mode; time before a 504 in drop mode (0s holds a dropped request until the client gives up)")
	fs.Float64Var(&mode.Rate, "rate", fakeprovider.DefaultRate, "probability, 0 to 1, that a request misbehaves in the error, lost_response and rate_limit modes")
	fs.Uint64Var(&mode.Seed, "seed", 1, "seed of the random source behind the rate, so that a run can be repeated")
	fs.DurationVar(&c.provider.Retention, "retention", fakeprovider.DefaultRetention, "how long an idempotency key is remembered (at least 1s)")
	fs.Float64Var(&c.provider.LookupRate, "lookup-rate", fakeprovider.DefaultLookupRate, "lookups by merchant reference served a second, published by GET /v1/idempotency; past it a lookup gets 429 (positive: no provider is unlimited)")
	fs.DurationVar(&c.provider.HoldWindow, "hold-window", fakeprovider.DefaultHoldWindow, "how long an authorization (a charge posted with capture false) can be captured or voided before it expires (at least 1s), published by GET /v1/idempotency")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 15*time.Second, "how long shutdown waits for charges in progress and open requests")
	fs.Int64Var(&c.provider.Fee.BasisPoints, "fee-bps", fakeprovider.DefaultFee.BasisPoints, "percentage fee of the settlement reports, in basis points (290 is 2.9%)")
	fs.Int64Var(&c.provider.Fee.FixedMinor, "fee-fixed", fakeprovider.DefaultFee.FixedMinor, "fixed fee of the settlement reports, in minor units of the charge's currency")
	hooks := &c.provider.Webhooks
	fs.Var((*envflag.List)(&hooks.URLs), "webhook-url", "`URL` that the event of every finished charge and settled refund is posted to; repeat it, or give a comma-separated list (default: no events)")
	fs.Var((*envflag.List)(&hooks.Secrets), "webhook-secret", "whsec_ `secret` that signs every event; give two while the receiver rotates to a new one")
	hooks.Schedule = append(fakeprovider.Schedule(nil), fakeprovider.DefaultWebhookSchedule...)
	fs.Var(&hooks.Schedule, "webhook-schedule", "waits before each retry of an unacknowledged event, comma-separated (the Standard Webhooks schedule)")
	fs.DurationVar(&hooks.Timeout, "webhook-timeout", fakeprovider.DefaultWebhookTimeout, "how long one delivery may take before it is retried")
	fs.DurationVar(&hooks.Chaos.Delay, "webhook-delay", 0, "how long every event is held back before its first delivery")
	fs.Float64Var(&hooks.Chaos.DropRate, "webhook-drop-rate", 0, "probability, 0 to 1, that a delivery is lost on the way and retried on the schedule")
	fs.Float64Var(&hooks.Chaos.DuplicateRate, "webhook-duplicate-rate", 0, "probability, 0 to 1, that a delivered event is delivered once more")
	fs.DurationVar(&hooks.Chaos.Reorder, "webhook-reorder", 0, "hold every event back by a random time below this, so that events overtake one another")
	fs.Uint64Var(&hooks.Chaos.Seed, "webhook-seed", 1, "seed of the random source behind the webhook chaos")
	fs.StringVar(&c.provider.DataFile, "data-file", "", "SQLite `file` that keeps the keys, charges, refunds, request log and mode across restarts, created if missing;\nthe file's mode is kept unless --mode, --delay, --rate or --seed is given (default: in memory only)")

	err := envflag.Parse(fs, args, cli.FakeProviderEnvPrefix, getenv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, about)
		fs.SetOutput(stdout)
		fs.Usage()
		fmt.Fprint(stdout, example)
		return config{}, err
	}
	if err != nil {
		return config{}, cli.UsageError{Err: err}
	}
	mode.Name = fakeprovider.ModeName(*modeName)
	if c.provider.DataFile != "" && !envflag.AnyGiven(fs, "mode", "delay", "rate", "seed") {
		// A zero mode keeps the one the file holds.
		*mode = fakeprovider.Mode{}
	}
	if err := c.validate(); err != nil {
		return config{}, cli.UsageError{Err: fmt.Errorf("invalid settings: %w", err)}
	}
	return c, nil
}

// validate reports the first problem that makes c unusable.
func (c config) validate() error {
	if _, _, err := net.SplitHostPort(c.addr); err != nil {
		return fmt.Errorf("--addr must be host:port such as :8099, got %q", c.addr)
	}
	if c.shutdownTimeout <= 0 {
		return fmt.Errorf("--shutdown-timeout must be positive, got %s", c.shutdownTimeout)
	}
	// In Config a zero rate means the default; given on the command line it
	// would be taken for "unlimited", which the fake does not have.
	if c.provider.LookupRate == 0 {
		return errors.New("--lookup-rate must be positive, got 0: the fake has no unlimited rate")
	}
	return c.provider.Validate()
}

// run is the whole command, as cli.Run wants it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parseConfig(args, getenv, stdout)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	c.provider.Logger = logger
	p, err := fakeprovider.New(c.provider)
	if err != nil {
		return err
	}
	ln, err := serve.Listen(c.addr, "addr")
	if err != nil {
		return errors.Join(err, p.CloseDataFile())
	}
	return serveProvider(ctx, ln, p, c.shutdownTimeout, logger)
}

// serveProvider serves p on ln until ctx is done, then shuts down
// gracefully within shutdownTimeout.
func serveProvider(ctx context.Context, ln net.Listener, p *fakeprovider.Provider, shutdownTimeout time.Duration, logger *slog.Logger) error {
	srv := fakeprovider.Serve(ln, p)
	mode := p.Mode()
	logger.Info("fake provider listening", "addr", srv.Addr(), "mode", mode.Name,
		"delay", mode.Delay, "rate", mode.Rate, "seed", mode.Seed, "retention", p.Retention(), "lookup_rate", p.LookupRate(), "hold_window", p.HoldWindow(),
		"webhook_endpoints", len(p.Webhooks().Endpoints))
	select {
	case <-srv.Stopped():
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", shutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}
