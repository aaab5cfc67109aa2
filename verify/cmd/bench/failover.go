package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/dev/stack"
	"chargeonce/fakeprovider"
	"chargeonce/store"
	"chargeonce/workflows"
)

// Shape of the failover scenarios.
const (
	// failoverWarmRounds is how many checkouts of each kind warm the
	// failover stack up: few enough that its first provider's 503s, each
	// after a success, never open its breaker.
	failoverWarmRounds = 10
	// outageConcurrency is how many checkouts at once run while the first
	// provider is down.
	outageConcurrency = 8
)

// The first provider's modes: healthy, and down, refusing every request
// with a 503 that processed nothing, which the IETF dialect reads as
// not_processed, so that the payment moves to the backup.
var (
	firstUp   = fakeprovider.Mode{Name: fakeprovider.ModeNormal}
	firstDown = fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}
)

// failover measures what moving a payment to the backup provider costs a
// checkout, on a stack of its own whose first provider has a backup
// (stack.Config.Backup): the bench's other scenarios keep one provider,
// where a refusal answers 503 instead of moving. Its phases, in order:
//
//   - checkouts one at a time with both providers healthy, alternating
//     with checkouts whose first provider answers 503: each 503 follows a
//     success, which resets the count that opens the worker's breaker, so
//     that every one of them meets the 503 rather than the breaker;
//   - the first provider down for a phase at outageConcurrency, which opens
//     its breakers, the workers' and the checkout's (provider.Health): the
//     paid share;
//   - checkouts one at a time with the breakers open, the provider still
//     down: each skips it, storing no attempt there. The orders' attempts
//     tell which checkouts skipped it, and a target holds the requests
//     that reached the provider to the probes an open breaker lets
//     through.
func (b *bench) failover(ctx context.Context, _ []system) error {
	st, stop, err := b.startStack(ctx, fakeprovider.Config{}, &fakeprovider.Config{})
	if err != nil {
		return err
	}
	defer stop()
	f := &bench{o: b.o, log: b.log, progress: b.progress, st: st, amount: b.amount, rep: b.rep,
		eventsPerCheckout: b.eventsPerCheckout}
	return f.failoverPhases(ctx, b.serialCheckout.throughput())
}

// failoverPhases runs the failover scenarios on b's stack, sizing their
// pools on serialRate, the checkouts' rate one at a time, and adds their
// rows and targets.
func (b *bench) failoverPhases(ctx context.Context, serialRate float64) error {
	b.progress.Info("failover: warming up")
	warm, _, err := b.healthyAndUnavailable(ctx, failoverWarmRounds, time.Minute)
	if err != nil {
		return err
	}
	for _, p := range warm {
		if p.failed > 0 {
			return fmt.Errorf("failover warm-up: %d failed: %w", p.failed, p.firstErr)
		}
	}

	// The checkouts one at a time run for two phases, so that their p99
	// rests on more than a handful of the slowest.
	d := 2 * b.o.phase
	b.progress.Info("failover: both healthy and the first provider answering 503, in turn", "length", d)
	alt, unavailableIDs, err := b.healthyAndUnavailable(ctx, poolSize(serialRate, 1, d), d)
	if err != nil {
		return err
	}
	healthy, unavailable := alt[0], alt[1]
	answered, err := b.firstProviderOf(ctx, unavailableIDs[:unavailable.ok+unavailable.failed])
	if err != nil {
		return err
	}

	if err := b.st.Provider().SetMode(firstDown); err != nil {
		return err
	}
	n := poolSize(serialRate, outageConcurrency, b.o.phase)
	ids, err := b.createOrders(ctx, n)
	if err != nil {
		return err
	}
	b.progress.Info("failover: the first provider down", "concurrency", outageConcurrency, "orders", n)
	outage := closedLoop(ctx, outageConcurrency, n, b.o.phase, payEach(ids, b.paidAt(stack.BackupName)))
	outageFirst, err := b.firstProviderOf(ctx, ids[:outage.ok+outage.failed])
	if err != nil {
		return err
	}

	n = poolSize(serialRate, 1, d)
	if ids, err = b.createOrders(ctx, n); err != nil {
		return err
	}
	b.progress.Info("failover: the first provider's breaker open", "orders", n, "length", d)
	open := closedLoop(ctx, 1, n, d, payEach(ids, b.paidAt(stack.BackupName)))
	skipped, err := b.firstProviderOf(ctx, ids[:open.ok+open.failed])
	if err != nil {
		return err
	}
	if err := b.st.Provider().SetMode(firstUp); err != nil {
		return err
	}

	fig := failoverFigures{healthy: healthy, unavailable: unavailable, open: open,
		outage: outage, probes: skipped.sent}
	b.failoverRows(fig, answered, outageFirst, skipped)
	b.rep.failoverTargets(fig)
	// What the first provider's refused attempt costs the server, beside a
	// whole paid checkout: the round trip a 503 adds.
	cost, err := meanHistory(ctx, b.st.Client(), answered.workflows)
	if err != nil {
		return fmt.Errorf("history of the first provider's attempts refused 503: %w", err)
	}
	b.rep.add(Row{Section: "failover", Metric: "events per attempt refused 503", Unit: "events", Value: cost.events,
		Refs: []Ref{{Name: "paid checkout", Value: b.eventsPerCheckout}},
		Note: fmt.Sprintf("the payment workflow of the first provider's attempt in the 503 checkouts, before the backup's pays in one of its own; mean of the first %d, DescribeWorkflowExecution: %s", len(answered.workflows), cost.lengths)})
	return b.checkInvariants(ctx, "failover")
}

