package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/refund"
	"chargeonce/workflows"
)

// Shape of the refund phase.
const (
	// refundConcurrency is how many checkouts at once pay the orders that
	// the refund phase refunds; the refunds themselves run one at a time.
	refundConcurrency = 8
	// refundPoolGrowth sizes the pool over the checkouts' serial rate, and
	// minRefundPool bounds it from below.
	refundPoolGrowth = 3
	minRefundPool    = 50
	refundReason     = "bench refund"
)

// Metrics of the checkout rows that the refund rows stand beside.
const (
	checkoutEventsMetric = "events per paid checkout"
	lastLatencyMetric    = "p50 overhead over provider 50ms"
)

// refunds pays a pool of orders, then refunds them whole, one at a time,
// through the refund service the API calls, for one phase: the refunds'
// latency stands beside the checkouts' at concurrency 1, and the history
// of a succeeded refund's workflow beside a paid checkout's.
func (b *bench) refunds(ctx context.Context, _ []system) error {
	if err := b.setProviderDelay(0); err != nil {
		return err
	}
	// Refunds are sized on the checkouts' serial rate; a phase that runs
	// out of orders ends early and says so.
	n := max(int(refundPoolGrowth*b.serialCheckout.throughput()*b.o.phase.Seconds())+1, minRefundPool)
	ids, err := b.createOrders(ctx, n)
	if err != nil {
		return err
	}
	b.progress.Info("refunds: paying orders", "orders", n)
	paid := closedLoop(ctx, refundConcurrency, n, time.Hour, func(ctx context.Context, i int) error {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		res, err := b.st.Checkout().Checkout(ctx, ids[i], cardToken)
		if err != nil {
			return err
		}
		if res.Outcome != checkout.OutcomePaid {
			return fmt.Errorf("order %d: checkout answered %s", ids[i], res.Outcome)
		}
		return nil
	})
	if paid.failed > 0 {
		return fmt.Errorf("paying the orders to refund: %d of %d failed: %w", paid.failed, n, paid.firstErr)
	}

	refundKeys := &keys{limit: historySamples}
	b.progress.Info("refunds", "concurrency", 1, "orders", n)
	p := closedLoop(ctx, 1, n, b.o.phase, func(ctx context.Context, i int) error {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		res, err := b.st.Refunds().Refund(ctx, refund.Request{
			OrderID: ids[i], Reason: refundReason,
			RequestKey: "bench-refund-" + strconv.FormatInt(ids[i], 10),
		})
		if err != nil {
			return err
		}
		if res.Refund.Status != chargeonce.RefundSucceeded {
			return fmt.Errorf("order %d: refund answered %s", ids[i], res.Refund.Status)
		}
		refundKeys.add(workflows.RefundWorkflowID(res.Refund.Key))
		return nil
	})
	if p.failed > 0 {
		b.progress.Warn("failures", "system", "refund", "failed", p.failed, "error", p.firstErr)
	}
	notes := []string{fmt.Sprintf("closed loop at concurrency 1 for %s: %d whole refunds of paid orders through refund.Service.Refund, the service the API calls; reference: the checkouts' c=1 phase", b.o.phase, p.ok)}
	systems := []system{{name: "refund"}}
	if s := phaseNote(systems, []phase{p}, b.o.phase); s != "" {
		notes = append(notes, s)
	}
	note := strings.Join(notes, "; ") + failedNote(systems, []phase{p})
	b.rep.addAfter(lastLatencyMetric, Row{Section: "latency", Metric: "p50 refund c=1", Unit: "ms",
		Value: p.percentile(0.5), Refs: []Ref{{Name: "checkout c=1", Value: b.serialCheckout.percentile(0.5)}}, Note: note})

	h, err := meanHistory(ctx, b.st.Client(), refundKeys.ids)
	if err != nil {
		return fmt.Errorf("history of the refunds: %w", err)
	}
	b.rep.addAfter(checkoutEventsMetric, Row{Section: "history", Metric: "events per succeeded refund", Unit: "events", Value: h.events,
		Refs: []Ref{{Name: "paid checkout", Value: b.eventsPerCheckout}, {Name: "bare workflow", Value: b.eventsPerBare}},
		Note: fmt.Sprintf("mean of %d succeeded refunds, DescribeWorkflowExecution", len(refundKeys.ids))})
	return b.checkInvariants(ctx, "refunds")
}
