package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"chargeonce/checkout"
)

// Shape of the follow-up phases.
const (
	// followUpConcurrency is how many checkouts at once ready the orders
	// of a follow-up phase; the follow-ups themselves run one at a time.
	followUpConcurrency = 8
	// followUpPoolGrowth sizes the pool over the checkouts' serial rate,
	// and minFollowUpPool bounds it from below.
	followUpPoolGrowth = 3
	minFollowUpPool    = 50
)

// Metrics of the checkout rows that the follow-up rows stand beside.
const (
	checkoutEventsMetric = "events per paid checkout"
	lastLatencyMetric    = "p50 overhead over provider 50ms"
	serialCPUMetric      = "CPU per op c=1"
)

// followUp is an operation that the API runs on an order once its
// checkout has answered, such as a refund of a paid order or the capture
// of an authorized hold. Its phase measures it one at a time, and its rows
// stand beside the checkouts': its p50 and CPU per operation beside the
// checkouts' closed-loop phase at c=1, the history of its workflows beside
// a paid checkout's.
type followUp struct {
	// name names the operation in the logs and in its rows' metrics.
	name string
	// capture is how the checkouts take the money, and want their answer.
	capture checkout.Capture
	want    checkout.Outcome
	// run does the operation on the order, through the service the API
	// calls, and returns the IDs of the workflows whose histories it
	// costs, one for each of roles, in their order.
	run   func(ctx context.Context, orderID int64) ([]string, error)
	roles []string
	// does says what the phase did with its operations, for the notes.
	does string
	// eventsMetric names the row of the histories of one operation.
	eventsMetric string
	// endsAll runs the operation, unmeasured, on every order that the
	// phase did not reach, because the state the checkouts leave them in
	// is one the invariant checker does not know: it reads a hold that
	// nobody captured as a succeeded attempt without a charge.
	endsAll bool
}

// runFollowUp readies a pool of orders with checkouts, then runs f on them
// one at a time for one phase and adds its rows. Its pool is sized on the
// checkouts' serial rate; a phase that runs out of orders ends early and
// says so.
func (b *bench) runFollowUp(ctx context.Context, f followUp) error {
	if err := b.setProviderDelay(0); err != nil {
		return err
	}
	n := max(int(followUpPoolGrowth*b.serialCheckout.throughput()*b.o.phase.Seconds())+1, minFollowUpPool)
	ids, err := b.createOrders(ctx, n)
	if err != nil {
		return err
	}
	b.progress.Info(f.name+"s: checking orders out", "orders", n, "capture", string(f.capture.Mode))
	ready := closedLoop(ctx, followUpConcurrency, n, time.Hour, func(ctx context.Context, i int) error {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		res, err := b.st.Checkout().CheckoutWith(ctx, ids[i], cardToken, f.capture)
		if err != nil {
			return err
		}
		if res.Outcome != f.want {
			return fmt.Errorf("order %d: checkout answered %s, want %s", ids[i], res.Outcome, f.want)
		}
		return nil
	})
	if ready.failed > 0 {
		return fmt.Errorf("checking out the orders to %s: %d of %d failed: %w", f.name, ready.failed, n, ready.firstErr)
	}

	samples := make([]*keys, len(f.roles))
	for i := range samples {
		samples[i] = &keys{limit: historySamples}
	}
	b.progress.Info(f.name+"s", "concurrency", 1, "orders", n)
	p := closedLoop(ctx, 1, n, b.o.phase, func(ctx context.Context, i int) error {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		wfs, err := f.run(ctx, ids[i])
		if err != nil {
			return err
		}
		for r, id := range wfs {
			samples[r].add(id)
		}
		return nil
	})
	if p.failed > 0 {
		b.progress.Warn("failures", "system", f.name, "failed", p.failed, "error", p.firstErr)
	}
	if rest := ids[p.ok+p.failed:]; f.endsAll && len(rest) > 0 {
		b.progress.Info(f.name+"s of the orders the phase did not reach, unmeasured", "orders", len(rest))
		ended := closedLoop(ctx, followUpConcurrency, len(rest), time.Hour, func(ctx context.Context, i int) error {
			ctx, cancel := context.WithTimeout(ctx, opTimeout)
			defer cancel()
			_, err := f.run(ctx, rest[i])
			return err
		})
		if ended.failed > 0 {
			return fmt.Errorf("%ss of the orders the phase did not reach: %d of %d failed: %w", f.name, ended.failed, len(rest), ended.firstErr)
		}
	}
	notes := []string{fmt.Sprintf("closed loop at concurrency 1 for %s: %d %s; reference: the checkouts' c=1 phase", b.o.phase, p.ok, f.does)}
	systems := []system{{name: f.name}}
	if s := phaseNote(systems, []phase{p}, b.o.phase); s != "" {
		notes = append(notes, s)
	}
	note := strings.Join(notes, "; ") + failedNote(systems, []phase{p})
	b.rep.addAfter(lastLatencyMetric, Row{Section: "latency", Metric: fmt.Sprintf("p50 %s c=1", f.name), Unit: "ms",
		Value: p.percentile(0.5), Refs: []Ref{{Name: "checkout c=1", Value: b.serialCheckout.percentile(0.5)}}, Note: note})
	b.rep.addAfter(serialCPUMetric, Row{Section: "cost", Metric: fmt.Sprintf("CPU per %s c=1", f.name), Unit: "ms",
		Value: p.cpuPerOp(), Refs: []Ref{{Name: "checkout c=1", Value: b.serialCheckout.cpuPerOp()}},
		Note: fmt.Sprintf("process user+system CPU over the %s phase / successful %ss", f.name, f.name)})

	// One operation's histories are its workflows' together: the sum of
	// the mean of each role's samples.
	var events float64
	var parts []string
	for r, role := range f.roles {
		h, err := meanHistory(ctx, b.st.Client(), samples[r].ids)
		if err != nil {
			return fmt.Errorf("history of the %ss' %s workflows: %w", f.name, role, err)
		}
		events += h.events
		parts = append(parts, fmt.Sprintf("%s %.2f (%s)", role, h.events, h.lengths))
	}
	b.rep.addAfter(checkoutEventsMetric, Row{Section: "history", Metric: f.eventsMetric, Unit: "events", Value: events,
		Refs: []Ref{{Name: "paid checkout", Value: b.eventsPerCheckout}, {Name: "bare workflow", Value: b.eventsPerBare}},
		Note: fmt.Sprintf("mean of the first %d, each read once closed, DescribeWorkflowExecution: %s", len(samples[0].ids), strings.Join(parts, " + "))})
	return b.checkInvariants(ctx, f.name+"s")
}
