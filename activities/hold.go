package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"

	"chargeonce"
	"chargeonce/provider"
	"chargeonce/store"
)

// ErrTypeHoldNotFound: the hold or the move to record is not in the
// database. Not retryable.
const ErrTypeHoldNotFound = "HoldNotFound"

// DefaultHoldWindow is how long a hold is taken to last when the provider
// tells neither the hold's expiry nor its hold window: the seven days of
// Stripe's card authorizations, which most card networks keep to.
const DefaultHoldWindow = 7 * 24 * time.Hour

// HoldTerms are what an authorization records of its hold: when the
// provider expires it, and when chargeonce ends it if nobody did.
type HoldTerms struct {
	// CaptureBefore is the provider's expiry of the hold; zero when the
	// provider did not tell it.
	CaptureBefore time.Time `json:"CaptureBefore,omitzero"`
	// Deadline is when the payment workflow ends the hold
	// (chargeonce.HoldDeadline).
	Deadline time.Time `json:"Deadline"`
}

// holdTerms are the terms of the hold c, authorized now: its expiry is the
// charge's capture_before, or else the end of the provider's published
// hold window (DefaultHoldWindow when it publishes none), and the deadline
// is margin before it.
func (a *Activities) holdTerms(ctx context.Context, log *slog.Logger, port provider.Port, c *provider.Charge, margin time.Duration) HoldTerms {
	authorizedAt := a.now()
	var captureBefore time.Time
	if c != nil {
		captureBefore = c.CaptureBefore
		if !c.Created.IsZero() {
			authorizedAt = c.Created
		}
	}
	window := DefaultHoldWindow
	if captureBefore.IsZero() {
		limits, err := port.Limits(ctx)
		switch {
		case err != nil:
			log.Warn("the provider told no expiry of the hold and its limits could not be read; the hold is taken to last the default window", "window", window, "error", err)
		case limits.HoldWindow > 0:
			window = limits.HoldWindow
		}
	}
	return HoldTerms{CaptureBefore: captureBefore, Deadline: chargeonce.HoldDeadline(authorizedAt, captureBefore, window, margin)}
}

// MoveInput is the input of Capture and Void.
type MoveInput struct {
	// Intent is the move to send; its Key goes out as the Idempotency-Key.
	Intent chargeonce.MoveIntent `json:"Intent"`
}

// MoveAnswer is a definite answer from the provider to a capture or a
// void.
type MoveAnswer struct {
	// Status is MoveSucceeded or MoveDeclined.
	Status chargeonce.MoveStatus `json:"Status"`
	// DeclineCode is the provider's hold decline code on MoveDeclined.
	DeclineCode string `json:"DeclineCode,omitempty"`
	// Hold is the status the hold is in after the answer: the one the move
	// makes when it succeeded, the one the provider shows when it was
	// declined; empty when the provider's charge could not be read.
	Hold chargeonce.HoldStatus `json:"Hold,omitempty"`
	// Captured is what the hold's capture took, in minor units, when Hold
	// is captured.
	Captured int64 `json:"Captured,omitempty"`
	// Replayed reports that the provider answered from its idempotency
	// store.
	Replayed bool `json:"Replayed,omitempty"`
}

// Capture sends the intent's capture to the provider: exactly one HTTP
// request per activity attempt, always with the intent's key, as Charge
// does. An approval and a refusal because of the hold's state are
// results; every other outcome is an error typed as Charge types it.
func (a *Activities) Capture(ctx context.Context, in MoveInput) (MoveAnswer, error) {
	return a.move(ctx, in.Intent, chargeonce.MoveCapture, func(ctx context.Context, port provider.Port) (provider.Exchange, *provider.Charge, string) {
		res := port.Capture(ctx, provider.CaptureRequest{Key: in.Intent.Key, ChargeID: in.Intent.ChargeID, Amount: in.Intent.Amount.Minor, Currency: in.Intent.Amount.Currency})
		return res.Exchange, res.Charge, res.DeclineCode
	})
}

