package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/dev/stack"
	"chargeonce/fakeprovider"
	"chargeonce/provider/dialect"
	"chargeonce/verify/invariant"
	"chargeonce/workflows"
)

// benchTiming is the payment timing of the run. The charge phase is short
// so that unknown outcomes reach reconciliation quickly; the first lookup
// comes 5s after an attempt is created and the next every 15s, which bounds
// how soon a recovered provider's charges are found. Abandonment is far
// beyond any phase, so no attempt is abandoned during a run.
func benchTiming() workflows.Timing {
	return workflows.Timing{
		AttemptTimeout: time.Second,
		SendBudget:     2 * time.Second,
		RetryInterval:  250 * time.Millisecond,
		MinAge:         5 * time.Second,
		Interval:       15 * time.Second,
		AbandonAfter:   15 * time.Minute,
	}
}

// Load shape.
var concurrencies = []int{1, 8, 64}

const (
	// cardToken is approved by the fake provider.
	cardToken = "tok_visa"
	// providerDelay is the fake provider's processing time in the
	// provider-latency phase.
	providerDelay = 50 * time.Millisecond
	// historySamples is how many workflows of each kind are described.
	historySamples = 20
	// maxPool bounds the orders created for one phase.
	maxPool = 30000
	// opTimeout bounds one operation, so that a wedged phase ends.
	opTimeout = 30 * time.Second
	// unknownConcurrency is how many checkouts at once the unknown-outcome
	// scenario runs; each waits the whole charge budget.
	unknownConcurrency = 200
	// fakeConcurrency is the client concurrency of the fake-provider rows.
	fakeConcurrency = 16
)

// bench is one run.
type bench struct {
	o        options
	log      *slog.Logger
	progress *slog.Logger
	st       *stack.Stack
	gate     *gate
	bare     *bareRunner
	direct   *direct
	amount   chargeonce.Money
	rep      *Report
	// checkoutKeys and bareKeys are the workflow IDs whose histories are
	// read.
	checkoutKeys, bareKeys *keys
	// warm is each system's throughput in the warm-up.
	warm []float64
	// serialCheckout is the checkouts' closed-loop phase at concurrency 1,
	// the reference of the follow-ups' latency and CPU (followUp).
	serialCheckout phase
	// eventsPerCheckout and eventsPerBare are the mean history lengths,
	// the references of a follow-up's.
	eventsPerCheckout, eventsPerBare float64
	// orders are the orders paid (or to be paid) since the last invariant
	// check.
	mu     sync.Mutex
	orders []int64
}

// system is one of the three things measured side by side.
type system struct {
	name string
	// ordered systems pay orders, which each phase creates beforehand.
	ordered bool
	// prepare readies n operations (creating their orders) and returns
	// them. With a positive delay, the provider (or the bare activity)
	// takes that long.
	prepare func(ctx context.Context, n int, delay time.Duration) (op, error)
}

