package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	sdkworker "go.temporal.io/sdk/worker"

	"chargeonce/checkout"
	"chargeonce/hold"
	"chargeonce/internal/backend"
	"chargeonce/notify"
	"chargeonce/provider"
	"chargeonce/provider/dialect"
	"chargeonce/provider/routing"
	"chargeonce/provider/settlement"
	"chargeonce/provider/stripe"
	"chargeonce/refund"
	"chargeonce/workflows"
)

// Config is a worker's settings: the worker command's flags, which
// Prepare's errors name, or what the dev stack chooses. Both build their
// worker with Prepare, so that they cannot differ in how they reach the
// provider.
type Config struct {
	// Provider is the settings of the one card provider of a worker
	// without a Routing: its name, the API it speaks and how to reach it.
	Provider dialect.Settings
	// Routing, when set, names every provider the worker reaches, which
	// must be every provider the API routes payments to; Provider is then
	// unused. Its first provider is the default: the provider of the
	// payments stored before payments named theirs. The worker reads each
	// provider's settlement reports at the provider's URL, except on
	// Stripe's own API (see SettlementURL).
	Routing *routing.Table
	// SettlementURL is the base URL of the one provider's settlement
	// reports, for a worker without a Routing; empty means Provider.URL,
	// except on Stripe's own API, which publishes its reports through its
	// Reporting API, which chargeonce does not read: no settlement runs
	// there.
	SettlementURL string
	// SettlementGraceDays is the settlement's grace period, 0 or more
	// (Deps.SettlementGraceDays).
	SettlementGraceDays int
	// Timing is the payment timing, complete, and ReplaceTiming makes it
	// replace a different published one (Deps.Timing, Deps.ReplaceTiming).
	Timing        workflows.Timing
	ReplaceTiming bool
	// SweepEvery is the outbox sweep's period, positive.
	SweepEvery time.Duration
	// EventRetries is the merchant events' retry schedule
	// (notify.ValidateSchedule), and EventPoll, positive, how often the
	// dispatcher looks for due deliveries (Deps.EventRetries,
	// Deps.EventPoll).
	EventRetries []time.Duration
	EventPoll    time.Duration
	// EventNetworks are the internal networks that events may be sent to
	// (Deps.EventNetworks); none by default.
	EventNetworks notify.AllowedNetworks
	// Options tune the Temporal workers (Deps.Options).
	Options sdkworker.Options
	// BuildID is the workers' version of the Worker Deployment
	// (Deps.BuildID); empty means DefaultBuildID.
	BuildID string
}

// Prepared is a worker built from its Config that has connected to nothing
// yet. Start runs it.
type Prepared struct {
	cfg       Config
	settings  []dialect.Settings
	providers provider.Registry
	// reports read each provider's settlement reports, by its name; a
	// provider without reports is not settled.
	reports map[string]*settlement.Client
}

