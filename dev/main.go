// Command dev runs the whole chargeonce stack in one process, with nothing
// to install: an embedded Temporal server and its Web UI on a SQLite file,
// the fake card provider, the payment worker and the checkout API.
//
//	go run ./dev
//
// Then, in another terminal:
//
//	go run ./starter checkout --amount 548.90 --currency TRY --card tok_visa
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"chargeonce/api"
	"chargeonce/api/console"
	"chargeonce/dev/stack"
	"chargeonce/dev/temporalserver"
	"chargeonce/fakeprovider"
	"chargeonce/internal/cli"
	"chargeonce/internal/envflag"
	"chargeonce/notify"
	"chargeonce/provider/dialect"
	"chargeonce/worker"
)

func main() {
	cli.Run("dev", run)
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, logFlags, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	logger, err := logFlags.Logger(stderr)
	if err != nil {
		return err
	}
	cfg.Logger = logger
	cfg.ReceiverOut = stdout
	cfg.Stopping = func(what string) { fmt.Fprintf(stdout, "stopping: %s…\n", what) }

	started := time.Now()
	s, err := stack.Start(ctx, cfg)
	if err != nil {
		return err
	}
	printBanner(stdout, cfg, s, time.Since(started))

	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.Close(shutdownCtx); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "stopped.")
	return nil
}

// defaultAPIPort is --api-port's default, the port of the starter's default
// address, http://localhost:8080.
const defaultAPIPort = 8080