func runBench(ctx context.Context, o options, log, progress *slog.Logger) (*Report, error) {
	started := time.Now()
	b := &bench{o: o, log: log, progress: progress, gate: &gate{},
		checkoutKeys: &keys{limit: historySamples}, bareKeys: &keys{limit: historySamples}}
	var err error
	if b.amount, err = chargeonce.ParseMoney("548.90", "TRY"); err != nil {
		return nil, err
	}
	cleanup, err := b.start(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	b.rep = &Report{
		Command:        "go run ./verify/cmd/bench " + strings.Join(os.Args[1:], " "),
		Started:        started.UTC().Format(time.RFC3339),
		GoVersion:      runtime.Version(),
		CPUs:           runtime.NumCPU(),
		Persistence:    b.st.TemporalPersistence(),
		InvariantsHeld: true,
		Setup:          b.setup(),
	}
	systems := []system{
		{"checkout", true, b.prepareCheckout},
		{"bare workflow", false, b.prepareBare},
		{"direct loop", true, b.prepareDirect},
	}
	steps := []func(context.Context, []system) error{
		b.warmUp,
		b.throughputAndLatency,
		// Before the unknown outcomes, whose attempts that never reached
		// the provider go on reconciling in the background until the end.
		b.refunds,
		b.captures,
		b.failover,
		b.fakeProvider,
		b.unknownOutcomes,
	}
	for _, step := range steps {
		if err := step(ctx, systems); err != nil {
			return nil, err
		}
	}
	b.rep.Wall = time.Since(started).Round(time.Second).String()
	return b.rep, nil
}

// start starts the stack, the bare workflow's worker and the direct loop's
// provider client, and returns what stops them.
func (b *bench) start(ctx context.Context) (func(), error) {
	st, stopStack, err := b.startStack(ctx, fakeprovider.Config{After: b.gate.after}, nil)
	if err != nil {
		return nil, err
	}
	b.st = st
	stop := func() {
		// Held charges would keep the provider's Close waiting.
		b.gate.release()
		stopStack()
	}
	if b.bare, err = startBare(st.Client(), b.workerOptions(), b.o.eager); err != nil {
		stop()
		return nil, err
	}
	// The same client settings as the stack's worker, so that the direct
	// loop pays the same HTTP costs.
	pc, err := dialect.New(dialect.Config{Settings: dialect.Settings{URL: st.ProviderURL()}, HTTPClient: &http.Client{Timeout: time.Minute}, Logger: b.log})
	if err != nil {
		b.bare.stop()
		stop()
		return nil, err
	}
	b.direct = &direct{store: st.Store(), provider: pc, timing: benchTiming(), hasher: st.CardHasher()}
	return func() { b.bare.stop(); stop() }, nil
}

// startStack starts an embedded stack with the run's settings, its fake
// provider configured by fake and, when backup is set, a backup provider
// beside it, and returns it with what stops it and removes its files.
func (b *bench) startStack(ctx context.Context, fake fakeprovider.Config, backup *fakeprovider.Config) (*stack.Stack, func(), error) {
	dataDir := ""
	if !b.o.memoryTemporal {
		dir, err := os.MkdirTemp("", "chargeonce-bench-")
		if err != nil {
			return nil, nil, err
		}
		dataDir = dir
	}
	removeDir := func() {
		if dataDir != "" {
			_ = os.RemoveAll(dataDir)
		}
	}
	b.progress.Info("starting the embedded stack", "backup", backup != nil)
	st, err := stack.Start(ctx, stack.Config{
		DataDir:       dataDir,
		UIPort:        -1,
		Timing:        benchTiming(),
		Provider:      fake,
		Backup:        backup,
		WorkerOptions: b.workerOptions(),
		Logger:        b.log,
	})
	if err != nil {
		removeDir()
		return nil, nil, err
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := st.Close(ctx); err != nil {
			b.progress.Warn("stack did not stop cleanly", "error", err)
		}
		removeDir()
	}
	return st, stop, nil
}

func (b *bench) workerOptions() sdkworker.Options {
	var w sdkworker.Options
	if b.o.pollers > 0 {
		w.MaxConcurrentWorkflowTaskPollers = b.o.pollers
		w.MaxConcurrentActivityTaskPollers = b.o.pollers
	}
	if b.o.maxConcurrent > 0 {
		w.MaxConcurrentWorkflowTaskExecutionSize = b.o.maxConcurrent
		w.MaxConcurrentActivityExecutionSize = b.o.maxConcurrent
	}
	return w
}

func (b *bench) setup() []string {
	t := benchTiming()
	pollers, conc := "SDK default", "SDK default"
	if b.o.pollers > 0 {
		pollers = fmt.Sprint(b.o.pollers)
	}
	if b.o.maxConcurrent > 0 {
		conc = fmt.Sprint(b.o.maxConcurrent)
	}
	return []string{
		"checkout = chargeonce's checkout.Service.Checkout called in-process (store tx, Update-With-Start, workflow, Charge local activity over loopback HTTP to the fake provider, request log, settlement), not through the HTTP API",
		"bare workflow = one workflow with one trivial activity on its own task queue and worker, started with ExecuteWorkflow and awaited, same server, client and payload codec",
		"direct loop = the same store transaction, provider requests (same retry rules), request log and settlement, in-process without Temporal",
		fmt.Sprintf("timing: attempt %s, charge budget %s, retry every %s, first lookup after %s, then every %s, abandon after %s",
			t.AttemptTimeout, t.SendBudget, t.RetryInterval, t.MinAge, t.Interval, t.AbandonAfter),
		fmt.Sprintf("phases: %s each; workers: pollers %s, max concurrent executions %s; bare eager start %v; stack logs at %s",
			b.o.phase, pollers, conc, b.o.eager, b.o.logLevel),
		"CPU and memory are of this one process, which holds the Temporal server, both workers, the fake provider, the databases and the load generator",
	}
}

// paid remembers orders for the next invariant check.
func (b *bench) paid(ids []int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.orders = append(b.orders, ids...)
}

// createOrders creates n orders for one phase.
func (b *bench) createOrders(ctx context.Context, n int) ([]int64, error) {
	ids := make([]int64, n)
	for i := range ids {
		o, err := b.st.Store().CreateOrder(ctx, b.amount, "bench order")
		if err != nil {
			return nil, fmt.Errorf("create order: %w", err)
		}
		ids[i] = o.ID
	}
	b.paid(ids)
	return ids, nil
}

func (b *bench) setProviderDelay(delay time.Duration) error {
	m := fakeprovider.Mode{Name: fakeprovider.ModeNormal}
	if delay > 0 {
		m = fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: delay}
	}
	return b.st.Provider().SetMode(m)
}

