package hold

import (
	"context"
	"fmt"
	"time"

	"chargeonce/checkout"
	"chargeonce/store"
	"chargeonce/workflows"
)

// sweepBatch is how many unstarted moves one Sweep pass starts at most;
// the next pass takes the rest.
const sweepBatch = 100

// Sweep is one pass of the moves' outbox sweep: it starts the workflow of
// every pending move whose start was lost (the process crashed between
// storing the move and reaching Temporal, or Temporal was unreachable).
//
// A move is left alone while it is younger than the request budget, so
// that a request still starting its workflow is not raced. Like a refund,
// a move needs nothing that only the customer has, so the swept workflow
// sends it. Sweep returns how many moves it started, and the errors of the
// others joined.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	timing, err := checkout.ReadTiming(ctx, s.store)
	if err != nil {
		return 0, fmt.Errorf("hold: sweep: %w", err)
	}
	moves, err := s.store.UnstartedMoves(ctx, s.now().Add(-s.budgetFor(timing)), sweepBatch)
	if err != nil {
		return 0, fmt.Errorf("hold: sweep: %w", err)
	}
	return checkout.StartEach(s.log, "move", moves, func(m store.Move) error {
		return checkout.StartOutbox(ctx, s.temporal, startOptions(m.MoveIntent), workflows.MoveWorkflow(m.Kind),
			workflows.MoveInput{Intent: m.MoveIntent, Timing: timing}, s.marker(m.Key))
	}, func(m store.Move) []any { return []any{"move", m.Key, "kind", m.Kind, "origin", m.Origin} })
}

// RunSweeper runs Sweep every interval until ctx ends; the worker runs it
// beside the payments' and the refunds' sweeps (checkout.RunSweeps).
func (s *Service) RunSweeper(ctx context.Context, interval time.Duration) {
	checkout.RunSweeps(ctx, s.log, "move outbox sweep", interval, s.Sweep)
}
