// Package chaos is the fault-injection run: it drives checkouts through the
// real checkout API while it breaks what can break in production, then waits
// for every attempt to settle and checks every invariant.
//
// The stack runs in this process with its Temporal server on a SQLite file
// and the merchant database on SQLite or on a fresh PostgreSQL database;
// the payment workers run as separate processes on the same app database,
// so that they can be killed. The faults:
//   - the provider's chaos mode is switched during the run: slow past the
//     attempt timeout, dropped requests, errors, lost responses, rate limits;
//   - a worker process is killed with SIGKILL in the middle of charges and
//     started again, while the other worker takes over its activities;
//   - the Temporal server is stopped and started again on its file;
//   - some checkouts lose their workflow start after storing the key, as when
//     the API crashes between its commit and its call to Temporal, so that
//     the outbox sweep must recover them;
//   - the provider forgets keys older than its retention, and customers
//     retry after that;
//   - on PostgreSQL, the database server is restarted, which fails every
//     query in flight and every pooled connection;
//   - the provider's events (signed webhooks to the API) are delayed,
//     dropped, duplicated and reordered, and forged events are posted to
//     the API, which must refuse every one.
//
// With a backup provider (Config.Backup), the run has two fake providers,
// and the payments move from the first to the backup when the first
// charged nothing. The mode switches then break the first alone, in an
// outage, lost responses, slow answers, drops and rate limits, then its
// recovery, while the backup stays healthy, and both at once for a part
// of the run, when checkouts must be refused with the promise that nothing
// was charged. The summary counts the checkouts that failed over, those
// paid at the backup, and those refused honestly, and the checker counts
// every order's charges across both providers.
//
// Customers retry after a pending answer, double-click, switch cards while a
// payment is pending (which must be refused) and after a decline (which must
// be allowed). Some check out with a manual capture and then capture the
// hold (all or part), void it, do both at once, or leave it to its
// deadline, retrying each with its own Idempotency-Key; the provider's
// short hold window brings the deadlines and expiries within the run.
// Everything runs on loopback and is bounded in count and time.
package chaos

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/dev/stack"
	"chargeonce/dev/temporalserver"
	"chargeonce/fakeprovider"
	"chargeonce/internal/codec"
	"chargeonce/internal/pgdb"
	"chargeonce/internal/webhook"
	"chargeonce/provider/dialect"
	"chargeonce/store"
	"chargeonce/verify/invariant"
	"chargeonce/workflows"
)

// Timing is the payment timing of a run: the production defaults shrunk so
// that a few hundred checkouts, with every reconciliation and abandonment
// they cause, settle within minutes.
func Timing() workflows.Timing {
	return workflows.Timing{
		AttemptTimeout: 300 * time.Millisecond,
		SendBudget:     1500 * time.Millisecond,
		RetryInterval:  200 * time.Millisecond,
		MinAge:         2 * time.Second,
		Interval:       time.Second,
		AbandonAfter:   8 * time.Second,
		// A deadline a quarter of holdWindow before the expiry leaves its
		// void the send budget and several lookups under the faults.
		HoldMargin:  holdWindow / 4,
		HoldWarning: 5 * time.Second,
	}
}

// DefaultRetention is the provider's key retention in a run: well past the
// abandon deadline, and short enough that keys expire during the run.
const DefaultRetention = 20 * time.Second