// keys collects the workflow IDs of the checkouts and bare workflows of the
// first phase, whose histories are read later.
type keys struct {
	mu    sync.Mutex
	limit int
	ids   []string
}

func (k *keys) add(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.ids) < k.limit {
		k.ids = append(k.ids, id)
	}
}

func (b *bench) prepareCheckout(ctx context.Context, n int, delay time.Duration) (op, error) {
	return b.prepareOrders(ctx, n, delay, func(ctx context.Context, orderID int64) error {
		res, err := b.st.Checkout().Checkout(ctx, orderID, cardToken)
		if err != nil {
			return err
		}
		if res.Outcome != checkout.OutcomePaid {
			return fmt.Errorf("order %d: checkout answered %s", orderID, res.Outcome)
		}
		b.checkoutKeys.add(workflows.WorkflowID(res.Attempt.Key))
		return nil
	})
}

func (b *bench) prepareBare(_ context.Context, _ int, delay time.Duration) (op, error) {
	return func(ctx context.Context, _ int) error {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		id, err := b.bare.run(ctx, delay)
		if err == nil {
			b.bareKeys.add(id)
		}
		return err
	}, nil
}

func (b *bench) prepareDirect(ctx context.Context, n int, delay time.Duration) (op, error) {
	return b.prepareOrders(ctx, n, delay, func(ctx context.Context, orderID int64) error {
		return b.direct.pay(ctx, orderID, cardToken)
	})
}

// prepareOrders sets the provider's delay and creates n orders, and returns
// the operation that pays order number i with pay, within opTimeout.
func (b *bench) prepareOrders(ctx context.Context, n int, delay time.Duration, pay func(ctx context.Context, orderID int64) error) (op, error) {
	if err := b.setProviderDelay(delay); err != nil {
		return nil, err
	}
	ids, err := b.createOrders(ctx, n)
	if err != nil {
		return nil, err
	}
	return payEach(ids, pay), nil
}

// payEach is the operation that pays order number i of ids with pay,
// within opTimeout.
func payEach(ids []int64, pay func(ctx context.Context, orderID int64) error) op {
	return func(ctx context.Context, i int) error {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		return pay(ctx, ids[i])
	}
}

// warmUp runs a few operations of each system, so that connections, caches
// and lazily built state are ready before anything is measured. The sampled
// workflow IDs are cleared, so that histories come from measured phases.
func (b *bench) warmUp(ctx context.Context, systems []system) error {
	b.progress.Info("warming up")
	for _, s := range systems {
		run, err := s.prepare(ctx, 20, 0)
		if err != nil {
			return err
		}
		p := closedLoop(ctx, 4, 20, time.Minute, run)
		if p.failed > 0 {
			return fmt.Errorf("warm-up of %s: %d of 20 failed: %w", s.name, p.failed, p.firstErr)
		}
		b.warm = append(b.warm, p.throughput())
	}
	b.checkoutKeys.ids, b.bareKeys.ids = nil, nil
	return b.checkInvariants(ctx, "warm-up")
}

