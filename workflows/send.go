package workflows

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"chargeonce"
	"chargeonce/activities"
)

// The requests and records that every money movement makes: a send phase
// of one request per activity within a budget, the options of lookups on
// their provider's lookup task queue, a durable record of the outcome, and
// search attributes.

// sendEnd is how a send phase ended.
type sendEnd int

const (
	// sendAnswered: a request brought the provider's definite answer.
	sendAnswered sendEnd = iota
	// sendRefused: the provider refused a request as a contract violation
	// or an invalid request, which no retry with the same key fixes.
	sendRefused
	// sendUnknown: the budget ended, and some request may have been
	// processed.
	sendUnknown
	// sendNothingProcessed: the budget ended, and no request can have been
	// processed.
	sendNothingProcessed
)

// sendRequests sends requests with send, one activity (or local activity)
// execution each, until the provider answers definitely or the budget of
// t.SendBudget, counted from now, ends. send executes the request's
// activity or local activity with the context it is given, which carries
// the options of both, and waits for it; its nil error is an answer, which
// send keeps. The error of the last failed request goes to *lastError.
// With untilRefused, the first request that the provider certainly did not
// process ends the phase, sendNothingProcessed, unless an earlier one may
// have been processed. On
// sendRefused, refusal is the provider's refusal. Its error is only
// cancellation.
//
// Each request is an execution of its own, without retries, so that the
// workflow sees how every request ended. One that ends in anything
// but ErrTypeNotProcessed (a timeout, a lost answer, a 409, a crashed
// worker) may have been processed, and then the outcome is unknown however
// the others ended. A request goes out only while its whole AttemptTimeout
// fits in the budget: one cut short would be unknown for want of time, and
// every request ends within the budget, which the last send times count on.
func sendRequests(ctx workflow.Context, t Timing, untilRefused bool, summary string, lastError *string, send func(actx workflow.Context) error) (end sendEnd, refusal *temporal.ApplicationError, err error) {
	deadline := workflow.Now(ctx).Add(t.SendBudget)
	mayBeProcessed := false
	// The first request always fits: AttemptTimeout ≤ SendBudget.
	for wait := time.Duration(0); ; {
		if wait > 0 {
			if workflow.Now(ctx).Add(wait + t.AttemptTimeout).After(deadline) {
				break
			}
			timer := workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{Summary: summary})
			if err := timer.Get(ctx, nil); err != nil {
				return 0, nil, err
			}
			// A timer may fire late, and a task may run late after a
			// worker died.
			if workflow.Now(ctx).Add(t.AttemptTimeout).After(deadline) {
				break
			}
		}
		// Both option sets, so that send may run the request as an activity
		// or as a local activity.
		once := &temporal.RetryPolicy{MaximumAttempts: 1}
		left := deadline.Sub(workflow.Now(ctx))
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: t.AttemptTimeout,
			// Bounds the wait for a worker too; it is never shorter than
			// AttemptTimeout.
			ScheduleToCloseTimeout: left,
			RetryPolicy:            once,
		})
		actx = workflow.WithLocalActivityOptions(actx, workflow.LocalActivityOptions{
			StartToCloseTimeout:    t.AttemptTimeout,
			ScheduleToCloseTimeout: left,
			RetryPolicy:            once,
		})
		err := send(actx)
		if err == nil {
			*lastError = ""
			return sendAnswered, nil, nil
		}
		if temporal.IsCanceledError(err) {
			return 0, nil, err
		}
		*lastError = err.Error()
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			switch appErr.Type() {
			case activities.ErrTypeContractViolation, activities.ErrTypeInvalidRequest:
				return sendRefused, appErr, nil
			}
		}
		req := requestFailure(err)
		if req == nil || req.Type() != activities.ErrTypeNotProcessed {
			mayBeProcessed = true
		} else if untilRefused && !mayBeProcessed {
			break
		}
		wait = t.RetryInterval
		if req != nil && req.NextRetryDelay() > 0 {
			wait = req.NextRetryDelay()
		}
	}
	if mayBeProcessed {
		return sendUnknown, nil, nil
	}
	return sendNothingProcessed, nil, nil
}

