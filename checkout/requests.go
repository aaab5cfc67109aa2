package checkout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/singleflight"

	"chargeonce"
)

// The requests that carry the API's own Idempotency-Key (refunds, and the
// captures and voids of holds) are decided the same way: the store replays
// the row that the key created, or refuses a key sent with another body,
// and a row created now is an outbox row that Update-With-Start drives.
// What they share is here, so that each service keeps only what is its
// own: its store calls, its workflow and how its answer reads.

// Errors of the requests with an Idempotency-Key. They are matched with
// errors.Is.
var (
	// ErrKeyReused: the request's Idempotency-Key was sent before with
	// another body. Nothing changed.
	ErrKeyReused = errors.New("the Idempotency-Key was used with another request")
	// ErrInProgress: the first request with this Idempotency-Key is still
	// being answered. The error is an *InProgressError.
	ErrInProgress = errors.New("a request with this Idempotency-Key is still in progress")
)

// InProgressError is ErrInProgress, with when the first request will have
// been answered.
type InProgressError struct {
	// RetryAfter is how long until the first request's budget is over.
	RetryAfter time.Duration
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("%v; ask again in %v", ErrInProgress, e.RetryAfter)
}

// Is makes an *InProgressError match ErrInProgress.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// CheckReplay decides a replayed request: the row its key created at
// createdAt is still pending within the first request's budget, whose
// send phase may not be over, so the replay is refused with an
// *InProgressError; otherwise (nil) the first request has had its answer,
// and the replay answers the row as it stands. Every API process can tell
// so from the database alone, with no call to Temporal.
func CheckReplay(createdAt time.Time, pending bool, budget time.Duration, now time.Time) error {
	if until := createdAt.Add(budget).Sub(now); pending && until > 0 {
		return &InProgressError{RetryAfter: until}
	}
	return nil
}

// AmountError is a requested amount that cannot be read in its currency.
type AmountError struct{ Err error }

func (e *AmountError) Error() string { return "the amount " + e.Err.Error() }

// Unwrap returns the parse error.
func (e *AmountError) Unwrap() error { return e.Err }

// Drive asks the workflow of an outbox row, with UpdateWithStart, for its
// answer within budget, and returns that answer, or nil when there is none
// and the database alone holds what is known. settled tells whether an
// answer took the row out of the outbox; otherwise, once the server
// accepted the start, or when the workflow had closed already
// (REJECT_DUPLICATE, whose outcome the database holds), mark records that
// the workflow runs. mark gets a context of its own, which outlives the
// caller's by storeTimeout, and its failure is only logged: the sweep
// starts the workflow again, which is harmless.
func Drive[A any](ctx context.Context, c client.Client, log *slog.Logger, budget time.Duration, start client.WithStartWorkflowOperation,
	update client.UpdateWorkflowOptions, settled func(A) bool, mark func(context.Context) error) *A {
	var answer A
	started, err := UpdateWithStart(ctx, c, budget, start, update, &answer)
	if started && (err != nil || !settled(answer)) {
		MarkStarted(ctx, log, mark)
	}
	var alreadyStarted *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case err == nil:
		return &answer
	case errors.As(err, &alreadyStarted):
		log.Info("the workflow already closed; answering from the database")
		MarkStarted(ctx, log, mark)
		return nil
	default:
		// The key is stored, so nothing is lost: the workflow, started now
		// or by the sweep, settles the row.
		log.Warn("no answer from the workflow, answering from the database", "error", err)
		return nil
	}
}

// MarkStarted records, with mark, that a row's workflow runs, even when
// the caller has gone. A failure is only logged: the sweep starts the
// workflow again, which is harmless.
func MarkStarted(ctx context.Context, log *slog.Logger, mark func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := mark(ctx); err != nil {
		log.Warn("could not record that the workflow started; the sweep will start it again", "error", err)
	}
}

// StartOutbox starts the workflow of an outbox row without waiting for
// it, as a sweep does, and records with mark that it runs. A workflow that
// runs or ran counts as started.
func StartOutbox(ctx context.Context, c client.Client, options client.StartWorkflowOptions, workflow any, input any, mark func(context.Context) error) error {
	_, err := c.ExecuteWorkflow(ctx, options, workflow, input)
	var alreadyStarted *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &alreadyStarted) {
		return fmt.Errorf("start its workflow: %w", err)
	}
	return mark(ctx)
}

// Join runs send once per key in this process at a time, detached from
// the caller's context, so that one client going away does not cut the
// answer short for the others that joined it; send bounds itself by its
// budget. A caller whose own context ends first answers with fallback,
// from the database, as it would had send found no answer.
func Join[R any](ctx context.Context, group *singleflight.Group, log *slog.Logger, key string,
	send func(context.Context) (R, error), fallback func(context.Context) (R, error)) (R, error) {
	joined := group.DoChan(key, func() (any, error) {
		return send(context.WithoutCancel(ctx))
	})
	select {
	case r := <-joined:
		if r.Shared {
			log.Debug("joined the request already in flight for this key")
		}
		res, _ := r.Val.(R)
		return res, r.Err
	case <-ctx.Done():
		log.Info("the request ended before the workflow answered, answering from the database", "error", ctx.Err())
		return fallback(ctx)
	}
}

// ReadAnswered reads a row with read, under a deadline of its own that
// outlives a caller who has gone, and lays the workflow's answer over it
// with over, where there is one (answer not nil): the answer may be ahead
// of what the database shows.
func ReadAnswered[Row, Answer any](ctx context.Context, read func(context.Context) (Row, error), answer *Answer, over func(*Row, Answer)) (Row, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	row, err := read(ctx)
	if err == nil && answer != nil {
		over(&row, *answer)
	}
	return row, err
}

// StartOptions are the options of every start of a money movement's
// workflow, whose ID is its key: USE_EXISTING joins a running workflow,
// REJECT_DUPLICATE never runs a closed key again, and the search
// attributes make it findable before its first task.
func StartOptions(id string, attrs temporal.SearchAttributes) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                chargeonce.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    attrs,
	}
}
