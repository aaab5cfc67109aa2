package workflows

import (
	"errors"
	"fmt"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/internal/alert"
)

// PhaseHolding: the payment of a manual capture authorized a hold, and
// waits for its capture or void, or for its deadline.
const PhaseHolding = "holding"

// HoldResult is a payment's hold, in its PaymentResult.
type HoldResult struct {
	// Status is the hold's status: authorized while the payment keeps it,
	// then how it ended.
	Status chargeonce.HoldStatus `json:"status"`
	// Deadline is when the payment ends the hold if nobody did.
	Deadline time.Time `json:"deadline"`
	// CaptureBefore is the provider's expiry of the hold; zero when it did
	// not tell.
	CaptureBefore time.Time `json:"captureBefore,omitzero"`
	// Captured is what a capture took, in minor units, for a captured
	// hold.
	Captured int64 `json:"captured,omitempty"`
}

// heldOutcome is the outcome of a payment whose charge authorized the hold
// of terms.
func heldOutcome(chargeID string, terms activities.HoldTerms, message string) PaymentResult {
	return PaymentResult{
		Status:            chargeonce.AttemptSucceeded,
		ProviderPaymentID: chargeID,
		Message:           message,
		Hold:              &HoldResult{Status: chargeonce.HoldAuthorized, Deadline: terms.Deadline, CaptureBefore: terms.CaptureBefore},
	}
}

// holdTerms are the terms of the hold in r, for the record of the
// attempt; nil when r holds none.
func holdTerms(r PaymentResult) *activities.HoldTerms {
	if r.Hold == nil {
		return nil
	}
	return &activities.HoldTerms{CaptureBefore: r.Hold.CaptureBefore, Deadline: r.Hold.Deadline}
}

// holdMoved takes the news of a move of the payment's hold: a move that
// ended the hold ends the payment's wait.
func (p *payment) holdMoved(ev activities.HoldMoved) {
	p.log.Info("a move of the hold settled", "move", ev.Key, "status", string(ev.Status), "hold", string(ev.Hold))
	if ev.Hold.Ended() && p.ended == nil {
		p.ended = &ev
	}
}

// keepHold keeps the hold that the payment authorized until it ends: a
// capture or a void that the merchant asks for ends it (the hold-moved
// signal of its workflow), or else the deadline does. HoldWarning before
// the deadline, the alert authorization_expiring asks a person to act. At
// the deadline, the payment stores the move its deadline action makes and
// runs its workflow, unless a move of the merchant's decides the hold
// already; the store decides which, under the order's lock. A hold that no
// move ended by its expiry at the provider is read there, and its end
// recorded. Its error is only cancellation.
func (p *payment) keepHold(ctx workflow.Context) error {
	h := p.final.Hold
	p.status.Phase = PhaseHolding
	p.status.HoldDeadline = h.Deadline
	if err := workflow.UpsertTypedSearchAttributes(ctx, SearchAttrHoldDeadline.ValueSet(h.Deadline)); err != nil {
		p.log.Warn("could not set the hold's deadline as a search attribute", "error", err)
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("Hold %s authorized: waiting for a capture or a void until its deadline %s, which will %s it.",
		p.final.ProviderPaymentID, formatTime(h.Deadline), p.intent.OnDeadline.Move()))

	ended, err := p.awaitHoldEnd(ctx, h.Deadline.Add(-p.timing.HoldWarning), "the hold's warning")
	if err != nil || ended {
		return p.holdEnded(ctx, err)
	}
	p.log.Error("a hold nears its deadline with no capture or void: capture or void it through the API before then, or the deadline will "+string(p.intent.OnDeadline.Move())+" it",
		alert.Attr(alert.AuthorizationExpiring), "charge", p.final.ProviderPaymentID, "deadline", formatTime(h.Deadline), "amount", p.intent.Amount.String())
	if ended, err = p.awaitHoldEnd(ctx, h.Deadline, "the hold's deadline"); err != nil || ended {
		return p.holdEnded(ctx, err)
	}
	if err := p.deadlineMove(ctx); err != nil || p.ended != nil {
		return p.holdEnded(ctx, err)
	}
	expiry := h.Deadline.Add(p.timing.HoldMargin + p.timing.MinAge)
	if ended, err = p.awaitHoldEnd(ctx, expiry, "the hold's expiry at the provider"); err != nil || ended {
		return p.holdEnded(ctx, err)
	}
	return p.holdEnded(ctx, p.readExpiredHold(ctx))
}

