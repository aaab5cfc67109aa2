// Package worker runs the payment worker: it polls the payment task queue,
// executes PaymentWorkflow, RefundWorkflow and their activities, runs the
// lookups at each provider on a task queue of that provider's own at the
// rate it allows, runs the outbox sweeps of payments and refunds that start
// the workflows whose start was lost, and delivers the merchant events
// (package notify).
//
// The worker owns the payment timing. At start it checks the timing against
// the key retention the provider publishes, then publishes the timing in the
// merchant database, where every checkout and every sweep read it (see
// PublishTiming). The API has no timing of its own: if it had, the safety
// check would test a value the workflows never run with whenever the two
// were configured differently.
//
// The worker binary (cmd/worker), where each part is its own process, and
// the one-process dev stack build their worker the same way: Prepare, from
// the worker's Config, then Prepared.Start on the process's backend.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/checkout"
	"chargeonce/hold"
	"chargeonce/internal/metrics"
	"chargeonce/notify"
	"chargeonce/provider"
	"chargeonce/provider/settlement"
	"chargeonce/refund"
	"chargeonce/store"
	"chargeonce/workflows"
)

// DefaultSweepEvery is how often the outbox sweep looks for attempts whose
// workflow was never started.
const DefaultSweepEvery = 30 * time.Second

// Deps are the parts a worker runs with.
type Deps struct {
	// Client is connected to Temporal with the encrypting data converter.
	Client client.Client
	// Providers are the card providers, each behind breakers of its own,
	// by the names that intents carry.
	Providers provider.Registry
	// Store is the merchant database.
	Store store.Store
	// Checkout runs the outbox sweep, whose workflows start with the
	// published timing.
	Checkout *checkout.Service
	// Refunds runs the refunds' outbox sweep, which also starts the
	// repair's refunds of late charges that nobody started.
	Refunds *refund.Service
	// Holds runs the outbox sweep of the holds' captures and voids; nil
	// runs none, for a worker of a deployment without manual captures.
	Holds *hold.Service
	// Timing is this worker's payment timing, complete: it is checked
	// against the provider's published key retention and then published.
	Timing workflows.Timing
	// ReplaceTiming makes Timing replace a different published timing,
	// instead of refusing to start.
	ReplaceTiming bool
	// SweepEvery is the outbox sweep's period; zero means DefaultSweepEvery.
	SweepEvery time.Duration
	// EventRetries is the retry schedule of the merchant events' delivery;
	// nil means notify.DefaultSchedule.
	EventRetries []time.Duration
	// EventPoll is how often the events' dispatcher looks for due
	// deliveries; zero means notify.DefaultPoll.
	EventPoll time.Duration
	// EventNetworks are the internal networks that events may be sent to
	// (notify.Config.AllowedNetworks); none by default.
	EventNetworks notify.AllowedNetworks
	// Registerer receives the activities' metrics, the gauges of the
	// lookup backlog and the gauge of the runs pinned to each version of
	// the deployment; nil registers nothing.
	Registerer prometheus.Registerer
	// Namespace is the Temporal namespace Client is connected to, where the
	// backlog gauges read the lookup task queues and the pinned runs gauge
	// counts the runs; empty means "default", as for the SDK.
	Namespace string
	// Options tune the Temporal workers; the zero value is the SDK's
	// defaults. Each lookup worker's TaskQueueActivitiesPerSecond is the
	// published lookup rate of its provider, and every worker's
	// DeploymentOptions are BuildID's, whatever Options say.
	Options sdkworker.Options
	// BuildID is the version of chargeonce.DeploymentName that the workers
	// join (chargeonce.CheckBuildID); empty means DefaultBuildID.
	BuildID string
	// Logger receives the story of every payment.
	Logger *slog.Logger
	// Reports download each provider's settlement reports, by its name;
	// each provider's are matched against its attempts and refunds alone.
	// For each, the worker runs the settlement workflows and creates or
	// updates the provider's daily schedule (EnsureSettlementSchedules, in
	// the background); none runs no settlement.
	Reports map[string]*settlement.Client
	// SettlementGraceDays is the settlement's grace period, in days, 0 or
	// more: see DefaultSettlementGraceDays. It is the one setting of it: the
	// matching activity applies it to every run of a date, however started,
	// and the daily run asks the worker for it.
	SettlementGraceDays int
}

// Worker is a started worker. Stop it once.
type Worker struct {
	payments sdkworker.Worker
	// lookups poll the lookup task queues, one each (lookupQueues).
	lookups []sdkworker.Worker
	// stop ends the background loops, the sweep and the capacity watch,
	// which group waits for.
	stop  context.CancelFunc
	group sync.WaitGroup
}

