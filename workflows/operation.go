package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"chargeonce"
	"chargeonce/internal/alert"
)

// The skeleton of a money movement's workflow. A charge and a refund, and
// every operation to come, run the same course: requests under the
// operation's key (sendRequests), then lookups by merchant reference until
// the outcome is settled, a durable record of that outcome, search
// attributes for the Web UI, and continue-as-new when the history grows.
// run drives that course; an operation's file supplies only what differs,
// as a movement.

// outcome is what a movement's workflow returns: PaymentResult,
// RefundResult or MoveResult.
type outcome interface {
	PaymentResult | RefundResult | MoveResult
	// completion describes the settled outcome for the Web UI's current
	// details, such as "Completed: succeeded, provider charge ch_1.".
	completion() string
}

// movement is what one operation supplies to run.
type movement[R outcome] interface {
	// op is the state that run and lookups keep.
	op() *operation[R]
	// registerHandlers registers the operation's own updates and signals;
	// the status query is the skeleton's.
	registerHandlers(ctx workflow.Context) error
	// searchAttributes are the operation's search attributes as they stand,
	// in a fixed order, so that an upsert is the same on every replay.
	searchAttributes() []searchAttribute
	// sendPhase sends the operation's requests when this run starts with
	// them, and settles a definite answer. Its error is only cancellation.
	sendPhase(ctx workflow.Context) error
	// reconcile looks the operation up until it is settled, usually by
	// calling lookups; it returns a ContinueAsNewError when the history
	// grows too long.
	reconcile(ctx workflow.Context) error
	// nextLookup is when to look the operation up next, for a lookup at
	// now; timed is false when no timed lookup is due and only an event
	// (checkNow) makes one.
	nextLookup(now time.Time) (next time.Time, timed bool)
	// waitingDetails says, for the Web UI, what the operation waits for
	// until next (zero when no lookup is timed).
	waitingDetails(next time.Time) string
	// check looks the operation up once and settles it when the provider's
	// answer decides it. Its error is only cancellation.
	check(ctx workflow.Context) error
	// nextRun is the workflow and the input of the run that carries the
	// lookups on after continue-as-new.
	nextRun() (wf any, input any)
}

// operation is the state that every movement shares.
type operation[R outcome] struct {
	// kind names the operation in logs.
	kind   chargeonce.Operation
	timing Timing
	log    log.Logger
	status Status
	// final is the settled outcome; nil while the outcome is open.
	final *R
	// checkNow is set by an event and cleared by the next lookup.
	checkNow bool
	// mu makes a lookup, and any request that an update sends, exclusive,
	// each together with the settlement it leads to, so that the two can
	// never settle the operation differently.
	mu workflow.Mutex
	// attrs is the movement's searchAttributes, which completing
	// publishes.
	attrs func() []searchAttribute
}

func (o *operation[R]) op() *operation[R] { return o }

// newOperation is the state of a movement whose run starts in phase, after
// the run's timing (its zero fields take DefaultTiming's values) and its
// intent are found valid.
func newOperation[R outcome](ctx workflow.Context, kind chargeonce.Operation, timing Timing, intent interface{ Validate() error }, logger log.Logger, phase string) (operation[R], error) {
	timing = timing.WithDefaults()
	if err := timing.Validate(); err != nil {
		return operation[R]{}, err
	}
	if err := intent.Validate(); err != nil {
		return operation[R]{}, err
	}
	return operation[R]{
		kind:   kind,
		timing: timing,
		log:    logger,
		status: Status{Phase: phase},
		mu:     workflow.NewMutex(ctx),
	}, nil
}

