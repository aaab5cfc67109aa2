package checkout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"chargeonce/workflows"
)

// sweepBatch is how many unstarted attempts one Sweep pass starts at most;
// the next pass takes the rest.
const sweepBatch = 100

// Sweep is one pass of the outbox sweep: it starts the payment workflow of
// every open attempt whose start was lost, say because the process crashed
// between storing the key and reaching Temporal, or Temporal was unreachable.
//
// An attempt is left alone while it is younger than the checkout budget, so
// that a checkout still trying to start its workflow is not raced. Each
// workflow starts with the published timing, as a checkout's would. The
// workflow is started without the card token, which only the customer has:
// with nothing it can send, it settles the attempt not_processed at once, so
// that the order is payable again and the customer's next checkout starts a
// new attempt. A workflow that
// already runs or ran counts as started. Sweep returns how many attempts it
// marked started, and the errors of the others joined.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	// One read of the published timing serves the whole pass; the next pass
	// reads it again, so that a replaced timing applies at once.
	timing, err := s.Timing(ctx)
	if err != nil {
		return 0, fmt.Errorf("checkout: sweep: %w", err)
	}
	attempts, err := s.store.UnstartedAttempts(ctx, s.now().Add(-s.budgetFor(timing)), sweepBatch)
	if err != nil {
		return 0, fmt.Errorf("checkout: sweep: %w", err)
	}
	started := 0
	var errs []error
	for _, a := range attempts {
		log := s.log.With("order", a.OrderID, "key", a.Key)
		order, err := s.store.Order(ctx, a.OrderID)
		if err != nil {
			errs = append(errs, fmt.Errorf("checkout: sweep: attempt %s: %w", a.Key, err))
			continue
		}
		intent := s.intent(order, a, "")
		if err := StartOutbox(ctx, s.temporal, s.startOptions(intent), workflows.PaymentWorkflow,
			workflows.PaymentInput{Intent: intent, Timing: timing}, s.marker(a.Key)); err != nil {
			log.Warn("sweep could not start the payment workflow; next pass retries", "error", err)
			errs = append(errs, fmt.Errorf("checkout: sweep: attempt %s: %w", a.Key, err))
			continue
		}
		log.Info("sweep started the payment workflow of an attempt whose start was lost")
		started++
	}
	return started, errors.Join(errs...)
}

// RunSweeper runs Sweep every interval until ctx ends. The worker process
// runs it.
//
// It is a ticker in the worker and not a Temporal Schedule for three
// reasons. It repairs the case where Temporal could not be reached, and a
// Schedule is exactly what would not fire then. It reads the outbox, so it
// must run where the database is, which the worker has. And a Schedule would
// add a workflow and an activity per tick for what is one query. Several
// workers running it at once is harmless: a start is idempotent by workflow
// ID, and marking an attempt started twice changes nothing.
func (s *Service) RunSweeper(ctx context.Context, interval time.Duration) {
	RunSweeps(ctx, s.log, "outbox sweep", interval, s.Sweep)
}

// RunSweeps runs pass every interval until ctx ends, and logs what each
// pass started, or its errors, under the sweep's name. Every outbox sweep
// (the payment attempts', the refunds') runs this way, for the reasons
// RunSweeper gives.
func RunSweeps(ctx context.Context, log *slog.Logger, name string, interval time.Duration, pass func(context.Context) (int, error)) {
	if interval <= 0 {
		log.Error(name+" not running: the interval must be positive", "interval", interval)
		return
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		started, err := pass(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn(name+" pass had errors", "started", started, "error", err)
		} else if started > 0 {
			log.Info(name+" started lost workflows", "started", started)
		}
	}
}

// StartEach starts the workflow of every outbox row with start, logging
// each under what (such as "refund") with the row's attrs, and returns how
// many it started and the errors of the others joined: the body of the
// refunds' and the moves' outbox sweeps, whose workflows need nothing
// that only the customer has.
func StartEach[T any](log *slog.Logger, what string, rows []T, start func(T) error, attrs func(T) []any) (int, error) {
	started := 0
	var errs []error
	for _, r := range rows {
		if err := start(r); err != nil {
			log.Warn(what+" sweep could not start the workflow; next pass retries", append(attrs(r), "error", err)...)
			errs = append(errs, fmt.Errorf("%s: sweep: %w", what, err))
			continue
		}
		log.Info(what+" sweep started the workflow of a "+what+" that nothing had started", attrs(r)...)
		started++
	}
	return started, errors.Join(errs...)
}