// Start checks the timing against every provider's published limits,
// publishes it, registers the workflows and the activities, and starts
// polling, sweeping and watching the lookup capacity.
//
// One Temporal worker polls the payment task queue, for the workflows and
// every activity, and one more each lookup task queue (lookupQueues), for
// FindCharge and FindRefund alone, with TaskQueueActivitiesPerSecond at the
// published lookup rate of the queue's provider. Temporal's server enforces
// that rate for the whole queue, across every worker process, so the
// lookups of all workers together stay under what each provider allows,
// and a slow provider never slows the lookups at another.
//
// All of them join the Worker Deployment chargeonce.DeploymentName as the
// version Deps.BuildID, and the payment workers make it the deployment's
// current version if it has none (becomeCurrentIfNone).
func Start(ctx context.Context, d Deps) (*Worker, error) {
	if _, def := d.Providers.Default(); d.Client == nil || def == nil || d.Store == nil || d.Checkout == nil || d.Refunds == nil || d.Logger == nil {
		return nil, errors.New("worker: client, provider, store, checkout, refunds and logger are required")
	}
	if d.SettlementGraceDays < 0 {
		return nil, fmt.Errorf("worker: the settlement grace period must be 0 or more days, got %d", d.SettlementGraceDays)
	}
	buildID := d.BuildID
	if buildID == "" {
		var err error
		if buildID, err = DefaultBuildID(); err != nil {
			return nil, err
		}
	}
	if err := chargeonce.CheckBuildID(buildID); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	namespace := d.Namespace
	if namespace == "" {
		namespace = client.DefaultNamespace
	}
	each, err := checkEveryProvider(ctx, d.Providers, d.Timing)
	if err != nil {
		return nil, err
	}
	limits := strictest(each)
	queues := lookupQueues(d.Providers, each)
	every := d.SweepEvery
	if every == 0 {
		every = DefaultSweepEvery
	}
	if err := CheckRefundWindow(d.Timing, limits.KeyRetention, d.Refunds.SweepReach(d.Timing, every)); err != nil {
		return nil, err
	}
	if err := PublishTiming(ctx, d.Store, d.Timing, d.ReplaceTiming, d.Logger); err != nil {
		return nil, err
	}
	// The API checks its routing against the providers the workers reach.
	if err := d.Store.PublishProviders(ctx, slices.Sorted(maps.Keys(each))); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	var actMetrics *activities.Metrics
	if d.Registerer != nil {
		actMetrics = activities.NewMetrics(d.Registerer)
		names := make([]string, len(queues))
		for i, q := range queues {
			names[i] = q.name
		}
		if err := metrics.RegisterLookupBacklog(d.Registerer, d.Client.WorkflowService(), namespace, names, d.Logger); err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
		if err := metrics.RegisterPinnedRuns(d.Registerer, d.Client.WorkflowService(), namespace, d.Logger); err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
	}
	acts := &activities.Activities{Providers: d.Providers, Store: d.Store, Logger: d.Logger, Metrics: actMetrics, Temporal: d.Client}
	events, err := notify.New(notify.Config{Store: d.Store, Logger: d.Logger, Registerer: d.Registerer,
		Schedule: d.EventRetries, Poll: d.EventPoll, AllowedNetworks: d.EventNetworks})
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}

	options := deploymentOptions(d.Options, buildID)
	lookups, err := startLookups(d.Client, options, queues, acts)
	if err != nil {
		return nil, err
	}
	w := sdkworker.New(d.Client, chargeonce.TaskQueue, options)
	workflows.Register(w, acts)
	settled := slices.Sorted(maps.Keys(d.Reports))
	if len(settled) > 0 {
		var settleMetrics *activities.SettlementMetrics
		if d.Registerer != nil {
			settleMetrics = activities.NewSettlementMetrics(d.Registerer, settled...)
		}
		def, _ := d.Providers.Default()
		workflows.RegisterSettlement(w, &activities.Settlement{Reports: d.Reports, Default: def, Store: d.Store,
			GraceDays: d.SettlementGraceDays, Logger: d.Logger, Metrics: settleMetrics})
	}
	if err := w.Start(); err != nil {
		stopAll(lookups)
		return nil, fmt.Errorf("worker: start polling task queue %s: %w", chargeonce.TaskQueue, err)
	}
	if err := becomeCurrentIfNone(ctx, d.Client, namespace, buildID, d.Logger); err != nil {
		w.Stop()
		stopAll(lookups)
		return nil, err
	}
	for _, q := range queues {
		d.Logger.Info("lookups paced at the provider's published rate", "task_queue", q.name, "providers", q.providers,
			"lookups_per_second", q.perSecond, "lookups_per_attempt", d.Timing.LookupsPerAttempt(),
			"max_open_attempts", d.Timing.LookupCapacity(q.perSecond))
	}
	watch := newCapacityWatch(d.Store, d.Timing, limits.LookupsPerSecond, d.Logger)

	bgCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	wk := &Worker{payments: w, lookups: lookups, stop: stop}
	wk.group.Go(func() { d.Checkout.RunSweeper(bgCtx, every) })
	wk.group.Go(func() { d.Refunds.RunSweeper(bgCtx, every) })
	if d.Holds != nil {
		wk.group.Go(func() { d.Holds.RunSweeper(bgCtx, every) })
	}
	wk.group.Go(func() { watch.run(bgCtx, capacityCheckEvery) })
	wk.group.Go(func() { events.Run(bgCtx) })
	if len(settled) > 0 {
		wk.group.Go(func() { keepSettlementSchedules(bgCtx, d.Client, settled, d.Logger) })
	}
	return wk, nil
}

