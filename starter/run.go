package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"chargeonce/api/wire"
	"chargeonce/client"
	"chargeonce/internal/envflag"
)

// Exit codes. Scripts branch on them, so each outcome has its own.
const (
	exitPaid     = 0
	exitOther    = 1
	exitUsage    = 2
	exitDeclined = 3
	exitPending  = 4
	exitConflict = 5
	// exitNotProcessed: the provider processed nothing, so nothing was
	// charged, and the order may be paid again.
	exitNotProcessed = 6
)

// defaultAPI is the address of the checkout API when neither --api nor
// CHARGEONCE_API says otherwise.
const defaultAPI = "http://localhost:8080"

// envAPI names the environment variable that sets the API address. It is
// the name internal/cli gives the flag --api; the starter keeps a copy so
// that its binary links none of the servers' packages, and a test holds the
// two together.
const envAPI = "CHARGEONCE_API"

// envAPIKey names the environment variable that holds the API key, after
// the same convention, under the same test.
const envAPIKey = "CHARGEONCE_API_KEY"

// devKeyFile is where the dev stack (go run ./dev) keeps its API key, under
// its default data directory; the starter reads it from there when neither
// --api-key nor CHARGEONCE_API_KEY gives a key, so that it works next to the
// dev stack as it is. A test holds it to the dev stack's names.
const devKeyFile = ".chargeonce/api.key"

const usage = `starter: create orders, check them out and follow their payments.

Usage:
  starter order create --amount 548.90 --currency TRY [--description TEXT]
  starter checkout --order N --card tok_visa [--wait [--wait-timeout 2m]]
  starter checkout --amount 548.90 --currency TRY --card tok_visa [--wait]
  starter checkout ... --capture manual [--on-deadline void|capture]
  starter capture --order N [--amount 12.50] [--key K]
  starter void --order N [--key K]
  starter status --order N
  starter refund --order N [--amount 12.50] [--reason TEXT] [--key K]
  starter refund --charge ch_000001 [--reason TEXT]
  starter settlement run --date 2026-03-14
  starter settlement show --date 2026-03-14

Every command takes:
  --api URL   the checkout API (default $CHARGEONCE_API, else http://localhost:8080)
  --api-key K the API key (default $CHARGEONCE_API_KEY, else the dev stack's
              .chargeonce/api.key in the current directory)
  --json      print one JSON object on stdout instead of text

checkout prints a timeline of the requests sent to the provider while it
waits, such as "attempt 1  timeout after 3.0s", "attempt 2  409 in flight",
"attempt 3  201 replayed", then the outcome. After a 202 (outcome unknown),
--wait keeps asking until the order settles or --wait-timeout passes.

refund refunds an order (or, with the operator scope, a charge), all that
is left unless --amount says less, under a new Idempotency-Key unless --key
gives the one to retry with, and prints the refund's requests and outcome.
With --capture manual, checkout only authorizes the amount (the order ends
authorized), and capture or void then ends the hold, under a new
Idempotency-Key unless --key gives the one to retry with; each prints the
move's requests and outcome. status shows an order's attempts, hold,
captures, voids and refunds.

settlement run settles a day now (the provider's report against the
succeeded payments) and prints what it found; settlement show prints the
day's last settlement.

Exit codes:
  0  paid or authorized (checkout), refunded (refund), captured or voided
     (capture, void), or success (order create, status, settlement)
  1  any other error (API unreachable, unknown order, server error, abandoned)
  2  usage error
  3  card declined (refund: the provider refused the refund; capture, void:
     the provider found the hold ended, or refused the request)
  4  payment pending: the outcome is not known yet; do not pay again
     (refund, capture, void: pending; it is settled without a retry)
     (settlement run: the run goes on; show it later)
  5  conflict: a previous payment with another card is still being verified
     (refund: the same --key is in flight, or there is nothing to refund;
     capture, void: the order holds no authorization, another capture or
     void is pending, or the same --key is in flight)
  6  not charged: the provider is unavailable and processed nothing; pay
     again after the Retry-After the API gives (a new attempt, a new key;
     refund, capture, void: nothing was done, send again)
`

// usageError is a mistake in the command line; it exits with exitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// options are the flags every command takes.
type options struct {
	api    string
	apiKey string
	json   bool
	// keyless is set when neither the flag, the environment nor the dev
	// stack's file gave a key, so requests go without one.
	keyless bool
}