// Void sends the intent's void to the provider, as Capture sends a
// capture.
func (a *Activities) Void(ctx context.Context, in MoveInput) (MoveAnswer, error) {
	return a.move(ctx, in.Intent, chargeonce.MoveVoid, func(ctx context.Context, port provider.Port) (provider.Exchange, *provider.Charge, string) {
		res := port.Void(ctx, provider.VoidRequest{Key: in.Intent.Key, ChargeID: in.Intent.ChargeID})
		return res.Exchange, res.Charge, res.DeclineCode
	})
}

// move sends one request of the move intent with send, after listing it
// in the moves' request log, and reads the answer. A refusal is read with
// the charge as the provider holds it afterwards, which says how the hold
// ended (one extra read, and only on a refusal, which is rare: the store
// lets one move of a hold hold at a time).
func (a *Activities) move(ctx context.Context, intent chargeonce.MoveIntent, kind chargeonce.MoveKind,
	send func(context.Context, provider.Port) (provider.Exchange, *provider.Charge, string)) (MoveAnswer, error) {
	log := a.logger().With("key", intent.Key, "order", intent.OrderID, "charge", intent.ChargeID, "move", string(kind))
	if err := intent.Validate(); err != nil || intent.Kind != kind {
		log.Error("move intent cannot be sent", "error", err, "kind", string(intent.Kind))
		return MoveAnswer{}, nonRetryable(ErrTypeInvalidRequest, fmt.Sprintf("%s intent %s cannot be sent: %v", kind, intent.Key, err))
	}
	port, err := a.port(intent.Provider)
	if err != nil {
		log.Error("move intent names a provider this worker does not reach, nothing sent", "provider", intent.Provider, "error", err)
		return MoveAnswer{}, err
	}

	reqCtx, cancel := requestContext(ctx)
	defer cancel()
	op := kind.Operation()
	listed, err := a.listRequest(ctx, log, op, intent.Key)
	if err != nil {
		return MoveAnswer{}, err
	}
	ex, charge, declineCode := send(reqCtx, port)
	a.Metrics.request(a.providerName(intent.Provider), op, ex)
	log = a.exchanged(ctx, log, listed, ex)

	switch ex.Class() {
	case provider.ClassApproved:
		answer := MoveAnswer{Status: chargeonce.MoveSucceeded, Hold: kind.Ends(), Replayed: ex.Replayed}
		if kind == chargeonce.MoveCapture {
			answer.Captured = intent.Amount.Minor
			if charge != nil && charge.AmountCaptured > 0 {
				answer.Captured = charge.AmountCaptured
			}
		}
		log.Info("the provider accepted the "+string(kind), "hold", string(answer.Hold), "captured", answer.Captured)
		return answer, nil
	case provider.ClassDeclined:
		answer := MoveAnswer{Status: chargeonce.MoveDeclined, DeclineCode: declineCode, Replayed: ex.Replayed}
		found, err := a.readHold(ctx, port, intent.ChargeID)
		if err != nil {
			log.Warn("the provider refused the "+string(kind)+"; the hold's state could not be read, the payment's deadline reads it again", "decline_code", declineCode, "error", err)
		} else {
			answer.Hold, answer.Captured = found.Hold, found.Captured
		}
		log.Info("the provider refused the "+string(kind), "decline_code", declineCode, "hold", string(answer.Hold))
		return answer, nil
	}
	return MoveAnswer{}, requestError(ctx, log, listed, ex)
}

// FindHoldInput is the input of FindHold.
type FindHoldInput struct {
	// Key is the key of the move whose outcome is looked for, for the log
	// and MarkMoveChecked; empty when the payment workflow looks its own
	// hold up.
	Key string `json:"Key,omitempty"`
	// ChargeID is the provider's id of the hold.
	ChargeID string `json:"ChargeID"`
	// Provider names the provider that holds it.
	Provider string `json:"Provider"`
	// Operation is what the lookup is for, as the lookup metrics count
	// it: the capture's or the void's outcome, or the payment's own hold
	// (chargeonce.OperationCharge).
	Operation chargeonce.Operation `json:"Operation"`
}

