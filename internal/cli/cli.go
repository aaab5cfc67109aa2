// Package cli holds what chargeonce's long-running commands (dev, worker,
// api) share: the flags they name alike, and a main that turns SIGINT and
// SIGTERM into a graceful shutdown and errors into exit codes.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"chargeonce"
	"chargeonce/internal/envflag"
	"chargeonce/internal/logging"
	"chargeonce/notify"
	"chargeonce/workflows"
)

// EnvPrefix starts the environment variable of every flag of chargeonce's
// commands.
const EnvPrefix = "CHARGEONCE"

// DevDataDir is where the dev stack keeps its data by default, relative to
// the directory it runs in.
const DevDataDir = ".chargeonce"

// FakeProviderEnvPrefix starts the environment variables of the fake
// provider's flags instead: docker-compose configures the fake as its own
// service, and its variables stay apart from chargeonce's.
const FakeProviderEnvPrefix = "FAKEPROVIDER"

// EnvName is the environment variable that sets the flag of a chargeonce
// command: CHARGEONCE_TEMPORAL_ADDRESS for temporal-address. Whatever sets a
// command's environment (the cluster, the chaos runs) names the variables
// through it, so that they are the ones Parse reads.
func EnvName(flag string) string { return envflag.Var(EnvPrefix, flag) }

// FakeProviderEnvName is the environment variable that sets the fake
// provider's flag: FAKEPROVIDER_RETENTION for retention.
func FakeProviderEnvName(flag string) string { return envflag.Var(FakeProviderEnvPrefix, flag) }

// UsageError is a bad flag or environment value; the command exits with 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Parse parses args and the environment into fs; its errors are
// UsageErrors, except for flag.ErrHelp.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	err := envflag.Parse(fs, args, EnvPrefix, getenv)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return UsageError{err}
}

// Run runs a command until SIGINT or SIGTERM and exits the process: 0 on
// success or --help, 2 on a usage error, 1 on any other error.
func Run(name string, run func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(ExitCode(os.Stderr, name, err))
}

// ExitCode reports err on w and returns the exit code for it.
func ExitCode(w io.Writer, name string, err error) int {
	var usage UsageError
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	// A package named like its command (worker) has prefixed the message
	// already.
	msg := err.Error()
	if !strings.HasPrefix(msg, name+": ") {
		msg = name + ": " + msg
	}
	if errors.As(err, &usage) {
		fmt.Fprintf(w, "%s (see --help)\n", msg)
		return 2
	}
	fmt.Fprintln(w, msg)
	return 1
}

// FlagEventNetworks names the flag of the internal networks that events
// may be sent to.
const FlagEventNetworks = "event-allowed-networks"

// EventNetworks defines --event-allowed-networks on fs, the internal
// networks that merchant event endpoints may point at and the dispatcher
// may connect to, for the processes that register endpoints (api, dev) or
// send events (worker, dev). Production allows none by default; defaults
// are dev's.
func EventNetworks(fs *flag.FlagSet, defaults notify.AllowedNetworks) *notify.AllowedNetworks {
	n := slices.Clone(defaults)
	fs.Var(&n, FlagEventNetworks, "comma-separated `CIDRs` of internal networks that merchant event endpoints may point at, such as 10.20.0.0/16 for a receiver in the deployment's own network;\nan endpoint at any other internal address (loopback, private, link-local, …) is refused, at registration and on every connection")
	return &n
}

// Capture defines --capture on fs, the merchant's capture mode for the
// checkouts that choose none (api.Settings.Capture), which the api
// command and dev take alike; it refuses any value but the two modes.
func Capture(fs *flag.FlagSet) *chargeonce.CaptureMode {
	mode := chargeonce.CaptureAutomatic
	fs.Func("capture", "the merchant's capture `mode` for checkouts that choose none (default automatic): automatic takes the money at once;\nmanual only authorizes it, for a later POST /api/orders/{id}/capture or /void", func(v string) error {
		if m := chargeonce.CaptureMode(v); m != "" && m.Valid() {
			mode = m
			return nil
		}
		return fmt.Errorf("%q is not a capture mode: %s or %s", v, chargeonce.CaptureAutomatic, chargeonce.CaptureManual)
	})
	return &mode
}

// TimingFlags are the payment timing flags of the processes that run a
// payment worker (worker, dev). The API has none: it reads the timing the
// workers publish in the merchant database.
type TimingFlags struct {
	Timing workflows.Timing
	// Replace is --replace-timing: this worker's timing replaces the
	// published one. Only the worker has the flag (WorkerTiming).
	Replace bool
}

// Timing defines the payment workflow's timing flags on fs. Dev takes them
// alone: its worker is the only one of its database, so its timing always
// replaces the one an earlier run published.
func Timing(fs *flag.FlagSet) *TimingFlags {
	d := workflows.DefaultTiming()
	defaults := d.Fields()
	f := &TimingFlags{}
	for i, field := range f.Timing.Fields() {
		fs.DurationVar(field.Value, field.Flag, *defaults[i].Value, field.Usage)
	}
	return f
}

// WorkerTiming defines the timing flags and --replace-timing on fs, for the
// worker, which shares its database with other workers: without the flag, a
// worker whose timing differs from the published one refuses to start.
func WorkerTiming(fs *flag.FlagSet) *TimingFlags {
	f := Timing(fs)
	fs.BoolVar(&f.Replace, "replace-timing", false, "replace the timing the running workers published in the merchant database with this one (otherwise a worker with another timing refuses to start)")
	return f
}

// LogFlags are the logging flags.
type LogFlags struct{ format, level string }

// Logging defines --log-format and --log-level on fs.
func Logging(fs *flag.FlagSet) *LogFlags {
	l := &LogFlags{}
	fs.StringVar(&l.format, "log-format", "text", "log `format`: text or json")
	fs.StringVar(&l.level, "log-level", "info", "log `level`: debug, info, warn or error")
	return l
}

// Logger builds the logger the flags ask for; a bad value is a UsageError.
func (l *LogFlags) Logger(w io.Writer) (*slog.Logger, error) {
	logger, err := logging.New(w, l.format, l.level)
	if err != nil {
		return nil, UsageError{err}
	}
	return logger, nil
}