// throughputAndLatency runs the closed-loop phases, then the open-loop
// phases at fractions of the best throughput each system reached, then the
// provider-latency phase, and reads the histories.
func (b *bench) throughputAndLatency(ctx context.Context, systems []system) error {
	best := make([]float64, len(systems))
	copy(best, b.warm)
	for ci, c := range concurrencies {
		results := make([]phase, len(systems))
		for si, s := range systems {
			n := maxPool
			if s.ordered {
				n = poolSize(best[si], c, b.o.phase)
			}
			run, err := s.prepare(ctx, n, 0)
			if err != nil {
				return err
			}
			b.progress.Info("throughput", "system", s.name, "concurrency", c, "orders", n)
			p := closedLoop(ctx, c, n, b.o.phase, run)
			if p.failed > 0 {
				b.progress.Warn("failures", "system", s.name, "concurrency", c, "failed", p.failed, "error", p.firstErr)
			}
			results[si] = p
			if si == 0 && c == 1 {
				b.serialCheckout = p
			}
			if ci == 0 {
				best[si] = 0 // the warm-up's rate only sized the first pool
			}
			best[si] = max(best[si], p.throughput())
		}
		b.rep.add(Row{Section: "throughput", Metric: fmt.Sprintf("checkouts/s c=%d", c), Unit: "ops/s",
			Value: results[0].throughput(), Refs: refs(systems, results, phase.throughput),
			Note: phaseNote(systems, results, b.o.phase) + failedNote(systems, results)})
		b.rep.add(Row{Section: "cost", Metric: fmt.Sprintf("CPU per op c=%d", c), Unit: "ms",
			Value: results[0].cpuPerOp(), Refs: refs(systems, results, phase.cpuPerOp),
			Note: "process user+system CPU over the phase / successful ops"})
		b.rep.closedLoopTargets(c, results, "")
	}
	if err := b.checkInvariants(ctx, "throughput"); err != nil {
		return err
	}
	if err := b.history(ctx); err != nil {
		return err
	}

	for _, frac := range []float64{0.5, loadedFraction} {
		results := make([]phase, len(systems))
		rates := make([]string, len(systems))
		for si, s := range systems {
			rate := frac * best[si]
			rates[si] = fmt.Sprintf("%s %.0f/s", s.name, rate)
			p, err := b.openPhase(ctx, s, rate, 0)
			if err != nil {
				return err
			}
			results[si] = p
		}
		note := "open loop at each system's own rate: " + strings.Join(rates, ", ")
		b.latencyRows(fmt.Sprintf("@%.0f%% max", frac*100), systems, results, note)
		if frac == loadedFraction {
			b.rep.loadedTarget(results, "")
		}
	}
	if err := b.checkInvariants(ctx, "latency"); err != nil {
		return err
	}

	// The same arrival rate for all three, so that the overhead over the
	// provider's time is compared under the same load.
	rate := 0.5 * best[0]
	results := make([]phase, len(systems))
	for si, s := range systems {
		p, err := b.openPhase(ctx, s, rate, providerDelay)
		if err != nil {
			return err
		}
		results[si] = p
	}
	if err := b.setProviderDelay(0); err != nil {
		return err
	}
	b.latencyRows("provider 50ms", systems, results, fmt.Sprintf("fake provider (bare: its activity) takes 50ms; open loop at %.0f/s for all", rate))
	b.rep.add(Row{Section: "latency", Metric: lastLatencyMetric, Unit: "ms",
		Value: overhead(results[0]), Refs: refs(systems, results, overhead), Note: "p50 - 50ms"})
	if err := b.checkInvariants(ctx, "provider latency"); err != nil {
		return err
	}

	b.rep.overheadTarget(results, "")
	b.rep.add(Row{Section: "latency", Metric: "bare results asked again", Unit: "workflows", Value: float64(b.bare.asked.Load()),
		Note: fmt.Sprintf("bare workflows of the phases above found closed with their result still missing, then asked again (checked every %s): the server had missed their close", resultPoll)})
	return nil
}