// awaitHoldEnd waits until the hold ends or until, and reports whether it
// ended. A provider event about the hold (checkNow) makes it read the hold
// at once.
func (p *payment) awaitHoldEnd(ctx workflow.Context, until time.Time, summary string) (bool, error) {
	for p.ended == nil {
		wait := until.Sub(workflow.Now(ctx))
		if wait <= 0 {
			return false, nil
		}
		if _, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{Timeout: wait, TimerOptions: workflow.TimerOptions{Summary: summary}},
			func() bool { return p.ended != nil || p.checkNow }); err != nil {
			return false, err
		}
		if p.ended == nil && p.checkNow {
			p.checkNow = false
			p.log.Info("the provider reported the hold, reading it at once")
			if _, err := p.readHold(ctx); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// deadlineMove makes the move of the deadline's action, unless another
// move decides the hold already, and runs its workflow, as a child that
// outlives the payment's run should the payment close first. Its error is
// only cancellation.
func (p *payment) deadlineMove(ctx workflow.Context) error {
	kind := p.intent.OnDeadline.Move()
	prefix, _, _, err := chargeonce.ParseMerchantReference(p.intent.MerchantReference)
	if err != nil {
		// The store admits no such reference; the provider's expiry ends
		// the hold instead, and readExpiredHold records it.
		p.log.Error("the hold's deadline cannot "+string(kind)+" it: the payment's merchant reference names no prefix", alert.Attr(alert.HoldUnresolved), "error", err)
		return nil
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: recordAttemptTimeout, RetryPolicy: recordRetryPolicy()})
	var dm activities.DeadlineMove
	err = workflow.ExecuteActivity(actx, acts.StartDeadlineMove, activities.DeadlineMoveInput{
		AttemptKey: p.intent.Key, OrderID: p.intent.OrderID, Kind: kind, ReferencePrefix: prefix,
	}).Get(ctx, &dm)
	if err != nil {
		return err
	}
	if dm.Move == nil {
		p.log.Info("the hold had ended by its deadline", "hold", string(dm.Hold))
		p.ended = &activities.HoldMoved{Hold: dm.Hold, Captured: dm.Captured}
		return nil
	}
	if dm.Created {
		p.log.Info("the hold's deadline came: "+string(kind)+" it", "move", dm.Move.Key)
	} else {
		p.log.Info("the hold's deadline came while a move of the merchant's decides it; waiting for that move", "move", dm.Move.Key)
	}
	if dm.Started {
		return nil
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            MoveWorkflowID(dm.Move.Key),
		ParentClosePolicy:     enums.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: MoveStartSearchAttributes(*dm.Move),
	})
	child := workflow.ExecuteChildWorkflow(cctx, MoveWorkflow(kind), MoveInput{Intent: *dm.Move, Timing: p.timing})
	err = child.GetChildWorkflowExecution().Get(ctx, nil)
	var already *temporal.ChildWorkflowExecutionAlreadyStartedError
	switch {
	case temporal.IsCanceledError(err):
		return err
	case err != nil && !errors.As(err, &already):
		// The move is stored, so the moves' outbox sweep starts it.
		p.log.Warn("could not start the workflow of the deadline's move; the outbox starts it", "move", dm.Move.Key, "error", err)
		return nil
	}
	// The child's result ends the wait as its hold-moved signal would, so
	// that the hold's end does not hang on the signal alone.
	workflow.Go(ctx, func(ctx workflow.Context) {
		var res MoveResult
		if err := child.Get(ctx, &res); err == nil {
			p.holdMoved(activities.HoldMoved{Key: dm.Move.Key, Status: res.Status, Hold: res.Hold, Captured: res.Captured})
		}
	})
	return workflow.ExecuteActivity(actx, acts.MarkMoveStarted, dm.Move.Key).Get(ctx, nil)
}

// readExpiredHold reads a hold that no move ended by its expiry at the
// provider, until the provider shows it ended. A hold still authorized
// there, or one that cannot be read, raises hold_unresolved, once. Its
// error is only cancellation.
func (p *payment) readExpiredHold(ctx workflow.Context) error {
	for alerted := false; p.ended == nil; alerted = true {
		hold, err := p.readHold(ctx)
		if err != nil || p.ended != nil {
			return err
		}
		if !alerted {
			p.log.Error("a hold is still authorized at the provider past its expiry, or cannot be read there: look the charge up on the provider's dashboard",
				alert.Attr(alert.HoldUnresolved), "charge", p.final.ProviderPaymentID, "hold", string(hold))
		}
		if _, err := p.awaitHoldEnd(ctx, workflow.Now(ctx).Add(p.timing.longestLookupGap()), "next lookup of the hold"); err != nil {
			return err
		}
	}
	return nil
}

// readHold reads the hold at the provider once and, when it has ended
// there, records how and ends the payment's wait. It returns the status
// read, empty when the lookup failed. Its error is only cancellation.
func (p *payment) readHold(ctx workflow.Context) (chargeonce.HoldStatus, error) {
	actx := withLookupOptions(ctx, p.timing, p.intent.Provider, activities.ErrTypeContractViolation)
	var res activities.FindHoldResult
	err := workflow.ExecuteActivity(actx, acts.FindHold, activities.FindHoldInput{ChargeID: p.final.ProviderPaymentID, Provider: p.intent.Provider, Operation: chargeonce.OperationCharge}).Get(ctx, &res)
	switch {
	case temporal.IsCanceledError(err):
		return "", err
	case err != nil:
		p.log.Warn("could not read the hold at the provider", "error", err)
		return "", nil
	case !res.Hold.Ended():
		return res.Hold, nil
	}
	if _, err := record(ctx, p.log, acts.EndHold, activities.EndHoldInput{AttemptKey: p.intent.Key, Hold: res.Hold, Captured: res.Captured}); err != nil {
		return "", err
	}
	p.ended = &activities.HoldMoved{Hold: res.Hold, Captured: res.Captured}
	return res.Hold, nil
}

// holdEnded completes the payment with how its hold ended, unless err,
// which is only cancellation, ended the wait.
func (p *payment) holdEnded(ctx workflow.Context, err error) error {
	if err != nil {
		return err
	}
	res := *p.final
	hold := *res.Hold
	hold.Status, hold.Captured = p.ended.Hold, p.ended.Captured
	res.Hold = &hold
	p.status.HoldDeadline = time.Time{}
	p.complete(ctx, res)
	p.log.Info("the hold ended", "hold", string(hold.Status), "captured", hold.Captured)
	return nil
}