// Config sizes a run. DefaultConfig gives the CI-sized counts; the other
// zero fields take the defaults their comments name.
type Config struct {
	// WorkerBinary is the worker command, built by BuildWorker. Required.
	WorkerBinary string
	// Checkouts is how many orders are created and paid.
	Checkouts int
	// Clients is how many customers check out at once.
	Clients int
	// WorkerKills is how many times a worker process is killed.
	WorkerKills int
	// ServerRestarts is how many times the Temporal server restarts.
	ServerRestarts int
	// ModeSwitches is how many times the provider's chaos mode changes.
	ModeSwitches int
	// LostStarts is the share of checkouts whose workflow start is lost
	// after the key is stored.
	LostStarts float64
	// LateRetries is how many paid or settled orders are retried after
	// their key's retention has passed.
	LateRetries int
	// APIKills is how many times an API instance is killed with SIGKILL
	// while checkouts run through it; only on an external stack
	// (RunExternal), whose API instances are processes.
	APIKills int
	// WebhookSwitches is how many times the webhook chaos of the provider's
	// events changes: delay, drops, duplicates, reordering.
	WebhookSwitches int
	// ForgedEvents is how many forged events are posted to the API.
	ForgedEvents int
	// LateCharges is how many late charges of each order of arrival the
	// provider finishes after the customers are done, for attempts the
	// run abandoned: before the customer pays again
	// (the order adopts the charge) and after a newer attempt paid the
	// order (the charge is refunded). Fewer are planted when fewer such
	// attempts exist.
	LateCharges int
	// DatabaseURL, a postgres:// URL, runs the merchant database on
	// PostgreSQL: the run creates a fresh database there with the URL's
	// role, which needs CREATEDB, and drops it at the end. Empty means a
	// SQLite file in DataDir.
	DatabaseURL string
	// PostgresRestarts is how many times the PostgreSQL server is restarted;
	// it needs a PostgreSQL DatabaseURL.
	PostgresRestarts int
	// PostgresRestartCommand restarts the PostgreSQL server and returns once
	// it accepts connections again; empty means `pg_ctlcluster VERSION main
	// restart` with the newest server installed under /usr/lib/postgresql,
	// the cluster .ci/postgres.sh starts.
	PostgresRestartCommand []string
	// Retention is the provider's published key retention
	// (DefaultRetention). It must exceed Timing.AbandonAfter, or the
	// workers refuse to start.
	Retention time.Duration
	// Timing is the payment timing of the worker processes, which publish
	// it for the stack's checkouts; zero means Timing().
	Timing workflows.Timing
	// CheckoutBudget is how long a checkout waits before answering pending
	// (the charge budget plus 500ms).
	CheckoutBudget time.Duration
	// ProviderAPI is the dialect the worker processes speak to the fake
	// provider, dialect.IETF or dialect.Stripe; empty means IETF.
	ProviderAPI string
	// Backup runs a second fake provider, named stack.BackupName, beside
	// the first: every payment goes to the first and moves to the backup,
	// within its checkout, when the first charged nothing. The worker
	// processes reach both through a routing file in DataDir, and the
	// checker counts every order's charges across both. The mode switches
	// then take the first provider through an outage, lost responses, slow
	// answers, drops, rate limits and its recovery while the backup stays
	// healthy, and take both down at once for a part of the run, when
	// checkouts must be refused with the promise that nothing was charged
	// (backupModes).
	Backup bool
	// SettleTimeout bounds the wait for every attempt to settle at the end
	// (AbandonAfter plus a minute).
	SettleTimeout time.Duration
	// Seed makes the customers' choices and the provider's chance repeatable.
	Seed uint64
	// DataDir keeps the databases and the worker logs; empty means a
	// temporary directory, removed at the end.
	DataDir string
	// Logger tells the run's progress; nil discards.
	Logger *slog.Logger
	// StackLogs receives the logs of the stack (API, provider, Temporal);
	// nil discards. The workers log to files in DataDir.
	StackLogs io.Writer
	// Deploys are new versions of the workers deployed in turn while
	// customers pay, each followed by the drain and stop of the version
	// before it, or for a bad one by a rollback; only on an external stack
	// that starts worker versions (External.Versions).
	Deploys []Deploy
}

// DefaultConfig is the CI-sized run on SQLite: 200 checkouts by 12
// customers, 3 worker kills, 1 Temporal restart, 12 provider mode switches,
// 5% lost starts, 20 late retries, 10 webhook chaos switches, 8 forged
// events and 3 late charges of each order of arrival. A count set to zero
// turns its fault off.
func DefaultConfig() Config {
	return Config{
		Checkouts:      200,
		Clients:        12,
		WorkerKills:    3,
		ServerRestarts: 1,
		ModeSwitches:   12,
		LostStarts:     0.05,
		LateRetries:    20,
		// The provider's events are on in every run; these vary them.
		WebhookSwitches: 10,
		ForgedEvents:    8,
		LateCharges:     3,
	}
}

