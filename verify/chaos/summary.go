package chaos

import (
	"context"
	"fmt"
	"time"

	"chargeonce"
	"chargeonce/dev/stack"
	"chargeonce/fakeprovider"
	"chargeonce/verify/invariant"
)

// finish settles the days of a run that began then, as the daily schedule
// would, and summarizes it.
func (r *run) finish(ctx context.Context, began time.Time) (Summary, error) {
	dates, err := r.settleDays(ctx, began)
	if err != nil {
		return Summary{}, err
	}
	// The settlement stores the refunds of the late charges that its
	// reports prove (all of them on the cluster, which leaves the planted
	// ones to it). They finish by themselves, as every refund must, before
	// the summary counts what is still pending.
	if err := r.settle(ctx, true); err != nil {
		return Summary{}, err
	}
	sum, err := r.summarize(ctx, dates)
	sum.Wall = time.Since(began)
	return sum, err
}

// summarize reads the end state and runs the checker, which also reads the
// settlement of the days settled.
func (r *run) summarize(ctx context.Context, settled []string) (Summary, error) {
	r.mu.Lock()
	s := Summary{
		Checkouts:        len(r.orders),
		CheckoutRequests: r.requests,
		Answers:          r.answers,
		Refused:          r.refused,
		Behaviours:       r.behave,
		Faults:           r.faults,
		Unexpected:       r.unexpected,
		Deploys:          r.deployed,
		Orders:           map[chargeonce.OrderStatus]int{},
		Attempts:         map[chargeonce.AttemptStatus]int{},
	}
	ids := append([]int64(nil), r.orders...)
	r.mu.Unlock()

	states, err := r.providerStates(ctx)
	if err != nil {
		return s, err
	}
	var requests []fakeprovider.RequestRecord
	for _, ps := range states {
		for _, c := range ps.Charges {
			switch c.Status {
			case fakeprovider.ChargeSucceeded:
				s.ChargesSucceeded++
			case fakeprovider.ChargeFailed:
				s.ChargesFailed++
			}
		}
		requests = append(requests, ps.Requests...)
	}
	s.ChargeRequests, s.LateRequests = chargeRequests(requests, r.cfg.Retention)
	if s.RefundsUnsettled, err = r.settleableRefunds(ctx); err != nil {
		return s, fmt.Errorf("chaos: pending refunds: %w", err)
	}
	if s.EventTries, err = r.eventTries(ctx); err != nil {
		return s, err
	}
	for _, id := range ids {
		o, attempts, err := r.stack.Store().GetOrder(ctx, id)
		if err != nil {
			return s, fmt.Errorf("chaos: order %d: %w", id, err)
		}
		s.Orders[o.Status]++
		for _, a := range attempts {
			s.Attempts[a.Status]++
			// Every route starts at the first provider, so an attempt at
			// the backup is a failover's.
			if a.Provider == stack.BackupName {
				s.FailedOver++
				if a.Status == chargeonce.AttemptSucceeded {
					s.PaidAtBackup++
				}
			}
		}
	}
	// The checker reads the first provider as the default one, and every
	// other by its name.
	providers := r.providers()
	others := map[string]invariant.ProviderSource{}
	for _, p := range providers[1:] {
		others[p.name] = r.providerSource(p)
	}
	s.Report, err = invariant.Check(ctx, invariant.Config{
		Store:    r.stack.Store(),
		Provider: r.providerSource(providers[0]),
		Others:   others,
		Temporal: r.stack.Client(),
		Interval: r.cfg.Timing.Interval,
		// The settlement of the run's days: honest books give no exception.
		SettlementDates: settled,
		// The workers sweep as often as they look up (workerSettings).
		RepairWindow: invariant.RepairDeadline(r.cfg.Timing.AbandonAfter, r.cfg.Timing.Interval, r.cfg.Timing.Interval),
		HoldMargin:   r.cfg.Timing.HoldMargin,
	}, ids)
	return s, err
}

// chargeRequests counts the charge requests, and the charge and refund
// requests whose key the provider had first seen at least retention
// earlier: a provider that forgot the key would have charged or refunded
// again.
func chargeRequests(records []fakeprovider.RequestRecord, retention time.Duration) (all, late int) {
	first := map[string]time.Time{}
	var sent []fakeprovider.RequestRecord
	for _, rec := range records {
		switch {
		case rec.IsCharge():
			all++
		case !rec.IsRefund():
			continue
		}
		if rec.Key == "" || rec.Fingerprint == "" {
			continue
		}
		sent = append(sent, rec)
		if seen, ok := first[rec.Key]; !ok || rec.Time.Before(seen) {
			first[rec.Key] = rec.Time
		}
	}
	for _, rec := range sent {
		if rec.Time.Sub(first[rec.Key]) >= retention {
			late++
		}
	}
	return all, late
}