// parseFlags reads the dev stack's configuration from args and the
// environment.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (stack.Config, *cli.LogFlags, error) {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg stack.Config
	fs.StringVar(&cfg.DataDir, "data-dir", cli.DevDataDir, "`directory` of the Temporal, app and fake provider SQLite files, the payload key and the API key")
	fs.StringVar(&cfg.Host, "host", "127.0.0.1", "interface every part listens on")
	fs.IntVar(&cfg.TemporalPort, stack.FlagTemporalPort, 7233, "Temporal frontend gRPC `port` (the temporal CLI's default)")
	fs.IntVar(&cfg.UIPort, stack.FlagUIPort, 8233, "Temporal Web UI `port`")
	fs.IntVar(&cfg.ProviderPort, stack.FlagProviderPort, 8099, "fake provider `port`")
	fs.IntVar(&cfg.APIPort, stack.FlagAPIPort, defaultAPIPort, "checkout API `port`")
	mode := fs.String("provider-mode", "normal", "fake provider chaos `mode`: normal, slow, drop, error, lost_response or rate_limit")
	fs.DurationVar(&cfg.Provider.Mode.Delay, "provider-delay", 0, "fake provider processing time in slow mode, or time before a 504 in drop mode")
	fs.Float64Var(&cfg.Provider.Mode.Rate, "provider-rate", fakeprovider.DefaultRate, "probability (0 to 1) that a request misbehaves in the error, lost_response and rate_limit modes")
	fs.Uint64Var(&cfg.Provider.Mode.Seed, "provider-seed", 1, "seed of the fake provider's chaos, so that a run can be repeated")
	fs.DurationVar(&cfg.Provider.Retention, "provider-retention", fakeprovider.DefaultRetention, "how long the fake provider remembers an idempotency key")
	fs.DurationVar(&cfg.Provider.HoldWindow, "provider-hold-window", fakeprovider.DefaultHoldWindow, "how long the fake provider keeps an authorization before it expires")
	backup := fs.Bool("backup-provider", true, "run a second fake provider, named "+stack.BackupName+", with books, events and chaos of its own: a payment moves to it when the first provider charged nothing; false runs one provider")
	fs.IntVar(&cfg.BackupPort, stack.FlagBackupPort, 8098, "backup provider `port`")
	backupMode := fs.String("backup-mode", "normal", "backup provider chaos `mode`, as --provider-mode")
	fs.StringVar(&cfg.ProviderAPI, "provider-api", dialect.IETF, "`API` the worker speaks to the fake provider, which serves both: "+dialect.Names)
	fs.Int64Var(&cfg.Provider.Fee.BasisPoints, "provider-fee-bps", fakeprovider.DefaultFee.BasisPoints, "percentage fee of the fake provider's settlement reports, in basis points")
	fs.Int64Var(&cfg.Provider.Fee.FixedMinor, "provider-fee-fixed", fakeprovider.DefaultFee.FixedMinor, "fixed fee of the fake provider's settlement reports, in minor units")
	capture := cli.Capture(fs)
	fs.DurationVar(&cfg.CheckoutBudget, "checkout-budget", 0, "how long a checkout waits for the charge before it answers 202 pending (default: charge budget + 2s)")
	fs.DurationVar(&cfg.SweepEvery, "sweep-every", 0, "period of the outbox sweep that starts lost workflow starts (default "+worker.DefaultSweepEvery.String()+")")
	fs.BoolVar(&cfg.ProviderEvents, "provider-events", true, "the fake provider posts a signed event per finished charge to the API, as a real provider does; false leaves unknown outcomes to lookups and retries")
	fs.StringVar(&cfg.Receiver, stack.FlagReceiver, "127.0.0.1:8097", "`address` of the dev receiver, which is registered as an event endpoint and prints each signed event it verifies; empty runs none")
	fs.StringVar(&cfg.CodecKeys, "codec-keys", "", "payload `keyring` id:base64key,… (first is current) (default: a key file in the data directory)")
	// The dev receiver listens on loopback.
	eventNetworks := cli.EventNetworks(fs, notify.LoopbackNetworks)
	timing := cli.Timing(fs)
	logFlags := cli.Logging(fs)
	if err := cli.Parse(fs, args, getenv); err != nil {
		return stack.Config{}, nil, err
	}
	cfg.EventNetworks = *eventNetworks
	cfg.Capture = *capture
	cfg.Provider.Mode.Name = fakeprovider.ModeName(*mode)
	if cfg.DataDir != "" {
		// The provider's books stay with the orders and workflows they
		// belong to, and so does its mode unless a flag changes it.
		cfg.Provider.DataFile = filepath.Join(cfg.DataDir, stack.ProviderDBFile)
		if !envflag.AnyGiven(fs, "provider-mode", "provider-delay", "provider-rate", "provider-seed") {
			cfg.Provider.Mode = fakeprovider.Mode{}
		}
	}
	switch backupOnly := envflag.AnyGiven(fs, stack.FlagBackupPort, "backup-mode"); {
	case *backup:
		b := cfg.Provider
		b.Mode.Name = fakeprovider.ModeName(*backupMode)
		if cfg.DataDir != "" {
			b.DataFile = filepath.Join(cfg.DataDir, stack.BackupDBFile)
			if !envflag.AnyGiven(fs, "backup-mode") {
				b.Mode = fakeprovider.Mode{}
			}
		}
		if err := b.Validate(); err != nil {
			return stack.Config{}, nil, cli.UsageError{Err: fmt.Errorf("backup provider: %w", err)}
		}
		cfg.Backup = &b
	case backupOnly:
		return stack.Config{}, nil, cli.UsageError{Err: fmt.Errorf("--%s and --backup-mode set the backup provider, which --backup-provider=false turns off", stack.FlagBackupPort)}
	}
	cfg.Timing = timing.Timing
	if err := dialect.Check(cfg.ProviderAPI); err != nil {
		return stack.Config{}, nil, cli.UsageError{Err: fmt.Errorf("--provider-api: %w", err)}
	}
	if err := cfg.Provider.Validate(); err != nil {
		return stack.Config{}, nil, cli.UsageError{Err: fmt.Errorf("fake provider: %w", err)}
	}
	if err := cfg.Timing.Validate(); err != nil {
		return stack.Config{}, nil, cli.UsageError{Err: err}
	}
	if cfg.Timing.AbandonAfter >= cfg.Provider.Retention {
		return stack.Config{}, nil, cli.UsageError{Err: fmt.Errorf(
			"--abandon-after %v must be shorter than --provider-retention %v", cfg.Timing.AbandonAfter, cfg.Provider.Retention)}
	}
	return cfg, logFlags, nil
}