func (c Config) withDefaults() Config {
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.Timing == (workflows.Timing{}) {
		c.Timing = Timing()
	}
	if c.CheckoutBudget == 0 {
		c.CheckoutBudget = c.Timing.SendBudget + 500*time.Millisecond
	}
	if c.SettleTimeout == 0 {
		c.SettleTimeout = c.Timing.AbandonAfter + time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.StackLogs == nil {
		c.StackLogs = io.Discard
	}
	return c
}

// Validate reports the first problem that makes c unusable, apart from the
// worker binary, which Run checks, so that a command can validate its flags
// before it builds the binary.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Checkouts < 1 || c.Clients < 1:
		return fmt.Errorf("chaos: checkouts (%d) and clients (%d) must be positive; DefaultConfig sizes a CI run", c.Checkouts, c.Clients)
	case c.WorkerKills < 0 || c.ServerRestarts < 0 || c.ModeSwitches < 0 || c.LateRetries < 0 || c.PostgresRestarts < 0 || c.APIKills < 0 ||
		c.WebhookSwitches < 0 || c.ForgedEvents < 0 || c.LateCharges < 0:
		return errors.New("chaos: fault counts must not be negative")
	case c.DatabaseURL != "" && !isPostgresURL(c.DatabaseURL):
		return errors.New("chaos: the database URL must start with postgres:// or postgresql://; leave it empty to run on SQLite")
	case c.PostgresRestarts > 0 && c.DatabaseURL == "":
		return errors.New("chaos: PostgreSQL restarts need a PostgreSQL database URL")
	case !(c.LostStarts >= 0 && c.LostStarts <= 1):
		return fmt.Errorf("chaos: lost-start share %v is not between 0 and 1", c.LostStarts)
	case c.Retention <= c.Timing.AbandonAfter:
		return fmt.Errorf("chaos: retention %v must exceed abandon-after %v", c.Retention, c.Timing.AbandonAfter)
	case c.CheckoutBudget <= 0 || c.SettleTimeout <= 0:
		return errors.New("chaos: checkout budget and settle timeout must be positive")
	case c.ProviderAPI != "" && dialect.Check(c.ProviderAPI) != nil:
		return fmt.Errorf("chaos: provider %w", dialect.Check(c.ProviderAPI))
	}
	return c.Timing.Validate()
}

// Fault kinds, as counted in Summary.Faults.
const (
	FaultMode          = "provider mode switch"
	FaultWorkerKill    = "worker SIGKILL"
	FaultServerRestart = "Temporal restart"
	FaultLostStart     = "lost workflow start"
	FaultKeysExpired   = "provider keys expired"
	FaultPostgres      = "PostgreSQL restart"
	FaultWebhookChaos  = "webhook chaos switch"
	FaultForgedEvent   = "forged event"
)

// Customer behaviours, as counted in Summary.Behaviours.
const (
	BehaviourDoubleClick  = "double click"
	BehaviourRetry        = "retry after pending"
	BehaviourSwitchWhile  = "card switch while pending"
	BehaviourSwitchAfter  = "card switch after decline or abandonment"
	BehaviourRetryLost    = "retry after lost start"
	BehaviourLateRetry    = "retry after key retention"
	BehaviourLateExpired  = "retry after key retention, key expired"
	BehaviourDeclineToken = "decline token"
	BehaviourServerError  = "retry after a server error during an outage"
	// BehaviourOrderAgain: the customer creates the order again after a
	// server error during an outage. The first request may have stored an
	// order before the error, which then stays unpaid, as an abandoned cart.
	BehaviourOrderAgain = "order created again after a server error during an outage"
	// BehaviourRetryNotProcessed: the customer pays again after a 503 that
	// said nothing was charged.
	BehaviourRetryNotProcessed = "retry after nothing was charged"
)