// Stop ends the sweeps, the capacity watch and the events' dispatcher (a
// try in flight is cut short, and sent again later) and stops polling; it
// waits for running activities up to the workers' stop timeout.
func (w *Worker) Stop() {
	w.stop()
	w.group.Wait()
	w.payments.Stop()
	stopAll(w.lookups)
}

// lookupQueue is a lookup task queue and the rate at which Temporal
// dispatches its lookups.
type lookupQueue struct {
	name string
	// providers are the names of the providers whose lookups run there.
	providers []string
	perSecond float64
}

// lookupQueues returns the lookup task queue of each provider of the
// registry (chargeonce.LookupTaskQueueOf), in the order of the queues'
// names, paced at the lookup rate that the provider publishes (limits, by
// provider name). The runs recorded before intents named their provider
// look the default provider up on chargeonce.LookupTaskQueue: when that is
// not the default provider's own queue, it is among the queues too, paced
// at the default provider's rate. A queue that two providers share, which
// happens only when a provider other than the default is named
// chargeonce.DefaultProvider, is paced at the slower of their rates, which
// keeps both within theirs.
func lookupQueues(providers provider.Registry, limits map[string]provider.Limits) []lookupQueue {
	byName := map[string]*lookupQueue{}
	add := func(queue, name string) {
		rate := limits[name].LookupsPerSecond
		q, ok := byName[queue]
		if !ok {
			byName[queue] = &lookupQueue{name: queue, providers: []string{name}, perSecond: rate}
			return
		}
		if !slices.Contains(q.providers, name) {
			q.providers = append(q.providers, name)
		}
		q.perSecond = min(q.perSecond, rate)
	}
	for name := range providers.All() {
		add(chargeonce.LookupTaskQueueOf(name), name)
	}
	def, _ := providers.Default()
	add(chargeonce.LookupTaskQueue, def)
	queues := make([]lookupQueue, 0, len(byName))
	for _, queue := range slices.Sorted(maps.Keys(byName)) {
		queues = append(queues, *byName[queue])
	}
	return queues
}

// startLookups starts a Temporal worker of the lookup activities on each of
// queues, with options but the queue's rate; if one fails to start, it
// stops those it started.
func startLookups(c client.Client, options sdkworker.Options, queues []lookupQueue, acts *activities.Activities) ([]sdkworker.Worker, error) {
	var started []sdkworker.Worker
	for _, q := range queues {
		options.TaskQueueActivitiesPerSecond = q.perSecond
		lw := sdkworker.New(c, q.name, options)
		workflows.RegisterLookups(lw, acts)
		if err := lw.Start(); err != nil {
			stopAll(started)
			return nil, fmt.Errorf("worker: start polling task queue %s: %w", q.name, err)
		}
		started = append(started, lw)
	}
	return started, nil
}

// stopAll stops workers.
func stopAll(workers []sdkworker.Worker) {
	for _, w := range workers {
		w.Stop()
	}
}

// CheckLimits reads the limits that the provider publishes and refuses a
// timing whose abandon deadline is not below its key retention, or whose
// first lookup does not come after the lookups' consistency delay. After
// retention the provider forgets the key, and a late retry with it would
// charge the card a second time; a lookup before the delay may miss a charge
// that exists, and the attempt would be settled as never charged. It returns
// the limits, whose lookup rate paces the lookups.
func CheckLimits(ctx context.Context, p provider.Port, t workflows.Timing) (provider.Limits, error) {
	if err := t.Validate(); err != nil {
		return provider.Limits{}, fmt.Errorf("worker: %w", err)
	}
	limits, err := p.Limits(ctx)
	if err != nil {
		return provider.Limits{}, fmt.Errorf("worker: read the provider's published limits: %w", err)
	}
	if t.AbandonAfter >= limits.KeyRetention {
		return provider.Limits{}, fmt.Errorf("worker: abandon-after %v must be shorter than the provider's key retention %v: "+
			"a retry after the provider forgot the key would charge the card again", t.AbandonAfter, limits.KeyRetention)
	}
	if t.MinAge <= limits.LookupDelay {
		return provider.Limits{}, fmt.Errorf("worker: reconcile-min-age %v must exceed the %v the provider's lookups may lag behind a new charge: "+
			"an earlier lookup could miss a charge that exists", t.MinAge, limits.LookupDelay)
	}
	return limits, nil
}