func printBanner(w io.Writer, cfg stack.Config, s *stack.Stack, took time.Duration) {
	books := "in memory"
	if cfg.Provider.DataFile != "" {
		books = "books in " + cfg.Provider.DataFile
	}
	if cfg.ProviderAPI == dialect.Stripe {
		books += ", the worker speaks Stripe's dialect"
	}
	events := "off (--provider-events=false)"
	if cfg.ProviderEvents {
		events = "on"
	}
	kept := "kept in"
	if s.WebhookSecretCreated() {
		kept = "generated into"
	}
	made := "kept in"
	if s.APIKeyCreated() {
		made = "generated into"
	}
	rows := [][2]string{
		{"checkout API", s.APIURL()},
		{"console", s.APIURL() + console.Path + " (sign in with the API key below)"},
		{"Temporal Web UI", fmt.Sprintf("%s/namespaces/%s/workflows", s.UIURL(), temporalserver.DefaultNamespace)},
		{"Temporal", fmt.Sprintf("%s (namespace %s)", s.TemporalAddress(), temporalserver.DefaultNamespace)},
		{"fake provider", fmt.Sprintf("%s (mode %s, %s)", s.ProviderURL(), s.Provider().Mode().Name, books)},
	}
	if b := s.Backup(); b != nil {
		rows = append(rows, [2]string{"backup provider", fmt.Sprintf("%s (mode %s, %s), takes the payments the fake provider charged nothing of",
			s.BackupURL(), b.Mode().Name, cmp.Or(cfg.Backup.DataFile, "in memory"))})
	}
	rows = append(rows,
		[2]string{"settlement", fmt.Sprintf("%s, %s/namespaces/%s/schedules", settlementSchedules(s.ProviderNames()), s.UIURL(), temporalserver.DefaultNamespace)},
	)
	if s.KeyCreated() {
		rows = append(rows, [2]string{"payload key", fmt.Sprintf("generated into %s; keep it, or workflow payloads cannot be read", s.KeyFile())})
	}
	rows = append(rows,
		[2]string{"payload codec", fmt.Sprintf("%s, for the token in %s (Authorization: Bearer)", s.CodecURL(), s.CodecTokenFile())},
		[2]string{"provider events", fmt.Sprintf("%s, %s (and the legacy %s), signed with the secret %s %s", events, s.WebhookURL(), api.WebhookPath, kept, s.WebhookSecretFile())},
	)
	if url := s.ReceiverURL(); url != "" {
		rows = append(rows, [2]string{"event receiver", fmt.Sprintf("%s (endpoint %s), prints each signed event below", url, s.ReceiverEndpoint())})
	}
	rows = append(rows, [2]string{"API key", fmt.Sprintf("every scope, %s %s (the starter reads it from there)", made, s.APIKeyFile())})
	fmt.Fprintf(w, "\nchargeonce dev stack is up (%.1fs), data in %s\n", took.Seconds(), cfg.DataDir)
	for _, r := range rows {
		fmt.Fprintf(w, "  %-16s %s\n", r[0], r[1])
	}
	fmt.Fprintf(w, "\nTry, in another terminal:\n  %s\n", tryCommand(cfg, s.APIURL(), s.APIKeyFile()))
	fmt.Fprintf(w, "Ctrl-C stops everything.\n\n")
}

// tryCommand is the starter command that the banner suggests: it reaches
// this stack's API, with its key, and pays with a test card of the dialect
// that the worker speaks.
func tryCommand(cfg stack.Config, apiURL, keyFile string) string {
	card := "tok_visa"
	if cfg.ProviderAPI == dialect.Stripe {
		// Stripe's test payment method; the fake's Stripe door takes it.
		card = "pm_card_visa"
	}
	cmd := "go run ./starter checkout --amount 548.90 --currency TRY --card " + card
	if apiURL != fmt.Sprintf("http://127.0.0.1:%d", defaultAPIPort) {
		cmd += " --api " + apiURL
	}
	// The starter reads the key from the default data directory, relative
	// to where it runs, as dev does.
	if cfg.DataDir != cli.DevDataDir {
		cmd += fmt.Sprintf(` --api-key "$(cat %s)"`, keyFile)
	}
	return cmd
}

// settlementSchedules names the schedule that settles each provider's
// books.
func settlementSchedules(providers []string) string {
	ids := make([]string, len(providers))
	for i, p := range providers {
		ids[i] = worker.SettlementScheduleID(p)
	}
	word := "schedule "
	if len(ids) > 1 {
		word = "schedules "
	}
	return word + strings.Join(ids, ", ")
}