// Summary is what a run did and what the checker found.
type Summary struct {
	Checkouts int
	// CheckoutRequests counts every POST .../checkout sent to the API.
	CheckoutRequests int
	// Answers counts the API's answers by HTTP status; 0 is no answer.
	Answers    map[int]int
	Behaviours map[string]int
	Faults     map[string]int
	// The providers' view at the end, summed over them: their charges that
	// took money (captured at once or captured holds), the failed ones, and
	// the charge requests; Report.Holds counts the holds.
	ChargesSucceeded, ChargesFailed, ChargeRequests int
	// LateRequests counts charge and refund requests that reached the
	// provider with a key first seen longer than the retention before:
	// each could have charged or refunded again.
	LateRequests int
	// RefundsUnsettled counts the refunds left pending that could still
	// settle (settleableRefunds): one the provider holds, or one inside
	// its send window, which the workflow sends again until it settles.
	// Each is a refund that did not finish by itself.
	RefundsUnsettled int
	Orders           map[chargeonce.OrderStatus]int
	Attempts         map[chargeonce.AttemptStatus]int
	// EventTries counts the provider's event delivery tries by outcome
	// (fakeprovider.Delivery.Outcome).
	EventTries map[string]int
	// FailedOver counts the attempts that a checkout sent to the backup
	// after the first provider charged nothing (Config.Backup), and
	// PaidAtBackup those of them that succeeded.
	FailedOver, PaidAtBackup int
	// Refused counts the checkouts answered 503 with the promise that
	// nothing was charged (wire.ProblemProviderUnavailable), which the
	// checker holds (invariant 7).
	Refused int
	// Unexpected lists answers that break the checkout contract, such as
	// another card accepted while a payment is pending.
	Unexpected []string
	// Deploys are what Config.Deploys did, in order.
	Deploys []Deployed
	Report  invariant.Report
	Wall    time.Duration
}

// OK reports whether the run kept every promise.
func (s Summary) OK() bool {
	return s.Report.OK() && len(s.Unexpected) == 0 && s.LateRequests == 0 &&
		s.Attempts[chargeonce.AttemptOpen] == 0 && s.RefundsUnsettled == 0
}

// String renders the summary as a table, followed by the checker's report.
func (s Summary) String() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	holds := 0
	for _, n := range s.Report.Holds {
		holds += n
	}
	row("checkouts (orders)", s.Checkouts)
	row("checkout requests", s.CheckoutRequests)
	for _, code := range sortedInts(s.Answers) {
		name := "no answer"
		if code != 0 {
			name = strconv.Itoa(code) + " " + http.StatusText(code)
		}
		row("  answered "+name, s.Answers[code])
	}
	for _, k := range sortedStrings(s.Behaviours) {
		row("  "+k, s.Behaviours[k])
	}
	row("charge requests at the providers", s.ChargeRequests)
	row("charges succeeded / failed", fmt.Sprintf("%d / %d", s.ChargesSucceeded, s.ChargesFailed))
	for _, k := range sortedStrings(s.Faults) {
		row("fault: "+k, s.Faults[k])
	}
	for _, k := range sortedStrings(s.EventTries) {
		row("event tries: "+k, s.EventTries[k])
	}
	row("requests with a key past retention", s.LateRequests)
	row("refunds left pending that could settle", s.RefundsUnsettled)
	row("orders paid / placed / pending", fmt.Sprintf("%d / %d / %d",
		s.Orders[chargeonce.OrderPaid], s.Orders[chargeonce.OrderPlaced], s.Orders[chargeonce.OrderPaymentPending]))
	row("checkouts failed over to the backup / paid there", fmt.Sprintf("%d / %d", s.FailedOver, s.PaidAtBackup))
	row("checkouts refused honestly (503, nothing charged)", s.Refused)
	row("holds authorized / captured / voided / expired / still authorized", fmt.Sprintf("%d / %d / %d / %d / %d",
		holds, s.Report.Holds[chargeonce.HoldCaptured], s.Report.Holds[chargeonce.HoldVoided],
		s.Report.Holds[chargeonce.HoldExpired], s.Report.Holds[chargeonce.HoldAuthorized]))
	for _, k := range sortedStrings(s.Report.Moves) {
		row("  "+k, s.Report.Moves[k])
	}
	row("late charges adopted / refunded", fmt.Sprintf("%d / %d",
		s.Report.LateCharges[chargeonce.LateChargeAdopted], s.Report.LateCharges[chargeonce.LateChargeRefunded]))
	row("attempts succeeded / declined / abandoned / not processed / failed / open", fmt.Sprintf("%d / %d / %d / %d / %d / %d",
		s.Attempts[chargeonce.AttemptSucceeded], s.Attempts[chargeonce.AttemptDeclined], s.Attempts[chargeonce.AttemptAbandoned],
		s.Attempts[chargeonce.AttemptNotProcessed], s.Attempts[chargeonce.AttemptFailed], s.Attempts[chargeonce.AttemptOpen]))
	row("unexpected answers", len(s.Unexpected))
	row("invariant violations", len(s.Report.Violations))
	row("wall time", s.Wall.Round(100*time.Millisecond))
	_ = tw.Flush()
	for _, u := range s.Unexpected {
		fmt.Fprintf(&b, "unexpected: %s\n", u)
	}
	b.WriteString(s.Report.String())
	return b.String()
}