// requestFailure is the application error that one request failed with: the
// error of a local activity, or the direct cause of an activity's error,
// whose one attempt was that request. It is nil for a timeout, which is
// the error (or its direct cause) instead.
func requestFailure(err error) *temporal.ApplicationError {
	var actErr *temporal.ActivityError
	if errors.As(err, &actErr) {
		err = actErr.Unwrap()
	}
	appErr, _ := err.(*temporal.ApplicationError)
	return appErr
}

// withLookupOptions runs a lookup at the provider named provider (empty for
// an intent recorded before intents named theirs) on that provider's
// lookup task queue (chargeonce.LookupTaskQueueOf), whose dispatch rate
// Temporal caps at the rate that provider allows. One still waiting
// there after an Interval gives way to the next check: under a backlog a
// fresh lookup is worth more than a stale one, and no lookup, nor a
// customer retry waiting for the lookup to finish, waits behind the whole
// backlog. mismatch is the error type of a lookup that found something that
// does not match, which no retry changes.
func withLookupOptions(ctx workflow.Context, t Timing, provider, mismatch string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              chargeonce.LookupTaskQueueOf(provider),
		ScheduleToStartTimeout: t.Interval,
		StartToCloseTimeout:    t.AttemptTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    t.RetryInterval,
			BackoffCoefficient: 2,
			MaximumAttempts:    3,
			NonRetryableErrorTypes: []string{
				mismatch,
				activities.ErrTypeContractViolation,
				activities.ErrTypeInvalidRequest,
			},
		},
	})
}

// localRecordBudget bounds the local record attempts. Every backoff within
// it is shorter than the default workflow task timeout, so the worker
// retries them without a timer in the history. A database away for longer is
// waited out by the record activity, whose retries write nothing to the
// history.
const localRecordBudget = 30 * time.Second

// recordAttemptTimeout bounds one record attempt.
const recordAttemptTimeout = 10 * time.Second

// recordRetryPolicy retries a record with no attempt limit.
func recordRetryPolicy() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    time.Minute,
	}
}

// record writes an outcome to the database with the activity act (such as
// RecordOutcome). It tries a local activity first, which costs one history
// event instead of an activity's three and a workflow task; when the
// database stays away past localRecordBudget it falls back to the activity,
// which retries without an attempt limit: the outcome must reach the
// database, however long the database is away. Its error is cancellation or
// a failure that no retry fixes.
func record[In, Out any](ctx workflow.Context, logger log.Logger, act func(context.Context, In) (Out, error), in In) (Out, error) {
	var out Out
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: recordAttemptTimeout,
		// Without it the SDK would stop retrying after one
		// StartToCloseTimeout.
		ScheduleToCloseTimeout: localRecordBudget,
		RetryPolicy:            recordRetryPolicy(),
	})
	err := workflow.ExecuteLocalActivity(lctx, act, in).Get(ctx, &out)
	var appErr *temporal.ApplicationError
	if err == nil || temporal.IsCanceledError(err) || (errors.As(err, &appErr) && appErr.NonRetryable()) {
		return out, err
	}
	logger.Warn("could not record the outcome yet, retrying until the database is back", "outcome", in, "error", err)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: recordAttemptTimeout,
		RetryPolicy:         recordRetryPolicy(),
	})
	err = workflow.ExecuteActivity(actx, act, in).Get(ctx, &out)
	return out, err
}

// historyTooLong reports whether a waiting workflow should continue as new.
func historyTooLong(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= MaxHistoryLength
}

// searchAttribute is one search attribute and its value.
type searchAttribute struct {
	key   temporal.SearchAttributeKeyKeyword
	value string
}

// published reports whether the workflow's search attributes hold attrs
// already: the starters start workflows with them, and continue-as-new
// carries them to the next run.
func published(ctx workflow.Context, attrs []searchAttribute) bool {
	have := workflow.GetTypedSearchAttributes(ctx)
	for _, a := range attrs {
		if got, ok := have.GetKeyword(a.key); !ok || got != a.value {
			return false
		}
	}
	return true
}

// publish upserts attrs.
func publish(ctx workflow.Context, logger log.Logger, attrs []searchAttribute) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, setting(attrs)...); err != nil {
		logger.Warn("could not update the search attributes", "error", err)
	}
}

// setting is the updates that set attrs.
func setting(attrs []searchAttribute) []temporal.SearchAttributeUpdate {
	updates := make([]temporal.SearchAttributeUpdate, len(attrs))
	for i, a := range attrs {
		updates[i] = a.key.ValueSet(a.value)
	}
	return updates
}

func formatTime(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}
