// Command fakeprovider serves the fake card payment provider of the provider
// HTTP contract, with its chaos modes and admin API, on its own.
//
// Every setting comes from a flag or from its environment variable; a flag
// overrides the variable. Run it with --help for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"chargeonce/fakeprovider"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options is everything the command needs, parsed and validated.
type options struct {
	addr            string
	shutdownTimeout time.Duration
	provider        fakeprovider.Config
}

// validate reports the first problem that makes o unusable.
func (o options) validate() error {
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		return fmt.Errorf("addr must be host:port such as :8099, got %q", o.addr)
	}
	if o.shutdownTimeout <= 0 {
		return fmt.Errorf("shutdown timeout must be positive, got %s", o.shutdownTimeout)
	}
	return o.provider.Validate()
}

// setting is one flag and the environment variable behind it.
type setting struct {
	flag, env, def, usage string
}

var settings = []setting{
	{"addr", "FAKEPROVIDER_ADDR", ":8099", "address to listen on"},
	{"mode", "FAKEPROVIDER_MODE", "normal", "chaos mode: normal, slow, drop, error, lost_response or rate_limit"},
	{"delay", "FAKEPROVIDER_DELAY", "0s", "processing time in slow mode; time before a 504 in drop mode (0s holds a dropped request until the client gives up)"},
	{"rate", "FAKEPROVIDER_RATE", "1", "probability, 0 to 1, that a request misbehaves in the error, lost_response and rate_limit modes"},
	{"seed", "FAKEPROVIDER_SEED", "1", "seed of the random source behind the rate, so that a run can be repeated"},
	{"retention", "FAKEPROVIDER_RETENTION", "24h", "how long an idempotency key is remembered (at least 1s)"},
	{"shutdown-timeout", "FAKEPROVIDER_SHUTDOWN_TIMEOUT", "15s", "how long shutdown waits for charges in progress and open requests"},
}

// parseConfig reads the settings from args and getenv (flags override the
// environment) and validates them. A value that does not parse is reported
// with the flag or variable it came from; a combination that is invalid is
// reported with every setting that was given. It returns flag.ErrHelp for
// --help.
func parseConfig(args []string, getenv func(string) string) (options, error) {
	fs := flag.NewFlagSet("fakeprovider", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flagValues := make(map[string]*string, len(settings))
	for _, s := range settings {
		flagValues[s.flag] = fs.String(s.flag, "", s.usage)
	}
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	onCommandLine := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })

	r := resolver{values: make(map[string]resolved, len(settings))}
	for _, s := range settings {
		switch {
		case onCommandLine[s.flag]:
			r.values[s.flag] = resolved{*flagValues[s.flag], "--" + s.flag}
			r.given = append(r.given, "--"+s.flag+"="+*flagValues[s.flag])
		case getenv(s.env) != "":
			r.values[s.flag] = resolved{getenv(s.env), s.env}
			r.given = append(r.given, s.env+"="+getenv(s.env))
		default:
			r.values[s.flag] = resolved{s.def, "the default of --" + s.flag}
		}
	}

	opts := options{
		addr:            r.values["addr"].value,
		shutdownTimeout: parse(&r, "shutdown-timeout", time.ParseDuration),
		provider: fakeprovider.Config{
			Mode: fakeprovider.Mode{
				Name:  fakeprovider.ModeName(r.values["mode"].value),
				Delay: parse(&r, "delay", time.ParseDuration),
				Rate:  parse(&r, "rate", func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }),
				Seed:  parse(&r, "seed", func(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }),
			},
			Retention: parse(&r, "retention", time.ParseDuration),
		},
	}
	if r.err != nil {
		return options{}, r.err
	}
	if err := opts.validate(); err != nil {
		return options{}, fmt.Errorf("invalid settings (%s): %w", strings.Join(r.given, " "), err)
	}
	return opts, nil
}

// resolved is a setting's raw value and where it came from.
type resolved struct {
	value, source string
}

// resolver holds the raw values and the first parse error.
type resolver struct {
	values map[string]resolved
	given  []string
	err    error
}

// parse converts the named setting, remembering the first failure with the
// flag or variable that supplied the value.
func parse[T any](r *resolver, name string, conv func(string) (T, error)) T {
	v := r.values[name]
	t, err := conv(v.value)
	if err != nil && r.err == nil {
		var numErr *strconv.NumError
		if errors.As(err, &numErr) {
			err = numErr.Err
		}
		r.err = fmt.Errorf("invalid value %q for %s: %v", v.value, v.source, err)
	}
	return t
}

// usage prints the help text.
func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("Usage: fakeprovider [flags]\n\n")
	b.WriteString("Serves the fake card payment provider (POST /v1/charges with Idempotency-Key,\n")
	b.WriteString("GET /v1/charges, GET /v1/idempotency) and its admin API under /_admin/.\n")
	b.WriteString("Every flag can also be set by its environment variable; a flag wins.\n\n")
	for _, s := range settings {
		fmt.Fprintf(&b, "  --%s (env %s, default %s)\n        %s\n", s.flag, s.env, s.def, s.usage)
	}
	b.WriteString("\nExample: fakeprovider --mode slow --delay 5s\n")
	_, _ = io.WriteString(w, b.String())
}

// run is the whole command; it returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	opts, err := parseConfig(args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "fakeprovider: %v\nRun 'fakeprovider --help' for usage.\n", err)
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	opts.provider.Logger = logger
	p, err := fakeprovider.New(opts.provider)
	if err != nil {
		logger.Error("cannot start the provider", "err", err)
		return exitFailed
	}
	ln, err := net.Listen("tcp", opts.addr)
	if err != nil {
		logger.Error("cannot listen", "addr", opts.addr, "err", err)
		return exitFailed
	}
	if err := serve(ctx, ln, p, opts.shutdownTimeout, logger); err != nil {
		logger.Error("server stopped", "err", err)
		return exitFailed
	}
	return exitOK
}

// serve serves p on ln until ctx is done, then shuts down gracefully: the
// provider stops taking new charges and drains those in progress, and the
// server finishes its open requests, both within shutdownTimeout.
func serve(ctx context.Context, ln net.Listener, p *fakeprovider.Provider, shutdownTimeout time.Duration, logger *slog.Logger) error {
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		// No write timeout: the slow and drop modes answer late on purpose.
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	mode := p.Mode()
	logger.Info("fake provider listening", "addr", ln.Addr().String(), "mode", mode.Name,
		"delay", mode.Delay, "rate", mode.Rate, "seed", mode.Seed, "retention", p.Retention())

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", shutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	// The provider closes first: it releases dropped requests that would
	// otherwise keep Shutdown waiting, and drains charges in progress.
	closeErr := p.Close(shutdownCtx)
	shutdownErr := srv.Shutdown(shutdownCtx)
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return errors.Join(closeErr, shutdownErr, err)
	}
	if err := errors.Join(closeErr, shutdownErr); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}