// Run runs the stack, the workers, the customers and the faults, and
// returns the summary. The error reports a run that could not be carried
// out; broken promises are in the Summary.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	if cfg.WorkerBinary == "" {
		return Summary{}, errors.New("chaos: the worker binary is required; build it with BuildWorker")
	}
	if cfg.APIKills > 0 || len(cfg.Deploys) > 0 {
		return Summary{}, errors.New("chaos: API kills and deploys need an external stack (RunExternal): the stack's API and workers run in this process")
	}
	cfg = cfg.withDefaults()
	began := time.Now()
	dir := cfg.DataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "chargeonce-chaos-")
		if err != nil {
			return Summary{}, fmt.Errorf("chaos: data directory: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if cfg.PostgresRestarts > 0 && len(cfg.PostgresRestartCommand) == 0 {
		command, err := defaultRestartCommand()
		if err != nil {
			return Summary{}, err
		}
		cfg.PostgresRestartCommand = command
	}
	var databaseURL string
	if cfg.DatabaseURL != "" {
		u, drop, err := pgdb.Fresh(ctx, cfg.DatabaseURL, "chargeonce_chaos_")
		if err != nil {
			return Summary{}, err
		}
		// Deferred first, so it runs after the stack and the workers have
		// closed their connections.
		defer func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if err := drop(ctx); err != nil {
				cfg.Logger.Warn("run database not dropped", "error", err)
			}
		}()
		databaseURL = u
	}
	keys, err := newKeyring()
	if err != nil {
		return Summary{}, err
	}
	// The stack's API and the worker processes share one card-hash key.
	cardHashKey := chargeonce.NewCardHashKey()
	// The backup is the same fake, with its own books, chaos and events.
	fake := fakeprovider.Config{Retention: cfg.Retention, HoldWindow: holdWindow, Webhooks: fakeprovider.WebhookConfig{Schedule: webhookSchedule}}
	var backup *fakeprovider.Config
	if cfg.Backup {
		backup = &fake
	}
	st, err := stack.Start(ctx, stack.Config{
		CardHashKey:     cardHashKey,
		DatabaseURL:     databaseURL,
		DataDir:         dir,
		Host:            "127.0.0.1",
		UIPort:          -1,
		CheckoutBudget:  cfg.CheckoutBudget,
		Provider:        fake,
		Backup:          backup,
		ProviderEvents:  true,
		ExternalWorkers: true,
		CodecKeys:       keys,
		Logger:          slog.New(slog.NewTextHandler(cfg.StackLogs, nil)),
	})
	if err != nil {
		return Summary{}, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := st.Close(ctx); err != nil {
			cfg.Logger.Warn("stack did not close cleanly", "error", err)
		}
	}()

	args, err := workerArgs(cfg, st, dir, keys, cardHashKey)
	if err != nil {
		return Summary{}, err
	}
	workers := make([]*workerProcess, 2)
	for i := range workers {
		workers[i] = &workerProcess{
			name:    "worker-" + strconv.Itoa(i+1),
			bin:     cfg.WorkerBinary,
			args:    args,
			logPath: filepath.Join(dir, "worker-"+strconv.Itoa(i+1)+".log"),
		}
		if err := workers[i].start(); err != nil {
			return Summary{}, err
		}
		defer func() {
			if err := workers[i].stop(10 * time.Second); err != nil {
				cfg.Logger.Warn("worker did not stop cleanly", "worker", workers[i].name, "error", err)
			}
		}()
	}

	if err := awaitPublishedTiming(ctx, st.Checkout(), cfg.Timing); err != nil {
		return Summary{}, err
	}

	lost, closeLost, err := lostStartCheckout(st.Store(), st.CardHasher())
	if err != nil {
		return Summary{}, err
	}
	defer closeLost()

	r := newRun(cfg, embeddedStack{st}, lost)
	r.workers = workers
	if err := r.execute(ctx); err != nil {
		return Summary{}, err
	}
	return r.finish(ctx, began)
}