// checkEveryProvider checks the timing against the limits of every
// provider (CheckLimits), and returns each provider's limits by its name.
func checkEveryProvider(ctx context.Context, providers provider.Registry, t workflows.Timing) (map[string]provider.Limits, error) {
	each := map[string]provider.Limits{}
	for name, p := range providers.All() {
		limits, err := CheckLimits(ctx, p, t)
		if err != nil {
			return nil, fmt.Errorf("provider %q: %w", name, err)
		}
		each[name] = limits
	}
	return each, nil
}

// strictest returns the strictest of the limits of several providers: the
// shortest key retention, the slowest lookup rate and the longest lookup
// delay. A refund of any provider must be sent within the shortest
// retention; the capacity watch, which counts the open attempts of all
// providers together, compares them with the slowest rate.
func strictest(each map[string]provider.Limits) provider.Limits {
	var s provider.Limits
	first := true
	for _, limits := range each {
		if first {
			s, first = limits, false
			continue
		}
		s.KeyRetention = min(s.KeyRetention, limits.KeyRetention)
		s.LookupsPerSecond = min(s.LookupsPerSecond, limits.LookupsPerSecond)
		s.LookupDelay = max(s.LookupDelay, limits.LookupDelay)
	}
	return s
}

// CheckRefundWindow refuses a timing under which a refund that the refund
// sweep starts, sweepReach after its creation at the latest, could be past
// its last send time (workflows.Timing.RefundSendWindow) with the
// provider's key retention: it would never be sent, and would wait for a
// person at the horizon.
func CheckRefundWindow(t workflows.Timing, retention, sweepReach time.Duration) error {
	if window := t.RefundSendWindow(retention); window <= sweepReach {
		return fmt.Errorf("worker: a refund may be sent until %v after its creation (the provider's key retention %v, less 8 times --reconcile-interval, "+
			"--charge-budget and --reconcile-min-age), which must exceed the %v in which the refund sweep starts a refund that nothing started",
			window, retention, sweepReach)
	}
	return nil
}

// PublishTiming makes t the payment timing in the merchant database, which
// every checkout and every sweep start uses, or refuses t.
//
// The first worker to start against a database publishes its timing. A
// later worker with the same timing starts; one with another timing is
// refused, with both timings in the error, because the workflows would not
// run with the timing it checked against the provider. The same means equal
// in every field this worker knows: a field that only a newer worker knows
// is not compared, and the published document keeps it (see
// workflows.TimingVersion). With replace (the worker's --replace-timing, and
// always in the dev stack, whose worker is the only one of its database),
// t replaces the published timing instead, at once for every checkout in
// every process, since nobody caches it, and one warning names the old and
// the new timing. Attempts already created keep their deadline, and their
// workflows the timing in their input. Of two workers publishing different
// timings at once, the store lets one win and the other is refused.
func PublishTiming(ctx context.Context, st store.Store, t workflows.Timing, replace bool, log *slog.Logger) error {
	if err := t.Validate(); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	encoded, err := t.Encode()
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	stored, err := st.PublishTiming(ctx, encoded, false)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	publishedAt := stored.PublishedAt.Format(time.RFC3339)
	published, unreadable := workflows.DecodeTiming(stored.Timing)
	switch {
	case unreadable == nil && published == t:
		log.Info("payment timing published", "timing", t.String(), "published_at", publishedAt)
		return nil
	case !replace && unreadable != nil:
		return fmt.Errorf("worker: the payment timing published at %s cannot be read (%v); "+
			"start this worker with --replace-timing to publish its own: %s", publishedAt, unreadable, t)
	case !replace:
		return fmt.Errorf("worker: payment timing %s, published by the running workers at %s; this worker: %s. "+
			"Checkouts and workflows run with the published timing, so this worker refuses to start with another: "+
			"start it with the published values, or with --replace-timing to make its timing the published one", published, publishedAt, t)
	}
	if _, err := st.PublishTiming(ctx, encoded, true); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	replaced := string(stored.Timing)
	if unreadable == nil {
		replaced = published.String()
	}
	log.Warn("payment timing replaced: new checkouts and workflow starts take this worker's, open attempts keep the one they started with",
		"old", replaced, "old_published_at", publishedAt, "new", t.String())
	return nil
}
