package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"time"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/dev/stack"
	"chargeonce/fakeprovider"
	"chargeonce/workflows"
)

// eventsProviderDelay is how long the provider of the events mode takes
// per charge: the article's 15-second provider, slower than the whole
// charge budget of the default timing, so that every checkout answers
// pending and the provider finishes the charge afterwards.
const eventsProviderDelay = 15 * time.Second

// Bounds of --events.
const maxEvents = 1000

// path is one way an unknown outcome learns that the charge finished.
type path struct {
	name   string
	events bool
}

// runEvents is the events mode: N checkouts against a provider slower than
// the charge budget, on the default timing, once with the provider's
// events and once with lookups only, each on a stack of its own. It
// reports how long after the provider finished each charge its order was
// paid.
func runEvents(ctx context.Context, o options, log, progress *slog.Logger) (*Report, error) {
	started := time.Now()
	timing := workflows.DefaultTiming()
	rep := &Report{
		Command:        "go run ./verify/cmd/bench " + strings.Join(os.Args[1:], " "),
		Started:        started.UTC().Format(time.RFC3339),
		GoVersion:      runtime.Version(),
		CPUs:           runtime.NumCPU(),
		InvariantsHeld: true,
		Setup: []string{
			// At once: one after the other, their timeouts would open the
			// provider client's circuit breaker, and most checkouts would
			// send nothing.
			fmt.Sprintf("%d checkouts at once, each against a provider that takes %s per charge, on the default timing (charge budget %s, first lookup at %s plus the key's jitter of up to %s)",
				o.events, eventsProviderDelay, timing.SendBudget, timing.MinAge, timing.Interval),
			"each checkout answers 202 pending; the time measured is from the charge's creation at the provider to the order's paid update in the merchant database",
			"provider events: the fake provider posts a signed event per charge to POST /webhooks/provider, whose signal makes the workflow look the charge up at once",
			"lookups only: no events; the workflow finds the charge at its first scheduled lookup",
		},
	}
	var results [][]time.Duration
	var lookupRate float64
	for _, p := range []path{{"provider events", true}, {"lookups only", false}} {
		progress.Info("events: starting", "path", p.name, "checkouts", o.events)
		took, rate, err := measurePath(ctx, o, p, timing, log, progress, rep)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		results, lookupRate = append(results, took), rate
	}
	events, lookups := results[0], results[1]
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p99", 0.99}} {
		v, ref := percentileMillis(events, q.q), percentileMillis(lookups, q.q)
		rep.add(Row{Section: "events", Metric: fmt.Sprintf("charge finished → order paid %s (N=%d)", q.name, o.events), Unit: "ms",
			Value: v, Refs: []Ref{{Name: "lookups only", Value: ref, Ratio: v / ref}},
			Note: fmt.Sprintf("max %.0f ms with events, %.0f ms with lookups only", percentileMillis(events, 1), percentileMillis(lookups, 1))})
	}
	// Every event asks for a lookup, and the lookups of charges that finish
	// together are paced at the provider's published rate: the last of N is
	// served N ÷ rate after the first, which no event can hasten.
	bound := time.Second + time.Duration(float64(len(events))/lookupRate*float64(time.Second))
	rep.target(fmt.Sprintf("events: p99 charge finished → order paid / (1s + %d lookups ÷ %v a second)", len(events), lookupRate),
		percentileMillis(events, 0.99)/ms(bound), 1, false)
	rep.Wall = time.Since(started).Round(time.Second).String()
	return rep, nil
}

// measurePath runs the checkouts of one path on a fresh stack, and returns,
// per order, how long after its charge it was paid, and the lookup rate the
// provider published.
func measurePath(ctx context.Context, o options, p path, timing workflows.Timing, log, progress *slog.Logger, rep *Report) ([]time.Duration, float64, error) {
	dir, err := os.MkdirTemp("", "chargeonce-bench-events-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	st, err := stack.Start(ctx, stack.Config{
		DataDir:        dir,
		UIPort:         -1,
		Timing:         timing,
		Provider:       fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: eventsProviderDelay}},
		ProviderEvents: p.events,
		Logger:         log,
	})
	if err != nil {
		return nil, 0, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = st.Close(ctx)
	}()
	rep.Persistence = st.TemporalPersistence()
	b := &bench{o: o, log: log, progress: progress, st: st, rep: rep}
	amount, err := chargeonce.ParseMoney("548.90", "TRY")
	if err != nil {
		return nil, 0, err
	}
	b.amount = amount
	ids, err := b.createOrders(ctx, o.events)
	if err != nil {
		return nil, 0, err
	}
	// A checkout whose requests the provider client's open circuit breaker
	// all held back answers not processed: nothing was charged, and it is
	// left out.
	pending := make([]bool, len(ids))
	res := closedLoop(ctx, o.events, o.events, time.Hour, func(ctx context.Context, i int) error {
		r, err := st.Checkout().Checkout(ctx, ids[i], cardToken)
		switch {
		case err != nil:
			return err
		case r.Outcome == checkout.OutcomePending:
			pending[i] = true
		case r.Outcome != checkout.OutcomeNotProcessed:
			return fmt.Errorf("order %d: checkout answered %s, want pending or not processed", ids[i], r.Outcome)
		}
		return nil
	})
	if res.failed > 0 {
		return nil, 0, fmt.Errorf("%d checkouts failed: %w", res.failed, res.firstErr)
	}
	var answered []int64
	for i, id := range ids {
		if pending[i] {
			answered = append(answered, id)
		}
	}
	// A request that timed out before it reached the provider leaves its
	// attempt pending without a charge, to be abandoned at its deadline;
	// only the attempts with a charge are measured.
	if err := st.Provider().Wait(ctx); err != nil {
		return nil, 0, err
	}
	measured := chargedOrders(st.Provider().Charges(), answered)
	rep.Setup = append(rep.Setup, fmt.Sprintf("%s: %d of %d checkouts answered 202 pending, %d of them with a charge at the provider, which are measured; the others had nothing charged",
		p.name, len(answered), len(ids), len(measured)))
	ids = measured
	// Every order is paid by its first lookup at the latest.
	deadline := time.Now().Add(timing.MinAge + timing.Interval + time.Minute)
	var took []time.Duration
	for len(took) < len(ids) {
		if time.Now().After(deadline) {
			return nil, 0, fmt.Errorf("%d of %d orders still unpaid at %s", len(ids)-len(took), len(ids), deadline.Format(time.TimeOnly))
		}
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if took, err = paidAfterCharge(ctx, st, ids); err != nil {
			return nil, 0, err
		}
	}
	if err := b.checkInvariants(ctx, p.name); err != nil {
		return nil, 0, err
	}
	return took, st.Provider().LookupRate(), nil
}

// paidAfterCharge returns, for each paid order of ids, how long after the
// provider created its charge the order was paid.
func paidAfterCharge(ctx context.Context, st *stack.Stack, ids []int64) ([]time.Duration, error) {
	created := map[string]time.Time{}
	for _, c := range st.Provider().Charges() {
		created[c.ID] = c.Created
	}
	var took []time.Duration
	for _, id := range ids {
		o, _, err := st.Store().GetOrder(ctx, id)
		if err != nil {
			return nil, err
		}
		if o.Status != chargeonce.OrderPaid {
			continue
		}
		at, ok := created[o.ProviderPaymentID]
		if !ok {
			return nil, fmt.Errorf("order %d is paid by %s, which the provider does not hold", id, o.ProviderPaymentID)
		}
		took = append(took, o.UpdatedAt.Sub(at))
	}
	return took, nil
}