// newKeyring makes a fresh payload key for the stack and the workers.
func newKeyring() (string, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("chaos: payload key: %w", err)
	}
	return "chaos:" + base64.StdEncoding.EncodeToString(key), nil
}

// workerSettings are the flags, by name, with which a run's worker
// processes run, on the embedded stack or an external one: the run's
// timing, a sweep as frequent as the lookups, and a provider timeout that
// ends a dropped request well within the run.
func workerSettings(cfg Config) map[string]string {
	settings := map[string]string{"sweep-every": cfg.Timing.Interval.String(), "provider-timeout": providerTimeout.String()}
	// A timing that leaves fields zero means their defaults, which a
	// process's flag must then spell: a zero flag is refused.
	timing := cfg.Timing.WithDefaults()
	for _, f := range timing.Fields() {
		settings[f.Flag] = f.Value.String()
	}
	return settings
}

// providerTimeout bounds one exchange with a provider in a run.
const providerTimeout = 10 * time.Second

// workerArgs are the flags of the worker processes on the embedded stack
// st. With a backup, a routing file in dir names both providers in place
// of the provider flags, which the worker refuses beside it.
func workerArgs(cfg Config, st *stack.Stack, dir, keys, cardHashKey string) ([]string, error) {
	settings := workerSettings(cfg)
	maps.Copy(settings, map[string]string{
		"temporal-address":   st.TemporalAddress(),
		"temporal-namespace": temporalserver.DefaultNamespace,
		"database-url":       st.DatabaseURL(),
		"codec-keys":         keys,
		"codec-token":        codec.NewToken(),
		"card-hash-key":      cardHashKey,
		"listen":             "127.0.0.1:0",
	})
	switch {
	case cfg.Backup:
		path, err := writeRouting(dir, cfg, fakes(embeddedStack{st}))
		if err != nil {
			return nil, err
		}
		delete(settings, "provider-timeout")
		settings["routing"] = path
	case cfg.ProviderAPI == dialect.Stripe:
		// The fake's search reads its books at once.
		maps.Copy(settings, map[string]string{"provider": dialect.Stripe, "provider-url": st.ProviderURL(),
			"stripe-api-key": fakeprovider.StripeTestKey, "stripe-search-delay": "0s"})
	default:
		settings["provider-url"] = st.ProviderURL()
	}
	args := make([]string, 0, 2*len(settings))
	for _, flag := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, "--"+flag, settings[flag])
	}
	return args, nil
}

// timingTimeout bounds the wait for the first worker to publish its timing.
const timingTimeout = time.Minute

// awaitPublishedTiming waits until a worker process has published the run's
// timing: the stack's checkouts read it there, and answer 503 until then.
func awaitPublishedTiming(ctx context.Context, svc *checkout.Service, want workflows.Timing) error {
	ctx, cancel := context.WithTimeout(ctx, timingTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		published, err := svc.Timing(ctx)
		if err == nil && published != want {
			return fmt.Errorf("chaos: the workers published the timing %s, not the run's %s", published, want)
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: no worker published its timing within %v (see the worker logs): %w", timingTimeout, err)
		case <-tick.C:
		}
	}
}