// Prepare checks cfg and builds the worker's clients of each provider: the
// port behind its circuit breakers and the reader of its settlement
// reports, each on an HTTP client with a timeout. It connects to nothing,
// so that a bad setting is reported before the process waits for Temporal
// or the database; each of its errors is a bad setting. logger receives the
// breakers' state changes.
func Prepare(cfg Config, logger *slog.Logger) (*Prepared, error) {
	if cfg.SweepEvery <= 0 {
		return nil, errors.New("worker: --sweep-every must be positive")
	}
	if cfg.SettlementGraceDays < 0 {
		return nil, fmt.Errorf("worker: --settlement-grace-days must be 0 or more, got %d", cfg.SettlementGraceDays)
	}
	if err := notify.ValidateSchedule(cfg.EventRetries); err != nil {
		return nil, fmt.Errorf("worker: --event-retries: %w", err)
	}
	if cfg.EventPoll <= 0 {
		return nil, errors.New("worker: --event-poll must be positive")
	}
	settings, err := cfg.providers()
	if err != nil {
		return nil, err
	}
	providers, err := dialect.NewRegistry(logger, settings...)
	if err != nil && cfg.Routing != nil {
		return nil, fmt.Errorf("worker: routing file: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	reports := make(map[string]*settlement.Client, len(settings))
	for _, pc := range settings {
		r, err := settlementReports(cfg.SettlementURL, pc, logger)
		if err != nil {
			return nil, err
		}
		if r != nil {
			reports[pc.NameOrDefault()] = r
		}
	}
	return &Prepared{cfg: cfg, settings: settings, providers: providers, reports: reports}, nil
}

// Providers are the settings of every provider the worker reaches, the
// default first.
func (p *Prepared) Providers() []dialect.Settings {
	return slices.Clone(p.settings)
}

// providers are the settings of every provider the worker reaches, the
// default first: the routing's, or the one of Provider.
func (cfg Config) providers() ([]dialect.Settings, error) {
	if cfg.Routing != nil {
		if cfg.Provider != (dialect.Settings{}) || cfg.SettlementURL != "" {
			return nil, errors.New("worker: a routing file names the providers; give no provider settings besides it")
		}
		return cfg.Routing.Settings(), nil
	}
	pc := cfg.Provider
	if pc.Timeout <= 0 {
		return nil, errors.New("worker: --provider-timeout must be positive")
	}
	if err := dialect.Check(pc.API); err != nil {
		return nil, fmt.Errorf("worker: --provider: %w", err)
	}
	return []dialect.Settings{pc}, nil
}

// settlementReports is the client of the provider's settlement reports at
// reportsURL, or by default at the provider's URL; nil, with a warning, on
// Stripe's own API, which publishes its reports in another way.
func settlementReports(reportsURL string, pc dialect.Settings, logger *slog.Logger) (*settlement.Client, error) {
	u := reportsURL
	if u == "" {
		if pc.URL == stripe.DefaultBaseURL {
			logger.Warn("no daily settlement of this provider: Stripe publishes its settlement reports through its Reporting API, which chargeonce does not read; give --settlement-url to read reports in the provider contract's format",
				"provider", pc.NameOrDefault())
			return nil, nil
		}
		u = pc.URL
	}
	// A report download is bounded like its activity, not by the provider
	// timeout, which bounds one charge or lookup.
	hc := &http.Client{Timeout: workflows.SettlementActivityTimeout}
	if _, err := provider.CheckHTTP(u, hc); err != nil {
		return nil, fmt.Errorf("worker: --settlement-url: %w", err)
	}
	return &settlement.Client{BaseURL: u, HTTP: hc}, nil
}

// Start starts the prepared worker on the connected backend b, whose
// registry takes its metrics and whose logger its story: see Start.
func (p *Prepared) Start(ctx context.Context, b *backend.Conn) (*Worker, error) {
	// The sweep starts the workflows of stored attempts and creates none,
	// so it needs no reference prefix, nor a checkout budget.
	svc, err := checkout.New(checkout.Config{Store: b.Store, Temporal: b.Temporal, CardHasher: b.CardHasher, Logger: b.Logger})
	if err != nil {
		return nil, err
	}
	// Likewise for the refunds' sweep, which starts stored refunds only.
	finders := map[string]refund.Finder{}
	for name, port := range p.providers.All() {
		finders[name] = port
	}
	refunds, err := refund.New(refund.Config{Store: b.Store, Temporal: b.Temporal, Finders: finders, Logger: b.Logger})
	if err != nil {
		return nil, err
	}
	// And for the moves' sweep, which starts stored captures and voids.
	holds, err := hold.New(hold.Config{Store: b.Store, Temporal: b.Temporal, Logger: b.Logger})
	if err != nil {
		return nil, err
	}
	return Start(ctx, Deps{
		Client:              b.Temporal,
		Namespace:           b.Namespace,
		Providers:           p.providers,
		Store:               b.Store,
		Checkout:            svc,
		Refunds:             refunds,
		Holds:               holds,
		Timing:              p.cfg.Timing,
		ReplaceTiming:       p.cfg.ReplaceTiming,
		SweepEvery:          p.cfg.SweepEvery,
		EventRetries:        p.cfg.EventRetries,
		EventPoll:           p.cfg.EventPoll,
		EventNetworks:       p.cfg.EventNetworks,
		Registerer:          b.Registry,
		Options:             p.cfg.Options,
		BuildID:             p.cfg.BuildID,
		Logger:              b.Logger,
		Reports:             p.reports,
		SettlementGraceDays: p.cfg.SettlementGraceDays,
	})
}
