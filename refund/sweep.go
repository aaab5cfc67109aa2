package refund

import (
	"context"
	"fmt"
	"time"

	"chargeonce/checkout"
	"chargeonce/store"
	"chargeonce/workflows"
)

// sweepBatch is how many unstarted refunds one Sweep pass starts at most;
// the next pass takes the rest.
const sweepBatch = 100

// Sweep is one pass of the refunds' outbox sweep: it starts the refund
// workflow of every pending refund whose start was lost (the process
// crashed between storing the refund and reaching Temporal, or Temporal was
// unreachable), and of every repair refund that its finder could not start.
//
// A refund is left alone while it is younger than the request budget, so
// that a request still starting its workflow is not raced. Unlike a payment,
// a refund needs nothing that only the customer has, so the swept workflow
// sends it. Sweep returns how many refunds it started, and the errors of
// the others joined.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	timing, err := checkout.ReadTiming(ctx, s.store)
	if err != nil {
		return 0, fmt.Errorf("refund: sweep: %w", err)
	}
	refunds, err := s.store.UnstartedRefunds(ctx, s.now().Add(-s.budgetFor(timing)), sweepBatch)
	if err != nil {
		return 0, fmt.Errorf("refund: sweep: %w", err)
	}
	return checkout.StartEach(s.log, "refund", refunds, func(r store.Refund) error { return s.start(ctx, timing, r) },
		func(r store.Refund) []any { return []any{"refund", r.Key, "origin", r.Origin} })
}

// SweepReach is how long after its creation a refund that nothing started
// may wait for the sweep that runs every interval to start it: the request
// budget that Sweep leaves it alone for, then a whole interval.
func (s *Service) SweepReach(t workflows.Timing, interval time.Duration) time.Duration {
	return s.budgetFor(t) + interval
}

// RunSweeper runs Sweep every interval until ctx ends; the worker runs it
// beside the payments' sweep (checkout.RunSweeps).
func (s *Service) RunSweeper(ctx context.Context, interval time.Duration) {
	checkout.RunSweeps(ctx, s.log, "refund outbox sweep", interval, s.Sweep)
}