// openPhase runs one open-loop phase of s at rate per second.
func (b *bench) openPhase(ctx context.Context, s system, rate float64, delay time.Duration) (phase, error) {
	if rate <= 0 {
		return phase{}, fmt.Errorf("%s reached no throughput, so it has no rate to be driven at", s.name)
	}
	n := int(math.Ceil(rate*b.o.phase.Seconds())) + 1
	run, err := s.prepare(ctx, n, delay)
	if err != nil {
		return phase{}, err
	}
	b.progress.Info("latency", "system", s.name, "rate", math.Round(rate), "provider_delay", delay)
	p := openLoop(ctx, rate, n, b.o.phase, run)
	if p.failed > 0 {
		b.progress.Warn("failures", "system", s.name, "rate", rate, "failed", p.failed, "error", p.firstErr)
	}
	return p, nil
}

func (b *bench) latencyRows(label string, systems []system, results []phase, note string) {
	for _, q := range []float64{0.5, 0.95, 0.99} {
		pct := func(p phase) float64 { return p.percentile(q) }
		b.rep.add(Row{Section: "latency", Metric: fmt.Sprintf("p%.0f %s", q*100, label), Unit: "ms",
			Value: pct(results[0]), Refs: refs(systems, results, pct), Note: note + failedNote(systems, results)})
		note = ""
	}
}

// history reads, from the server, the events and state transitions of the
// sampled paid checkouts and bare workflows.
func (b *bench) history(ctx context.Context) error {
	ours, bare, err := historyRows(ctx, b.rep, b.st.Client(), b.checkoutKeys.ids, b.bareKeys.ids, "")
	if err != nil {
		return err
	}
	b.eventsPerCheckout, b.eventsPerBare = ours.events, bare.events
	return nil
}

// historyRows reads the histories of the paid checkouts and bare workflows
// with these workflow IDs, adds their rows and the events target to rep,
// and returns their means. suffix ends each metric's name.
func historyRows(ctx context.Context, rep *Report, tc client.Client, checkouts, bares []string, suffix string) (ours, bare historyCost, err error) {
	if ours, err = meanHistory(ctx, tc, checkouts); err != nil {
		return ours, bare, fmt.Errorf("history of the checkouts: %w", err)
	}
	if bare, err = meanHistory(ctx, tc, bares); err != nil {
		return ours, bare, fmt.Errorf("history of the bare workflows: %w", err)
	}
	note := fmt.Sprintf("mean of %d paid checkouts and %d bare workflows, DescribeWorkflowExecution; checkouts by length: %s", len(checkouts), len(bares), ours.lengths)
	if ours.longest != "" {
		note += "; the longest: " + ours.longest
	}
	rep.add(Row{Section: "history", Metric: checkoutEventsMetric + suffix, Unit: "events", Value: ours.events,
		Refs: []Ref{{Name: "bare workflow", Value: bare.events}}, Note: note})
	rep.add(Row{Section: "history", Metric: "state transitions per paid checkout" + suffix, Unit: "transitions", Value: ours.transitions,
		Refs: []Ref{{Name: "bare workflow", Value: bare.transitions}}})
	rep.eventsTarget(ours.events/bare.events, suffix)
	return ours, bare, nil
}

// historyCost is the mean history of some workflows, with how many had
// each length and the event types of the longest, which tell why a
// history grew.
type historyCost struct {
	events, transitions float64
	lengths, longest    string
}

