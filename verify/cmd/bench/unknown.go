package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/fakeprovider"
	"chargeonce/workflows"
)

// gate is the fake provider's clock for its processing delays. Open, it
// waits the delay; closed, every charge that starts processing is held until
// the gate opens again, which is how a provider that is slow beyond any
// budget and then recovers is played.
type gate struct {
	mu sync.Mutex
	// held is closed on release; nil while the gate is open.
	held chan time.Time
}

func (g *gate) after(d time.Duration) <-chan time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		return g.held
	}
	return time.After(d)
}

func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == nil {
		g.held = make(chan time.Time)
	}
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
}

// unknownOutcomes leaves N attempts waiting in reconciliation and measures
// what they cost, then lets the provider recover and measures how long
// reconciliation takes to settle them all.
//
// The provider is put in slow mode with its processing held: each charge is
// accepted but not finished, so the first request times out, the retries
// find it in flight (409), the charge budget runs out, and the checkout
// answers pending. Once released, every charge exists at the provider, and
// each attempt's next lookup finds it and settles it as paid. (Drop mode
// would process nothing, so its attempts could only be abandoned.)
func (b *bench) unknownOutcomes(ctx context.Context, _ []system) error {
	n := b.o.unknown
	ids, err := b.createOrders(ctx, n)
	if err != nil {
		return err
	}
	// Earlier phases may have left attempts open (checkouts past their
	// budget under overload); they settle on their own shortly.
	if _, err := b.waitOpen(ctx, time.Now(), 0); err != nil {
		b.progress.Warn("attempts of earlier phases are still open", "error", err)
	}
	openBefore, _, err := b.st.Store().OpenAttemptStats(ctx)
	if err != nil {
		return err
	}
	before, err := measureMemory()
	if err != nil {
		return err
	}
	if err := b.st.Provider().SetMode(fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: time.Hour}); err != nil {
		return err
	}
	b.gate.hold()
	phaseStart := time.Now()
	b.progress.Info("unknown outcomes: starting checkouts against a held provider", "attempts", n)
	// A checkout whose requests all went out ends pending (202); one whose
	// requests the open breaker held back ends not processed (503).
	var pending, notProcessed atomic.Int64
	p := closedLoop(ctx, min(n, unknownConcurrency), n, time.Hour, func(ctx context.Context, i int) error {
		res, err := b.st.Checkout().Checkout(ctx, ids[i], cardToken)
		if err != nil {
			return err
		}
		switch res.Outcome {
		case checkout.OutcomePending:
			pending.Add(1)
		case checkout.OutcomeNotProcessed:
			notProcessed.Add(1)
		default:
			return fmt.Errorf("order %d: checkout answered %s, want pending or not processed", ids[i], res.Outcome)
		}
		return nil
	})
	if p.failed > 0 {
		b.progress.Warn("unknown outcomes: some checkouts ended neither pending nor not processed", "failed", p.failed, "error", p.firstErr)
	}
	openNow, _, err := b.st.Store().OpenAttemptStats(ctx)
	if err != nil {
		return err
	}
	open := openNow - openBefore
	after, err := measureMemory()
	if err != nil {
		return err
	}

	// Recovery: new charges are processed at once again, and the held ones
	// finish now.
	if err := b.setProviderDelay(0); err != nil {
		return err
	}
	released := time.Now()
	b.gate.release()
	if err := b.st.Provider().Wait(ctx); err != nil {
		return err
	}
	// A request refused by the open circuit breaker never reached the
	// provider, so its attempt has no charge to find and waits for the
	// abandon deadline; only the attempts with a charge can settle now.
	charged := chargedOrders(b.st.Provider().Charges(), ids)
	b.progress.Info("unknown outcomes: provider recovered, waiting for reconciliation", "open", open, "charged", len(charged))
	settle, unpaid, err := b.waitPaid(ctx, released, charged)
	if err != nil {
		return err
	}

	perAttempt := func(delta int64) float64 { return float64(delta) / float64(max(open, 1)) }
	note := fmt.Sprintf("%d of %d checkouts answered in %s (%d pending, %d nothing charged); %d attempts open", p.ok, n, p.elapsed.Round(time.Second), pending.Load(), notProcessed.Load(), open)
	b.rep.add(Row{Section: "unknown", Metric: fmt.Sprintf("RSS per open attempt (N=%d)", n), Unit: "bytes",
		Value: perAttempt(after.rss - before.rss),
		Note:  note + fmt.Sprintf("; VmRSS %d -> %d MiB, after GC and FreeOSMemory", before.rss>>20, after.rss>>20)})
	b.rep.add(Row{Section: "unknown", Metric: "Go heap per open attempt", Unit: "bytes",
		Value: perAttempt(after.heap - before.heap),
		Note: fmt.Sprintf("HeapInuse %d -> %d MiB; goroutines %d -> %d; includes the fake provider holding each charge",
			before.heap>>20, after.heap>>20, before.goroutines, after.goroutines)})
	settleNote := fmt.Sprintf("until every attempt with a charge is settled paid; each is looked up on its own backoff grid, at most %s apart", longestLookupGap(benchTiming()))
	if unpaid > 0 {
		// Not a failure of the run: the invariant check below still says
		// whether anything was charged twice or lost.
		b.progress.Warn("unknown outcomes: charged attempts still unsettled", "unpaid", unpaid, "charged", len(charged))
		settleNote = fmt.Sprintf("NOT ALL SETTLED: %d of %d charged attempts were still open when the wait ended; %d open attempts ask for %.0f lookups a second on average, and the provider allows %v",
			unpaid, len(charged), open, benchTiming().LookupDemand(open), b.st.Provider().LookupRate())
	}
	b.rep.add(Row{Section: "unknown", Metric: "time to settle all charged attempts after recovery", Unit: "s", Value: settle.Seconds(), Note: settleNote})
	limit := b.st.Provider().LookupRate()
	// Each charged attempt is found by its next lookup after the recovery:
	// at most the longest gap of its backoff grid away, plus the time the
	// provider's rate takes to serve all of them.
	settleBound := longestLookupGap(benchTiming()) + time.Duration(float64(len(charged))/limit*float64(time.Second))
	b.rep.target("unknown: seconds to settle every charged attempt after recovery / (longest lookup gap + charged ÷ rate)", settle.Seconds()/settleBound.Seconds(), 1, false)

	b.rep.add(Row{Section: "unknown", Metric: "checkouts answered 202 pending", Unit: "checkouts", Value: float64(pending.Load()),
		Note: "at least one request of the attempt may have been processed: reconciliation looks it up"})
	b.rep.add(Row{Section: "unknown", Metric: "checkouts answered 503 nothing charged", Unit: "checkouts", Value: float64(notProcessed.Load()),
		Note: "the open breaker held every request of the attempt back: settled not_processed at once, the order placed again"})

	lookups := lookupTimes(b.st.Provider().Requests(), phaseStart)
	peak := peakPerSecond(lookups)
	b.rep.add(Row{Section: "unknown", Metric: "peak lookups per second at the provider", Unit: "lookups/s", Value: float64(peak),
		Note: fmt.Sprintf("the most GET /v1/charges in any 1 s window of the phase; the provider publishes %v", limit)})
	b.rep.target("unknown: peak lookups per second / published lookup rate", float64(peak)/limit, 1, false)
	b.rep.add(Row{Section: "unknown", Metric: "lookups per open attempt", Unit: "lookups", Value: float64(len(lookups)) / float64(max(open, 1)),
		Note: fmt.Sprintf("%d lookups in the phase for %d attempts left open", len(lookups), open)})

	settled, looked, err := b.notProcessed(ctx, ids)
	if err != nil {
		return err
	}
	b.rep.add(Row{Section: "unknown", Metric: "attempts settled not_processed", Unit: "attempts", Value: float64(settled),
		Note: "by the end of the phase; a checkout that ran out of its budget first answered 202, and its workflow settled later"})
	b.rep.add(Row{Section: "unknown", Metric: "not_processed attempts looked up", Unit: "attempts", Value: float64(looked),
		Note: "an attempt that processed nothing has no charge to find; its lastCheckedAt must stay empty"})
	b.rep.target("unknown: not_processed attempts looked up", float64(looked), 0, false)
	return b.checkInvariants(ctx, "unknown outcomes")
}