// FindHoldResult is the hold as the provider holds it.
type FindHoldResult struct {
	// Hold is the hold's status at the provider.
	Hold chargeonce.HoldStatus `json:"Hold"`
	// Captured is what a capture took, in minor units, when Hold is
	// captured.
	Captured int64 `json:"Captured,omitempty"`
}

// FindHold reads a hold at the provider by its charge id, on the lookup
// task queue: the lookup of a capture or a void whose outcome is unknown,
// and of a hold past its expiry. The charge's state is the answer, since
// only a move changes it: captured, voided, or still authorized.
func (a *Activities) FindHold(ctx context.Context, in FindHoldInput) (FindHoldResult, error) {
	log := a.logger().With("key", in.Key, "charge", in.ChargeID, "attempt", activity.GetInfo(ctx).Attempt)
	port, err := a.port(in.Provider)
	if err != nil {
		return FindHoldResult{}, err
	}
	res, err := a.readHold(ctx, port, in.ChargeID)
	if err != nil {
		a.Metrics.lookup(a.providerName(in.Provider), in.Operation, reconcileError)
		log.Warn("could not read the hold at the provider", "error", err)
		return FindHoldResult{}, err
	}
	if in.Key != "" {
		if err := a.Store.MarkMoveChecked(ctx, in.Key, a.now()); err != nil {
			log.Warn("could not record the time of the check", "error", err)
		}
	}
	a.Metrics.lookup(a.providerName(in.Provider), in.Operation, string(res.Hold))
	log.Info("read the hold at the provider", "hold", string(res.Hold), "captured", res.Captured)
	return res, nil
}

// readHold reads the hold id at port and tells its status.
func (a *Activities) readHold(ctx context.Context, port provider.Port, id string) (FindHoldResult, error) {
	c, err := port.GetCharge(ctx, id)
	if err != nil {
		return FindHoldResult{}, lookupError(err, "read charge "+id)
	}
	switch c.Status {
	case provider.StatusAuthorized:
		return FindHoldResult{Hold: chargeonce.HoldAuthorized}, nil
	case provider.StatusSucceeded:
		return FindHoldResult{Hold: chargeonce.HoldCaptured, Captured: c.AmountCaptured}, nil
	case provider.StatusVoided:
		return FindHoldResult{Hold: chargeonce.HoldVoided}, nil
	case provider.StatusExpired:
		return FindHoldResult{Hold: chargeonce.HoldExpired}, nil
	}
	return FindHoldResult{}, nonRetryable(ErrTypeContractViolation, fmt.Sprintf("the provider shows hold %s as %q, which no hold is", id, c.Status))
}

// Signaler is the part of the Temporal client that RecordMove needs:
// client.Client is one.
type Signaler interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// HoldMoved is the payload of the hold-moved signal, which RecordMove
// sends to the payment workflow that keeps a hold once a move of it
// settled.
type HoldMoved struct {
	// Key is the move's key.
	Key string `json:"key"`
	// Status is the move's settled status.
	Status chargeonce.MoveStatus `json:"status"`
	// Hold is the status the move proved the hold is in; empty when it
	// proved none.
	Hold chargeonce.HoldStatus `json:"hold,omitempty"`
	// Captured is what a capture took, for a captured hold.
	Captured int64 `json:"captured,omitempty"`
}

// RecordMoveInput is the input of RecordMove.
type RecordMoveInput struct {
	// Key is the move's idempotency key.
	Key string `json:"Key"`
	// AttemptKey is the key of the attempt that authorized the hold: the
	// ID of the payment workflow that keeps it, which RecordMove tells.
	AttemptKey string `json:"AttemptKey"`
	// Status is the settled status to record.
	Status chargeonce.MoveStatus `json:"Status"`
	// DeclineCode is the provider's code of a declined move.
	DeclineCode string `json:"DeclineCode,omitempty"`
	// Hold is the status the move proved the hold is in; the hold ends
	// with it when it is an ended one.
	Hold chargeonce.HoldStatus `json:"Hold,omitempty"`
	// Captured is what the capture took, in minor units, for a captured
	// hold.
	Captured int64 `json:"Captured,omitempty"`
}