// meanHistory waits until each of the workflows ids has closed and returns
// their mean history length and state transition count.
func meanHistory(ctx context.Context, tc client.Client, ids []string) (historyCost, error) {
	if len(ids) == 0 {
		return historyCost{}, errors.New("no workflow to describe")
	}
	var sum historyCost
	count := map[int64]int{}
	longest, longestID := int64(0), ""
	for _, id := range ids {
		ev, tr, err := describeClosed(ctx, tc, id)
		if err != nil {
			return historyCost{}, err
		}
		sum.events += float64(ev)
		sum.transitions += float64(tr)
		count[ev]++
		if ev > longest {
			longest, longestID = ev, id
		}
	}
	n := float64(len(ids))
	cost := historyCost{events: sum.events / n, transitions: sum.transitions / n}
	var lengths []string
	for _, l := range slices.Sorted(maps.Keys(count)) {
		lengths = append(lengths, fmt.Sprintf("%d events ×%d", l, count[l]))
	}
	cost.lengths = strings.Join(lengths, ", ")
	if len(count) > 1 {
		var types []string
		iter := tc.GetWorkflowHistory(ctx, longestID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				return historyCost{}, fmt.Errorf("history of %s: %w", longestID, err)
			}
			types = append(types, strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_"))
		}
		cost.longest = strings.Join(types, " ")
	}
	return cost, nil
}

// describeClosed waits until the workflow has closed and returns its history
// length and state transition count.
func describeClosed(ctx context.Context, tc client.Client, id string) (int64, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return 0, 0, fmt.Errorf("describe %s: %w", id, err)
		}
		info := d.GetWorkflowExecutionInfo()
		if info.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return info.GetHistoryLength(), info.GetStateTransitionCount(), nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("workflow %s still running: %w", id, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkInvariants runs the invariant checker over the orders of the steps
// since the last check: a fast run that charged twice is not a result.
func (b *bench) checkInvariants(ctx context.Context, step string) error {
	b.mu.Lock()
	orders := b.orders
	b.orders = nil
	b.mu.Unlock()
	cfg := invariant.Config{
		Store:    b.st.Store(),
		Provider: invariant.InProcess{Provider: b.st.Provider()},
		Temporal: b.st.Client(),
		Interval: benchTiming().Interval,
	}
	if backup := b.st.Backup(); backup != nil {
		// One net charge per order across both providers, each charge at
		// the provider its attempt went to.
		cfg.Others = map[string]invariant.ProviderSource{stack.BackupName: invariant.InProcess{Provider: backup}}
	}
	report, err := invariant.Check(ctx, cfg, orders)
	if err != nil {
		return fmt.Errorf("invariants after %s: %w", step, err)
	}
	note := fmt.Sprintf("invariant checker: %d orders, %d attempts, %d charges, %d workflows", report.Orders, report.Attempts, report.Charges, report.Workflows)
	if !report.OK() {
		b.rep.InvariantsHeld = false
		note = report.String()
		for _, v := range report.Violations {
			b.progress.Error("invariant broken", "step", step, "violation", v.Message, "order", v.Order, "key", v.Key, "charge", v.ChargeID)
		}
	}
	b.rep.add(Row{Section: "invariant", Metric: "violations after " + step, Unit: "count", Value: float64(len(report.Violations)), Note: note})
	return nil
}

// poolSize is how many orders a closed-loop phase at concurrency c gets:
// enough for its length at a growth over the best throughput seen so far
// (the warm-up's for the first phase), with headroom. A phase that uses
// them all before its time ends there, and its throughput stays valid.
func poolSize(best float64, c int, d time.Duration) int {
	growth := map[int]float64{1: 1.3, 8: 3, 64: 1.5}[c]
	if growth == 0 {
		growth = 2
	}
	n := int(best*growth*d.Seconds()) + c
	return max(min(n, maxPool), 50*c, 200)
}

func refs(systems []system, results []phase, f func(phase) float64) []Ref {
	out := make([]Ref, 0, len(systems)-1)
	for i := 1; i < len(systems); i++ {
		out = append(out, Ref{Name: systems[i].name, Value: f(results[i])})
	}
	return out
}

// phaseNote says when a phase ended early because its orders ran out, and
// whether any operation failed.
func phaseNote(systems []system, results []phase, d time.Duration) string {
	var notes []string
	for i, p := range results {
		if p.elapsed < d*9/10 {
			notes = append(notes, fmt.Sprintf("%s ran out of orders after %d ops in %s", systems[i].name, p.ok+p.failed, p.elapsed.Round(time.Millisecond)))
		}
	}
	return strings.Join(notes, "; ")
}

func failedNote(systems []system, results []phase) string {
	var notes []string
	for i, p := range results {
		if p.failed > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d failed", systems[i].name, p.failed))
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, ", ") + ")"
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