// lookupTimes returns when each lookup by merchant reference since since
// reached the provider.
func lookupTimes(requests []fakeprovider.RequestRecord, since time.Time) []time.Time {
	var out []time.Time
	for _, r := range requests {
		if r.Method == http.MethodGet && r.Path == "/v1/charges" && !r.Time.Before(since) {
			out = append(out, r.Time)
		}
	}
	return out
}

// peakPerSecond is the most times that fall within any one second.
func peakPerSecond(times []time.Time) int {
	sorted := slices.SortedFunc(slices.Values(times), time.Time.Compare)
	peak, first := 0, 0
	for last, t := range sorted {
		for t.Sub(sorted[first]) >= time.Second {
			first++
		}
		peak = max(peak, last-first+1)
	}
	return peak
}

// notProcessed counts the not_processed attempts of the orders, and those
// of them that were ever looked up at the provider.
func (b *bench) notProcessed(ctx context.Context, ids []int64) (settled, looked int, err error) {
	for _, id := range ids {
		_, attempts, err := b.st.Store().GetOrder(ctx, id)
		if err != nil {
			return 0, 0, err
		}
		for _, a := range attempts {
			if a.Status != chargeonce.AttemptNotProcessed {
				continue
			}
			settled++
			if a.LastCheckedAt != nil {
				looked++
			}
		}
	}
	return settled, looked, nil
}