// errorText is err's message, where the API's 401 to a request sent
// without a key says where the starter looks for one.
func errorText(err error, opts options) string {
	msg := err.Error()
	var p *client.Problem
	if opts.keyless && errors.As(err, &p) && p.Status == http.StatusUnauthorized {
		// The wrappers of p wrote its message when they were made.
		bare := p.Error()
		p.Detail += " (give one with --api-key or " + envAPIKey + ", or run where go run ./dev keeps " + devKeyFile + ")"
		msg = strings.Replace(msg, bare, p.Error(), 1)
	}
	return msg
}

// run is the whole program; main only wires it to the process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var (
		code int
		err  error
		// opts are the flags every command takes, as the command parsed
		// them.
		opts options
	)
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitPaid
	case "order":
		if len(args) < 2 || args[1] != "create" {
			err = usagef(`"order" takes the subcommand "create"`)
			break
		}
		code, err = orderCreateCommand(ctx, &opts, args[2:], stdout, stderr, getenv)
	case "checkout":
		code, err = checkoutCommand(ctx, &opts, args[1:], stdout, stderr, getenv)
	case "status":
		code, err = statusCommand(ctx, &opts, args[1:], stdout, stderr, getenv)
	case "settlement":
		code, err = settlementCommand(ctx, &opts, args[1:], stdout, stderr, getenv)
	case "refund":
		code, err = refundCommand(ctx, &opts, args[1:], stdout, stderr, getenv)
	case "capture", "void":
		code, err = moveCommand(args[0])(ctx, &opts, args[1:], stdout, stderr, getenv)
	default:
		err = usagef("unknown command %q", args[0])
	}
	var uerr *usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitPaid
	case errors.As(err, &uerr):
		fmt.Fprintf(stderr, "starter: %v\nRun \"starter --help\" for usage.\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "starter: %s\n", errorText(err, opts))
		// A command that names its outcome's exit code with the error,
		// such as a refund answered 409 or 503, exits with that code.
		if code != exitPaid {
			return code
		}
		return exitOther
	}
	return code
}

// newFlagSet returns a flag set with the flags every command takes. Its
// errors and help go to stderr.
func newFlagSet(name string, stderr io.Writer, opts *options) *flag.FlagSet {
	fs := flag.NewFlagSet("starter "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	envflag.SetUsage(fs, "")
	fs.StringVar(&opts.api, "api", "", "checkout API address (default $"+envAPI+", else "+defaultAPI+")")
	fs.StringVar(&opts.apiKey, "api-key", "", "API key (default $"+envAPIKey+", else the file "+devKeyFile+" if it exists)")
	fs.BoolVar(&opts.json, "json", false, "print one JSON object on stdout")
	return fs
}

// parseFlags parses args, refuses positional arguments, and builds the API
// client from --api or the environment.
func parseFlags(fs *flag.FlagSet, args []string, opts *options, getenv func(string) string) (*client.Client, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	base, source := opts.api, "--api"
	if base == "" {
		base, source = getenv(envAPI), envAPI
	}
	if base == "" {
		base = defaultAPI
	}
	if err := checkAPIAddress(base); err != nil {
		return nil, usagef("%s: %v", source, err)
	}
	key, err := apiKey(opts.apiKey, getenv)
	if err != nil {
		return nil, err
	}
	opts.keyless = key == ""
	return client.New(base, key), nil
}

// apiKey finds the API key: the flag, else the environment, else the dev
// stack's key file in the current directory. Without any, requests go
// without a key, and the API's 401 says what is missing.
func apiKey(flagValue string, getenv func(string) string) (string, error) {
	key, source := flagValue, "--api-key"
	if key == "" {
		key, source = getenv(envAPIKey), envAPIKey
	}
	if key == "" {
		data, err := os.ReadFile(devKeyFile)
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("read the dev stack's API key: %w", err)
		}
		key, source = strings.TrimSpace(string(data)), devKeyFile
	}
	// The key goes into a header: a control character or a space would
	// break it, or smuggle another.
	if strings.ContainsFunc(key, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return "", usagef("%s: the API key holds spaces or control characters", source)
	}
	return key, nil
}

func checkAPIAddress(base string) error {
	u, err := url.Parse(base)
	switch {
	case !strings.Contains(base, "://"):
		// "127.0.0.1:8080" fails to parse, and "localhost:8080" parses
		// with the scheme "localhost": either is an address without its
		// scheme.
		return fmt.Errorf("%q is not a URL; write http://%s", base, base)
	case err != nil:
		return fmt.Errorf("%q is not a URL", base)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q must start with http:// or https://", base)
	case u.Host == "":
		return fmt.Errorf("%q has no host", base)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Errorf("%q must be a plain address, without credentials, query or fragment", base)
	}
	return nil
}