// RecordMove settles the move, and the hold it ended, in the merchant's
// database, and tells the payment workflow that keeps the hold (the
// hold-moved signal), which then stops waiting for the deadline. The
// update is conditional on the move being pending, so running it twice
// changes nothing, and a second signal ends nothing twice. The signal is
// the activity's rather than the move workflow's, which spares the move's
// history the signal's events and a workflow task: a capture costs what a
// refund does. A payment workflow that has closed needs no telling.
func (a *Activities) RecordMove(ctx context.Context, in RecordMoveInput) (RecordOutcomeResult, error) {
	if !in.Status.Settled() {
		return RecordOutcomeResult{}, nonRetryable(ErrTypeInvalidRequest, fmt.Sprintf("record move: %q is not a settled move status", in.Status))
	}
	log := a.logger().With("key", in.Key, "status", string(in.Status), "hold", string(in.Hold))
	changed, err := a.Store.SettleMove(ctx, in.Key, in.Status, in.DeclineCode, in.Hold, in.Captured, a.now())
	if errors.Is(err, store.ErrNotFound) {
		return RecordOutcomeResult{}, nonRetryable(ErrTypeHoldNotFound, "record move: move "+in.Key+" is not in the database")
	}
	if err != nil {
		return RecordOutcomeResult{}, fmt.Errorf("record move %s as %s: %w", in.Key, in.Status, err)
	}
	if changed {
		log.Info("move settled")
	}
	if err := a.tellPayment(ctx, log, in); err != nil {
		return RecordOutcomeResult{}, err
	}
	return RecordOutcomeResult{Changed: changed}, nil
}

// tellPayment sends the hold-moved signal of a settled move to the payment
// workflow of its hold. Without a Temporal client (tests of the workflows
// alone) it tells nothing; the payment then learns of the hold's end at
// its deadline, from the store.
func (a *Activities) tellPayment(ctx context.Context, log *slog.Logger, in RecordMoveInput) error {
	if a.Temporal == nil || in.AttemptKey == "" {
		return nil
	}
	err := a.Temporal.SignalWorkflow(ctx, in.AttemptKey, "", chargeonce.SignalHoldMoved,
		HoldMoved{Key: in.Key, Status: in.Status, Hold: in.Hold, Captured: in.Captured})
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		log.Info("the payment workflow of the hold has closed; nothing to tell", "attempt", in.AttemptKey)
		return nil
	case err != nil:
		return fmt.Errorf("tell the payment workflow %s of move %s: %w", in.AttemptKey, in.Key, err)
	}
	return nil
}

// EndHoldInput is the input of EndHold.
type EndHoldInput struct {
	// AttemptKey is the key of the attempt that authorized the hold.
	AttemptKey string `json:"AttemptKey"`
	// Hold is the ended status to record.
	Hold chargeonce.HoldStatus `json:"Hold"`
	// Captured is what a capture took, for a captured hold.
	Captured int64 `json:"Captured,omitempty"`
}

// EndHold records how a hold ended that no move of ours ended: one the
// provider expired, or one found captured or voided at the provider. It
// changes nothing for a hold that ended already.
func (a *Activities) EndHold(ctx context.Context, in EndHoldInput) (RecordOutcomeResult, error) {
	if !in.Hold.Ended() {
		return RecordOutcomeResult{}, nonRetryable(ErrTypeInvalidRequest, fmt.Sprintf("end hold: %q is not an ended hold status", in.Hold))
	}
	changed, err := a.Store.EndHold(ctx, in.AttemptKey, in.Hold, in.Captured, a.now())
	if errors.Is(err, store.ErrNotFound) {
		return RecordOutcomeResult{}, nonRetryable(ErrTypeHoldNotFound, "end hold: the hold of attempt "+in.AttemptKey+" is not in the database")
	}
	if err != nil {
		return RecordOutcomeResult{}, fmt.Errorf("end the hold of attempt %s as %s: %w", in.AttemptKey, in.Hold, err)
	}
	if changed {
		a.logger().Info("hold ended", "key", in.AttemptKey, "hold", string(in.Hold), "captured", in.Captured)
	}
	return RecordOutcomeResult{Changed: changed}, nil
}