// run drives a movement from its start to its settled outcome: the status
// query and the movement's handlers, the search attributes the start did
// not set, the send phase, and the lookups. It waits for every update
// still answering before it returns, or that update's caller would get an
// error instead of the outcome.
func run[R outcome](ctx workflow.Context, m movement[R]) (R, error) {
	o := m.op()
	o.attrs = m.searchAttributes
	var none R
	if err := workflow.SetQueryHandler(ctx, chargeonce.QueryStatus, func() (Status, error) {
		return o.status, nil
	}); err != nil {
		return none, fmt.Errorf("register the status query: %w", err)
	}
	if err := m.registerHandlers(ctx); err != nil {
		return none, err
	}
	if attrs := m.searchAttributes(); !published(ctx, attrs) {
		publish(ctx, o.log, attrs)
	}
	if err := m.sendPhase(ctx); err != nil {
		return none, err
	}
	if err := m.reconcile(ctx); err != nil {
		return none, err
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return none, err
	}
	return *o.final, nil
}

// lookups looks the movement up at the provider until it is settled: at
// the times nextLookup gives, or at once after an event. It continues as
// new when the history grows too long.
func lookups[R outcome](ctx workflow.Context, m movement[R]) error {
	o := m.op()
	for o.final == nil {
		now := workflow.Now(ctx)
		next, timed := m.nextLookup(now)
		if !timed {
			next = time.Time{}
		}
		o.status.NextCheckAt = next
		workflow.SetCurrentDetails(ctx, m.waitingDetails(next))
		eventOrSettled := func() bool { return o.final != nil || o.checkNow }
		if !timed {
			if err := workflow.Await(ctx, eventOrSettled); err != nil {
				return err
			}
		} else if wait := next.Sub(now); wait > 0 {
			if _, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{
				Timeout:      wait,
				TimerOptions: workflow.TimerOptions{Summary: "next provider lookup"},
			}, eventOrSettled); err != nil {
				return err
			}
		}
		if err := o.mu.Lock(ctx); err != nil {
			return err
		}
		var err error
		if o.final == nil {
			o.checkNow = false
			err = m.check(ctx)
		}
		o.mu.Unlock()
		if err != nil {
			return err
		}
		if o.final == nil && historyTooLong(ctx) {
			return continueAsNew(ctx, m)
		}
	}
	return nil
}

// continueAsNew hands the lookups to a fresh run with a short history. It
// returns nil instead when an update settled the movement meanwhile.
func continueAsNew[R outcome](ctx workflow.Context, m movement[R]) error {
	o := m.op()
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	if o.final != nil {
		return nil
	}
	o.log.Info("continuing as new to keep the history short", "checks", o.status.Checks, "history_length", workflow.GetInfo(ctx).GetCurrentHistoryLength())
	wf, next := m.nextRun()
	return workflow.NewContinueAsNewError(ctx, wf, next)
}

// settle records the settled outcome r in the database with save, which
// reports whether the record changed, and completes the movement. A record
// that fails for good (the row is missing from the database) is logged for
// a human and does not change the outcome: the provider's answer is the
// truth. Its error is only cancellation.
func (o *operation[R]) settle(ctx workflow.Context, r R, save func(workflow.Context) (changed bool, err error)) error {
	changed, err := save(ctx)
	switch {
	case temporal.IsCanceledError(err):
		return err
	case err != nil:
		o.log.Error("could not record the "+string(o.kind)+" outcome in the database, a human must record it", alert.Attr(alert.OutcomeUnrecorded), "outcome", r, "error", err)
	case !changed:
		o.log.Info("the "+string(o.kind)+" was already settled in the database, nothing changed", "outcome", r)
	}
	o.complete(ctx, r)
	return nil
}

// complete completes the movement with the outcome r, which the database
// holds already.
func (o *operation[R]) complete(ctx workflow.Context, r R) {
	o.final = &r
	o.status.Phase = PhaseCompleted
	o.status.NextCheckAt = time.Time{}
	publish(ctx, o.log, o.attrs())
	workflow.SetCurrentDetails(ctx, r.completion())
}

// listen calls on with every signal named name that the workflow receives.
func listen[E any](ctx workflow.Context, name string, on func(E)) {
	workflow.Go(ctx, func(ctx workflow.Context) {
		events := workflow.GetSignalChannel(ctx, name)
		var ev E
		for events.Receive(ctx, &ev) {
			on(ev)
		}
	})
}