// lostStartCheckout is a checkout service whose Temporal cannot be reached:
// it stores the key and then loses the workflow start, which is what a
// crash of the API between its commit and its call to Temporal leaves
// behind. Only the outbox sweep, or the customer's retry, can recover it.
// It hashes cards with the stack's hasher, so that the retry finds the
// attempt.
func lostStartCheckout(st store.Store, hasher chargeonce.CardHasher) (*checkout.Service, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("chaos: find an unused port: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return nil, nil, err
	}
	unreachable, err := client.NewLazyClient(client.Options{HostPort: addr, Namespace: temporalserver.DefaultNamespace})
	if err != nil {
		return nil, nil, fmt.Errorf("chaos: client for lost starts: %w", err)
	}
	svc, err := checkout.New(checkout.Config{Store: st, Temporal: unreachable, CardHasher: hasher, Budget: 200 * time.Millisecond})
	if err != nil {
		unreachable.Close()
		return nil, nil, err
	}
	return svc, unreachable.Close, nil
}

// target is the stack a run drives: the one Run starts in this process,
// or an external one.
type target interface {
	APIURL() string
	// APIKey is a key with every scope, which the customers send.
	APIKey() string
	// ProviderURL is the first fake provider's base URL, and BackupURL the
	// backup's, empty without one.
	ProviderURL() string
	BackupURL() string
	Store() store.Store
	Client() client.Client
	RestartTemporal(ctx context.Context) error
	// WebhookSecret is the secret the API verifies the provider's events
	// with.
	WebhookSecret() (webhook.Secret, error)
}

// run is the state of one Run.
type run struct {
	cfg     Config
	stack   target
	workers []*workerProcess
	lost    *checkout.Service
	http    *http.Client
	// processes, on an external stack, kills and starts its processes,
	// named workerNames, apiNames and postgresName; nil on the embedded
	// stack.
	processes             Processes
	workerNames, apiNames []string
	postgresName          string
	// versions starts the workers of the deploys; version is the build ID
	// of the current version, and previousWorkers are the worker
	// processes of the version before the last deploy, until they stop.
	versions        WorkerVersions
	version         string
	previousWorkers []string
	deployed        []Deployed

	mu     sync.Mutex
	orders []int64
	cards  map[int64]string
	// manual marks the orders whose checkouts ask for a manual capture.
	manual   map[int64]bool
	requests int
	answers  map[int]int
	// refused counts the checkouts answered 503, nothing charged.
	refused    int
	behave     map[string]int
	faults     map[string]int
	unexpected []string
	outages    []outage

	started  int
	progress chan struct{}
}

func newRun(cfg Config, t target, lost *checkout.Service) *run {
	return &run{
		cfg:      cfg,
		stack:    t,
		lost:     lost,
		http:     &http.Client{Timeout: cfg.CheckoutBudget + 30*time.Second},
		answers:  map[int]int{},
		cards:    map[int64]string{},
		manual:   map[int64]bool{},
		behave:   map[string]int{},
		faults:   map[string]int{},
		progress: make(chan struct{}, 1),
	}
}

func (r *run) count(m map[string]int, k string) {
	r.mu.Lock()
	m[k]++
	r.mu.Unlock()
}

func (r *run) unexpectedf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.cfg.Logger.Warn("unexpected answer", "detail", msg)
	r.mu.Lock()
	r.unexpected = append(r.unexpected, msg)
	r.mu.Unlock()
}