// DeadlineMoveInput is the input of StartDeadlineMove.
type DeadlineMoveInput struct {
	// AttemptKey is the key of the attempt that authorized the hold.
	AttemptKey string `json:"AttemptKey"`
	// OrderID is the hold's order.
	OrderID int64 `json:"OrderID"`
	// Kind is the move the deadline makes (chargeonce.DeadlineAction).
	Kind chargeonce.MoveKind `json:"Kind"`
	// ReferencePrefix starts the new move's merchant reference: the one
	// of the payment's.
	ReferencePrefix string `json:"ReferencePrefix"`
}

// DeadlineMove is what StartDeadlineMove found or did.
type DeadlineMove struct {
	// Move is the move that now decides the hold: the deadline's own when
	// Created, or a move of the merchant's still pending; nil when the
	// hold had ended already.
	Move *chargeonce.MoveIntent `json:"Move,omitempty"`
	// Created reports that the move is the deadline's own, whose workflow
	// the payment workflow starts.
	Created bool `json:"Created,omitempty"`
	// Started reports that the move's workflow is known to run.
	Started bool `json:"Started,omitempty"`
	// Hold is the hold's status when it had ended already.
	Hold chargeonce.HoldStatus `json:"Hold,omitempty"`
	// Captured is what a capture took, for a captured hold.
	Captured int64 `json:"Captured,omitempty"`
}

// StartDeadlineMove stores the move that the hold's deadline makes, under
// a fresh key, unless another move decides the hold already: then it
// returns that move, or how the hold ended. The store decides it under
// the order's lock, as it decides the merchant's moves, so that a hold is
// never moved twice.
func (a *Activities) StartDeadlineMove(ctx context.Context, in DeadlineMoveInput) (DeadlineMove, error) {
	key, err := uuid.NewV7()
	if err != nil {
		return DeadlineMove{}, fmt.Errorf("issue a move key: %w", err)
	}
	m, _, err := a.Store.StartMove(ctx, store.NewMove{
		OrderID: in.OrderID, Kind: in.Kind, Origin: chargeonce.MoveByDeadline,
		Key: key.String(), ReferencePrefix: in.ReferencePrefix, Now: a.now(),
	})
	switch {
	case err == nil:
		return DeadlineMove{Move: &m.MoveIntent, Created: true}, nil
	case errors.Is(err, store.ErrHoldMoving):
		moves, err := a.Store.OrderMoves(ctx, in.OrderID)
		if err != nil {
			return DeadlineMove{}, fmt.Errorf("read the moves of order %d: %w", in.OrderID, err)
		}
		for _, m := range moves {
			if m.Status == chargeonce.MovePending {
				return DeadlineMove{Move: &m.MoveIntent, Started: m.WorkflowStarted}, nil
			}
		}
		return DeadlineMove{}, fmt.Errorf("order %d: the store says a move of the hold is pending, and lists none", in.OrderID)
	case errors.Is(err, store.ErrNotHeld):
		h, err := a.Store.GetHold(ctx, in.AttemptKey)
		if err != nil {
			return DeadlineMove{}, fmt.Errorf("read the hold of attempt %s: %w", in.AttemptKey, err)
		}
		return DeadlineMove{Hold: h.Status, Captured: h.Captured}, nil
	case errors.Is(err, store.ErrNotFound):
		return DeadlineMove{}, nonRetryable(ErrTypeHoldNotFound, fmt.Sprintf("order %d is not in the database", in.OrderID))
	}
	return DeadlineMove{}, fmt.Errorf("start the deadline's %s of order %d: %w", in.Kind, in.OrderID, err)
}

// MarkMoveStarted records that a move's workflow runs, which takes the
// move out of the outbox.
func (a *Activities) MarkMoveStarted(ctx context.Context, key string) error {
	return a.Store.MarkMoveWorkflowStarted(ctx, key)
}