func orderCreateCommand(ctx context.Context, opts *options, args []string, stdout, stderr io.Writer, getenv func(string) string) (int, error) {
	fs := newFlagSet("order create", stderr, opts)
	amount := fs.String("amount", "", "the order total as a decimal, such as 548.90 (required)")
	currency := fs.String("currency", "", "ISO 4217 currency code, such as TRY (required)")
	description := fs.String("description", "", "shown on the provider's dashboard")
	api, err := parseFlags(fs, args, opts, getenv)
	if err != nil {
		return 0, err
	}
	if *amount == "" || *currency == "" {
		return 0, usagef("order create needs --amount and --currency")
	}
	o, err := api.CreateOrder(ctx, *amount, *currency, *description)
	if err != nil {
		return 0, fmt.Errorf("create order: %w", err)
	}
	if opts.json {
		return exitPaid, writeJSONLine(stdout, o)
	}
	fmt.Fprintf(stdout, "order %d created: %s %s\n", o.ID, o.Total, o.Currency)
	return exitPaid, nil
}

func statusCommand(ctx context.Context, opts *options, args []string, stdout, stderr io.Writer, getenv func(string) string) (int, error) {
	fs := newFlagSet("status", stderr, opts)
	id := fs.Int64("order", 0, "the order number (required)")
	api, err := parseFlags(fs, args, opts, getenv)
	if err != nil {
		return 0, err
	}
	if *id <= 0 {
		return 0, usagef("status needs --order with a positive order number")
	}
	o, err := api.GetOrder(ctx, *id)
	if err != nil {
		return 0, fmt.Errorf("order %d: %w", *id, err)
	}
	if opts.json {
		return exitPaid, writeJSONLine(stdout, o)
	}
	printOrder(stdout, o)
	return exitPaid, nil
}

func checkoutCommand(ctx context.Context, opts *options, args []string, stdout, stderr io.Writer, getenv func(string) string) (int, error) {
	fs := newFlagSet("checkout", stderr, opts)
	id := fs.Int64("order", 0, "the order to pay; or give --amount and --currency to create one")
	amount := fs.String("amount", "", "create an order with this total first, such as 548.90")
	currency := fs.String("currency", "", "the currency of --amount, such as TRY")
	description := fs.String("description", "", "the description of the order created with --amount")
	card := fs.String("card", "", "the card token, such as tok_visa (required)")
	wait := fs.Bool("wait", false, "after a 202, keep asking until the order settles")
	waitTimeout := fs.Duration("wait-timeout", 2*time.Minute, "how long --wait keeps asking")
	capture := fs.String("capture", "", "automatic takes the money at once; manual only authorizes it, for a later capture or void (default: the merchant's mode)")
	onDeadline := fs.String("on-deadline", "", "with --capture manual: what the hold's deadline does, void or capture (default void)")
	api, err := parseFlags(fs, args, opts, getenv)
	if err != nil {
		return 0, err
	}
	creating := *amount != "" || *currency != ""
	switch {
	case *card == "":
		return 0, usagef("checkout needs --card")
	case *id != 0 && creating:
		return 0, usagef("checkout takes either --order or --amount with --currency, not both")
	case creating && (*amount == "" || *currency == ""):
		return 0, usagef("checkout needs both --amount and --currency to create an order")
	case !creating && *id <= 0:
		return 0, usagef("checkout needs --order with a positive order number, or --amount and --currency")
	case *waitTimeout <= 0:
		return 0, usagef("--wait-timeout must be positive")
	case *onDeadline != "" && *capture != "manual":
		return 0, usagef("--on-deadline needs --capture manual")
	}
	out := &timeline{w: stdout, quiet: opts.json}
	if creating {
		o, err := api.CreateOrder(ctx, *amount, *currency, *description)
		if err != nil {
			return 0, fmt.Errorf("create order: %w", err)
		}
		*id = o.ID
		out.printf("order %d created: %s %s\n", o.ID, o.Total, o.Currency)
	}
	c := &checkoutRun{api: api, out: out, orderID: *id, req: wire.CheckoutRequest{CardToken: *card}}
	// The API checks the values, and names the allowed ones.
	if *capture != "" {
		c.req.Capture = capture
	}
	if *onDeadline != "" {
		c.req.OnDeadline = onDeadline
	}
	if *wait {
		c.waitTimeout = *waitTimeout
	}
	res, err := c.run(ctx)
	if err != nil {
		return 0, err
	}
	if opts.json {
		if err := writeJSONLine(stdout, res); err != nil {
			return 0, err
		}
	}
	return res.exitCode(), nil
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