// healthyAndUnavailable alternates, one at a time, checkouts with both
// providers healthy and checkouts whose first provider answers 503, each
// on an order of its own, for at most n rounds or d. Each checkout puts
// the first provider in its mode before it starts: in-process, a lock and
// an assignment. It returns their phases, healthy first, and the orders of
// the 503s.
func (b *bench) healthyAndUnavailable(ctx context.Context, n int, d time.Duration) ([]phase, []int64, error) {
	healthy, err := b.createOrders(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	unavailable, err := b.createOrders(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	inMode := func(m fakeprovider.Mode, pay func(context.Context, int64) error) func(context.Context, int64) error {
		return func(ctx context.Context, orderID int64) error {
			if err := b.st.Provider().SetMode(m); err != nil {
				return err
			}
			return pay(ctx, orderID)
		}
	}
	phases := alternate(ctx, n, d,
		payEach(healthy, inMode(firstUp, b.paidAt(chargeonce.DefaultProvider))),
		payEach(unavailable, inMode(firstDown, b.paidAt(stack.BackupName))))
	for i, name := range []string{"both healthy", "first provider answers 503"} {
		if p := phases[i]; p.failed > 0 {
			b.progress.Warn("failures", "system", name, "failed", p.failed, "error", p.firstErr)
		}
	}
	return phases, unavailable, nil
}

// paidAt is the checkout of an order that must end paid at the provider
// named want.
func (b *bench) paidAt(want string) func(context.Context, int64) error {
	return func(ctx context.Context, orderID int64) error {
		res, err := b.st.Checkout().Checkout(ctx, orderID, cardToken)
		if err != nil {
			return err
		}
		if res.Outcome != checkout.OutcomePaid || res.Attempt.Provider != want {
			return fmt.Errorf("order %d: checkout answered %s at %s, want paid at %s", orderID, res.Outcome, res.Attempt.Provider, want)
		}
		return nil
	}
}

// firstProvider is how the first provider met the attempts of some
// checkouts, read from their request logs.
type firstProvider struct {
	// sent counts the attempts at the first provider whose request
	// reached it, and heldBack those the workers' breaker sent nothing of:
	// the log lists only what went out.
	sent, heldBack int
	// skipped counts the orders with no attempt at the first provider:
	// the checkout's breaker skipped it.
	skipped int
	// workflows are the payment workflows of the first historySamples
	// attempts at it.
	workflows []string
}

// add counts the attempts of one order.
func (t *firstProvider) add(attempts []store.Attempt) {
	asked := false
	for _, a := range attempts {
		if a.Provider != chargeonce.DefaultProvider {
			continue
		}
		asked = true
		if len(t.workflows) < historySamples {
			t.workflows = append(t.workflows, workflows.WorkflowID(a.Key))
		}
		if len(a.Requests) == 0 {
			t.heldBack++
			continue
		}
		t.sent++
	}
	if !asked {
		t.skipped++
	}
}

// firstProviderOf reads the attempts of the orders ids.
func (b *bench) firstProviderOf(ctx context.Context, ids []int64) (firstProvider, error) {
	var t firstProvider
	for _, id := range ids {
		_, attempts, err := b.st.Store().GetOrder(ctx, id)
		if err != nil {
			return t, err
		}
		t.add(attempts)
	}
	return t, nil
}

// failoverRows adds the rows of the failover scenarios; answered,
// outageFirst and skipped are the first provider's share of the
// unavailable, outage and open phases.
func (b *bench) failoverRows(f failoverFigures, answered, outageFirst, skipped firstProvider) {
	systems := []system{{name: "both healthy"}, {name: "first provider answers 503"}, {name: "breaker open"}}
	results := []phase{f.healthy, f.unavailable, f.open}
	alt := fmt.Sprintf("closed loop at concurrency 1; with both providers healthy (paid at the first) and with the first answering 503 (paid at the backup) alternating, one checkout each in turn, for %s: %d and %d checkouts; %d of the 503 checkouts met the 503, %d its breaker",
		2*b.o.phase, f.healthy.ok+f.healthy.failed, f.unavailable.ok+f.unavailable.failed, answered.sent, answered.heldBack)
	openNote := fmt.Sprintf("closed loop at concurrency 1 for %s after the outage below, the first provider still down: %d checkouts, %d skipped it by the checkout's breaker, %d held back by the workers' breaker, %d reached it (the probes); reference: both healthy, alternating with the 503s",
		2*b.o.phase, f.open.ok+f.open.failed, skipped.skipped, skipped.heldBack, skipped.sent)
	for i, q := range failoverQuantiles {
		pct := func(p phase) float64 { return p.percentile(q) }
		note := ""
		if i == 0 {
			note = openNote + failedNote(systems, results)
		}
		b.rep.add(Row{Section: "failover", Metric: fmt.Sprintf("p%.0f first provider's breaker open", q*100), Unit: "ms",
			Value: pct(f.open), Refs: []Ref{{Name: "both healthy", Value: pct(f.healthy)}}, Note: note})
	}
	for i, q := range failoverQuantiles {
		pct := func(p phase) float64 { return p.percentile(q) }
		note := ""
		if i == 0 {
			note = alt
		}
		b.rep.add(Row{Section: "failover", Metric: fmt.Sprintf("p%.0f first provider answers 503", q*100), Unit: "ms",
			Value: pct(f.unavailable), Refs: []Ref{{Name: "both healthy", Value: pct(f.healthy)}, {Name: "breaker open", Value: pct(f.open)}}, Note: note})
	}
	for i, q := range failoverQuantiles {
		note := ""
		if i == 0 {
			note = "p50 with the 503 less p50 with both healthy (p99 alike), against one round trip: a checkout with both healthy at the same percentile, an attempt that asks a provider and hears its answer; the ratio is the round trips the 503 cost"
		}
		b.rep.add(Row{Section: "failover", Metric: fmt.Sprintf("p%.0f added by the first provider's 503", q*100), Unit: "ms",
			Value: f.unavailable.percentile(q) - f.healthy.percentile(q), Refs: []Ref{{Name: "one round trip", Value: f.healthy.percentile(q)}}, Note: note})
	}
	notes := []string{fmt.Sprintf("closed loop at concurrency %d for %s, the first provider answering every request 503 from the start: %d of %d checkouts paid; %d met its 503, %d were held back by the workers' breaker, %d skipped it by the checkout's",
		outageConcurrency, b.o.phase, f.outage.ok, f.outage.ok+f.outage.failed, outageFirst.sent, outageFirst.heldBack, outageFirst.skipped)}
	if s := phaseNote([]system{{name: "the outage"}}, []phase{f.outage}, b.o.phase); s != "" {
		notes = append(notes, s)
	}
	b.rep.add(Row{Section: "failover", Metric: "paid share, first provider down", Unit: "%", Value: 100 * f.outage.paidShare(),
		Note: strings.Join(notes, "; ")})
}