// settleLimit bounds the waits for reconciliation: the longest gap between
// two lookups of an attempt and a minute, by which every attempt has been
// looked up since the provider recovered, unless its lookups waited on
// their queue for the provider's rate.
var settleLimit = longestLookupGap(benchTiming()) + time.Minute

// longestLookupGap is the longest time between two lookups of an attempt
// that the provider does not answer.
func longestLookupGap(t workflows.Timing) time.Duration {
	times := t.LookupTimes("", time.Time{})
	var gap time.Duration
	for i := 1; i < len(times); i++ {
		gap = max(gap, times[i].Sub(times[i-1]))
	}
	return gap
}

// waitOpen polls the database until at most target attempts are open and
// returns how long that took from since.
func (b *bench) waitOpen(ctx context.Context, since time.Time, target int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, settleLimit)
	defer cancel()
	open := -1
	for {
		n, _, err := b.st.Store().OpenAttemptStats(ctx)
		if err == nil {
			open = n
			if open <= target {
				return time.Since(since), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%d attempts still open, want at most %d, %s after %s", open, target, settleLimit, since.Format(time.TimeOnly))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitPaid polls the database until every order in ids is paid, or until
// settleLimit has passed. It returns how long it waited from since and how
// many orders were still unpaid; its error is only the run's cancellation.
func (b *bench) waitPaid(ctx context.Context, since time.Time, ids []int64) (time.Duration, int, error) {
	deadline := since.Add(settleLimit)
	pending := ids
	for {
		var still []int64
		for _, id := range pending {
			o, _, err := b.st.Store().GetOrder(ctx, id)
			if err != nil || o.Status != chargeonce.OrderPaid {
				still = append(still, id)
			}
		}
		pending = still
		if len(pending) == 0 || time.Now().After(deadline) {
			return time.Since(since), len(pending), nil
		}
		select {
		case <-ctx.Done():
			return 0, len(pending), ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// chargedOrders returns the orders among ids that hold a charge at the
// provider.
func chargedOrders(charges []fakeprovider.Charge, ids []int64) []int64 {
	want := make(map[int64]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	var out []int64
	for _, c := range charges {
		if _, orderID, _, err := chargeonce.ParseMerchantReference(c.MerchantReference); err == nil && want[orderID] {
			out = append(out, orderID)
			delete(want, orderID)
		}
	}
	return out
}