// execute drives the customers and the faults, then the late retries and
// the late charges, voids the holds still open, and waits for every
// attempt, refund and move to settle.
func (r *run) execute(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := r.cfg.Logger
	log.Info("chaos run starting", "checkouts", r.cfg.Checkouts, "clients", r.cfg.Clients,
		"worker_kills", r.cfg.WorkerKills, "server_restarts", r.cfg.ServerRestarts, "postgres_restarts", r.cfg.PostgresRestarts)

	var janitor sync.WaitGroup
	janitorCtx, stopJanitor := context.WithCancel(ctx)
	janitor.Go(func() { r.expireKeys(janitorCtx) })
	defer func() { stopJanitor(); janitor.Wait() }()

	faultErr := make(chan error, 1)
	go func() { faultErr <- r.injectFaults(ctx) }()

	jobs := make(chan int)
	var clients sync.WaitGroup
	for range r.cfg.Clients {
		clients.Go(func() {
			for i := range jobs {
				r.customer(ctx, i)
			}
		})
	}
	for i := range r.cfg.Checkouts {
		select {
		case jobs <- i:
		case <-ctx.Done():
		}
	}
	close(jobs)
	clients.Wait()
	if err := <-faultErr; err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	log.Info("checkouts done; providers back to normal", "orders", len(r.orders))
	normal := fakeprovider.Mode{Name: fakeprovider.ModeNormal}
	if err := r.switchModes(ctx, providerModes{first: normal, backup: normal}); err != nil {
		return err
	}
	if err := r.lateRetries(ctx); err != nil {
		return err
	}
	// Late charges are planted for attempts already settled, so that each
	// is repaired against the order's final payment; refunds still pending
	// do not matter to them.
	if err := r.settle(ctx, false); err != nil {
		return err
	}
	if err := r.plantLateCharges(ctx); err != nil {
		return err
	}
	if err := r.voidOpenHolds(ctx); err != nil {
		return err
	}
	return r.settle(ctx, true)
}

// expireKeys plays the provider's retention policy: once a second it
// forgets every key older than the retention.
func (r *run) expireKeys(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, err := r.expireKeysEverywhere(ctx)
		if err != nil {
			r.cfg.Logger.Warn("provider keys not expired", "error", err)
		}
		if n > 0 {
			r.mu.Lock()
			r.faults[FaultKeysExpired] += n
			r.mu.Unlock()
		}
	}
}

// settle waits until no attempt, and with refunds no refund and no hold
// either, is open, or the settle timeout passes.
func (r *run) settle(ctx context.Context, refunds bool) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.SettleTimeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		open, oldest, err := r.stack.Store().OpenAttemptStats(ctx)
		if err == nil && open == 0 && refunds {
			// A refund is never abandoned, so it settles only once the
			// provider answers; the checker reports one still pending past
			// the repair's deadline.
			open, oldest, err = r.stack.Store().OpenRefundStats(ctx)
			if err == nil && open > 0 {
				open, err = r.settleableRefunds(ctx)
			}
			if err == nil && open == 0 {
				open, err = r.unsettledHolds(ctx)
			}
		}
		if err == nil && open == 0 {
			r.cfg.Logger.Info("settled", "refunds_too", refunds)
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// Reported by the checker as overdue attempts.
				r.cfg.Logger.Warn("attempts or refunds still open at the settle timeout", "open", open, "oldest", oldest)
				return nil
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// settleableRefunds counts the pending refunds that can still settle: the
// ones the provider created, which a lookup or its event settles, and the
// ones still inside their send window, which the refund workflow sends
// again once its lookups find nothing (a request lost to a mode or cut off
// by a kill). A refund the provider never created by its last send time is
// never sent again, so it stays pending by design (it raises
// refund_unknown at its key's horizon): waiting for it would only wait out
// the settle timeout.
func (r *run) settleableRefunds(ctx context.Context) (int, error) {
	requests, err := r.providerRequests(ctx)
	if err != nil {
		return 0, err
	}
	created := map[string]bool{}
	for _, req := range requests {
		if req.RefundID != "" {
			created[req.Key] = true
		}
	}
	lastSend := time.Now().Add(-r.cfg.Timing.RefundSendWindow(r.cfg.Retention))
	r.mu.Lock()
	orders := slices.Clone(r.orders)
	r.mu.Unlock()
	settleable := 0
	for _, id := range orders {
		refunds, err := r.stack.Store().OrderRefunds(ctx, id)
		if err != nil {
			return 0, err
		}
		for _, f := range refunds {
			if f.Status == chargeonce.RefundPending && (created[f.Key] || f.CreatedAt.After(lastSend)) {
				settleable++
			}
		}
	}
	return settleable, nil
}

func sortedInts(m map[int]int) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func sortedStrings(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
