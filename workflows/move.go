package workflows

import (
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/internal/alert"
)

// A move ends a hold: a capture takes its money, a void releases it. Each
// is a money movement of its own, with its own key, and runs the course of
// every movement (operation.go): requests under its key, then lookups of
// the hold until the outcome is settled. capture.go and void.go name the
// two; this file is what they share.

// PhaseMoving: the requests of a capture's or a void's send phase are
// going out. A move is looked up in PhaseReconciling, and ends in
// PhaseCompleted.
const PhaseMoving = "moving"

// ErrTypeInvalidMoveInput is the error type of a capture or void workflow
// started with an input it cannot run: a bug of the starter, which no
// retry fixes.
const ErrTypeInvalidMoveInput = "InvalidMoveInput"

// MoveInput is the input of CaptureWorkflow and VoidWorkflow.
type MoveInput struct {
	// Intent is the move to send.
	Intent chargeonce.MoveIntent `json:"intent"`
	// Timing is how long to wait for what, as for payments; zero fields
	// take DefaultTiming's values.
	Timing Timing `json:"timing"`
	// Carried is the state handed over by continue-as-new; nil on the
	// first run. A run that carries state never sends.
	Carried *MoveCarried `json:"carried,omitempty"`
}

// MoveCarried is what a move that is being looked up hands to its next
// run when it continues as new.
type MoveCarried struct {
	// Checks is how many lookups were made.
	Checks int `json:"checks"`
	// LastError is the error of the last failed request or lookup.
	LastError string `json:"lastError,omitempty"`
	// SentBy is when every request sent had ended.
	SentBy time.Time `json:"sentBy,omitzero"`
}

// MoveUpdate is the input of the "move" update: the caller asking for the
// outcome of the move it stored under Key.
type MoveUpdate struct {
	// Key is the move's key, which must be this workflow's; empty means
	// this workflow's.
	Key string `json:"key,omitempty"`
}

// MoveResult is the outcome of a capture or a void, returned by its
// workflow and by the "move" update.
type MoveResult struct {
	// Status is the move's status; MovePending means the outcome is still
	// unknown, and the hold is being looked up at the provider.
	Status chargeonce.MoveStatus `json:"status"`
	// DeclineCode is the provider's hold decline code of a declined move.
	DeclineCode string `json:"declineCode,omitempty"`
	// Hold is the status the move proved the hold is in; empty when it
	// proved none.
	Hold chargeonce.HoldStatus `json:"hold,omitempty"`
	// Captured is what the hold's capture took, in minor units, when Hold
	// is captured.
	Captured int64 `json:"captured,omitempty"`
	// Message says what happened, for people.
	Message string `json:"message,omitempty"`
}

// MoveWorkflowID is the ID of the workflow of the move with this key: the
// key itself, as for payments and refunds.
func MoveWorkflowID(key string) string {
	return key
}

// MoveWorkflow is the workflow function of a move of this kind:
// CaptureWorkflow or VoidWorkflow.
func MoveWorkflow(kind chargeonce.MoveKind) func(workflow.Context, MoveInput) (MoveResult, error) {
	if kind == chargeonce.MoveCapture {
		return CaptureWorkflow
	}
	return VoidWorkflow
}

// MoveStartSearchAttributes are the search attributes a move's workflow
// starts with: a pending move of its order, under its merchant reference,
// with its operation, capture or void.
func MoveStartSearchAttributes(intent chargeonce.MoveIntent) temporal.SearchAttributes {
	updates := setting((&move{intent: intent}).searchAttributes())
	return temporal.NewSearchAttributes(append(updates, SearchAttrOperation.ValueSet(string(intent.Kind.Operation())))...)
}

// runMove runs the move of in, which must be of kind: the body of
// CaptureWorkflow and VoidWorkflow.
func runMove(ctx workflow.Context, kind chargeonce.MoveKind, send any, in MoveInput) (MoveResult, error) {
	m, err := newMove(ctx, kind, send, in)
	if err != nil {
		return MoveResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidMoveInput, nil)
	}
	return run(ctx, m)
}

// move is the state of one run of a capture's or a void's workflow.
type move struct {
	operation[MoveResult]
	in     MoveInput
	intent chargeonce.MoveIntent
	// send is the activity that sends one request: acts.Capture or
	// acts.Void.
	send any
	// sentBy is when every request sent so far had ended; zero while none
	// was sent.
	sentBy time.Time
}

func newMove(ctx workflow.Context, kind chargeonce.MoveKind, send any, in MoveInput) (*move, error) {
	if in.Intent.Kind != kind {
		return nil, fmt.Errorf("a %s workflow was started with a %q intent", kind, in.Intent.Kind)
	}
	op, err := newOperation[MoveResult](ctx, kind.Operation(), in.Timing, in.Intent,
		log.With(workflow.GetLogger(ctx), "key", in.Intent.Key, "order", in.Intent.OrderID, "charge", in.Intent.ChargeID, "move", string(kind)), PhaseMoving)
	if err != nil {
		return nil, err
	}
	m := &move{operation: op, in: in, intent: in.Intent, send: send}
	if c := in.Carried; c != nil {
		m.status = Status{Phase: PhaseReconciling, Checks: c.Checks, LastError: c.LastError}
		m.sentBy = c.SentBy
	}
	return m, nil
}

func (m *move) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, chargeonce.UpdateMove, m.handleMove,
		workflow.UpdateHandlerOptions{Validator: m.validateMove}); err != nil {
		return fmt.Errorf("register the move update: %w", err)
	}
	listen(ctx, chargeonce.SignalMoveEvent, func(ev ProviderEvent) {
		m.log.Info("the provider reported the hold, looking it up at once", "charge", ev.ChargeID)
		m.checkNow = true
	})
	return nil
}

// validateMove refuses, before anything is written to the history, an
// update meant for another move.
func (m *move) validateMove(req MoveUpdate) error {
	if req.Key != "" && req.Key != m.intent.Key {
		return fmt.Errorf("%s: the update is for move %q, and this workflow sends %q", m.intent.Kind, req.Key, m.intent.Key)
	}
	return nil
}

// handleMove answers the send phase's outcome, waiting for it while the
// requests are going out; later it answers the move as it stands.
func (m *move) handleMove(ctx workflow.Context, _ MoveUpdate) (MoveResult, error) {
	if err := workflow.Await(ctx, func() bool { return m.status.Phase != PhaseMoving }); err != nil {
		return MoveResult{}, err
	}
	return m.outcome(), nil
}

// sendPhase sends the move when this run starts with it, and settles a
// definite outcome; an unknown one moves the move to lookups. Its error is
// only cancellation.
func (m *move) sendPhase(ctx workflow.Context) error {
	if m.status.Phase != PhaseMoving {
		return nil
	}
	defer func() {
		if m.final == nil {
			m.status.Phase = PhaseReconciling
		}
	}()
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("Sending the %s of hold %s (%s) with key %s: waiting for the provider's answer until %s at the latest.",
		m.intent.Kind, m.intent.ChargeID, m.intent.Amount, m.intent.Key, formatTime(workflow.Now(ctx).Add(m.timing.SendBudget))))
	var res activities.MoveAnswer
	end, refusal, err := sendRequests(ctx, m.timing, false, "next "+string(m.intent.Kind)+" request", &m.status.LastError, func(actx workflow.Context) error {
		return workflow.ExecuteActivity(actx, m.send, activities.MoveInput{Intent: m.intent}).Get(ctx, &res)
	})
	if err != nil {
		return err
	}
	m.sentBy = workflow.Now(ctx)
	switch end {
	case sendAnswered:
		return m.settle(ctx, m.answered(res.Status, res.DeclineCode, res.Hold, res.Captured))
	case sendNothingProcessed:
		m.log.Warn("the provider processed no request of the "+string(m.intent.Kind)+": the hold is as it was, and the move is settled not_processed", "error", m.status.LastError)
		return m.settle(ctx, MoveResult{Status: chargeonce.MoveNotProcessed, Message: "the provider processed none of the requests; the hold is as it was"})
	case sendRefused:
		m.log.Error("the provider refused the "+string(m.intent.Kind)+" request as a contract violation: the move is marked failed, and a human must look at this key",
			alert.Attr(alert.ContractViolation), "error", refusal.Error())
		return m.settle(ctx, MoveResult{Status: chargeonce.MoveFailed, Message: "the provider refused the request: " + refusal.Message()})
	}
	m.log.Warn("the outcome of the "+string(m.intent.Kind)+" is unknown; the hold is looked up at the provider", "error", m.status.LastError)
	return nil
}

// answered is the outcome of a move that the provider answered, or whose
// hold a lookup read.
func (m *move) answered(status chargeonce.MoveStatus, declineCode string, hold chargeonce.HoldStatus, captured int64) MoveResult {
	res := MoveResult{Status: status, DeclineCode: declineCode, Hold: hold, Captured: captured}
	switch status {
	case chargeonce.MoveSucceeded:
		res.Message = "the provider " + string(m.intent.Kind.Ends()) + " the hold"
	case chargeonce.MoveDeclined:
		res.Message = "the provider refused the " + string(m.intent.Kind) + ": " + declineCode
	}
	return res
}

// reconcile looks the hold up until the move is settled.
func (m *move) reconcile(ctx workflow.Context) error {
	if m.final != nil {
		return nil
	}
	return lookups(ctx, m)
}

// nextLookup is on the grid of the payment's lookups: a move's lookup
// settles it once MinAge has passed since its requests ended, so the grid
// is never long.
func (m *move) nextLookup(now time.Time) (time.Time, bool) {
	return m.timing.nextLookupAt(m.timing.LookupJitter(m.intent.Key), m.intent.CreatedAt, now, m.status.Checks), true
}

func (m *move) waitingDetails(next time.Time) string {
	return fmt.Sprintf("Outcome of the %s unknown: next lookup of hold %s at %s (%d so far). A provider event acts at once.",
		m.intent.Kind, m.intent.ChargeID, formatTime(next), m.status.Checks)
}

// check reads the hold at the provider once. A hold that ended settles the
// move: succeeded when it ended as this move ends it, declined with the
// matching code otherwise. A hold still authorized MinAge or more after
// every request had ended proves that the provider processed none, since
// only a move changes a hold: the move settles not_processed. Its error is
// only cancellation.
func (m *move) check(ctx workflow.Context) error {
	startedAt := workflow.Now(ctx)
	m.status.Checks++
	var res activities.FindHoldResult
	err := workflow.ExecuteActivity(withLookupOptions(ctx, m.timing, m.intent.Provider, activities.ErrTypeContractViolation), acts.FindHold, activities.FindHoldInput{
		Key:       m.intent.Key,
		ChargeID:  m.intent.ChargeID,
		Provider:  m.intent.Provider,
		Operation: m.intent.Kind.Operation(),
	}).Get(ctx, &res)
	if temporal.IsCanceledError(err) {
		return err
	}
	if err != nil {
		m.status.LastError = err.Error()
		m.log.Warn("hold lookup failed, trying again at the next check", "checks", m.status.Checks, "error", err)
		return nil
	}
	m.status.LastError = ""
	switch {
	case res.Hold == m.intent.Kind.Ends():
		m.log.Info("the lookup found the hold "+string(res.Hold)+", as the move makes it", "captured", res.Captured)
		return m.settle(ctx, m.answered(chargeonce.MoveSucceeded, "", res.Hold, res.Captured))
	case res.Hold.Ended():
		m.log.Info("the lookup found the hold "+string(res.Hold)+" by other means", "captured", res.Captured)
		return m.settle(ctx, MoveResult{Status: chargeonce.MoveDeclined, Hold: res.Hold, Captured: res.Captured, Message: "the hold was found " + string(res.Hold) + " by other means"})
	case !m.sentBy.IsZero() && !startedAt.Before(m.sentBy.Add(m.timing.MinAge)):
		m.log.Warn("the hold is still authorized long after every request ended: the provider processed none, and the move is settled not_processed", "sent_by", formatTime(m.sentBy))
		return m.settle(ctx, MoveResult{Status: chargeonce.MoveNotProcessed, Message: "the provider processed none of the requests; the hold is as it was"})
	}
	m.log.Info("the hold is still authorized, will check again", "checks", m.status.Checks)
	return nil
}

// settle records the settled move, and the hold it ended; the record
// tells the payment workflow that keeps the hold (activities.RecordMove),
// which then stops waiting for the deadline if the hold has ended. Its
// error is only cancellation.
func (m *move) settle(ctx workflow.Context, res MoveResult) error {
	return m.operation.settle(ctx, res, func(ctx workflow.Context) (bool, error) {
		out, err := record(ctx, m.log, acts.RecordMove, activities.RecordMoveInput{
			Key: m.intent.Key, AttemptKey: m.intent.AttemptKey, Status: res.Status, DeclineCode: res.DeclineCode, Hold: res.Hold, Captured: res.Captured,
		})
		return out.Changed, err
	})
}

func (res MoveResult) completion() string {
	details := "Completed: " + string(res.Status)
	if res.Hold != "" {
		details += ", hold " + string(res.Hold)
	}
	if res.DeclineCode != "" {
		details += ", reason " + res.DeclineCode
	}
	return details + "."
}

// nextRun carries the lookups' state.
func (m *move) nextRun() (any, any) {
	next := m.in
	next.Carried = &MoveCarried{Checks: m.status.Checks, LastError: m.status.LastError, SentBy: m.sentBy}
	return MoveWorkflow(m.intent.Kind), next
}

// outcome is the settled outcome, or a pending result while it is not.
func (m *move) outcome() MoveResult {
	if m.final != nil {
		return *m.final
	}
	return MoveResult{Status: chargeonce.MovePending, Message: "the outcome of the " + string(m.intent.Kind) + " is unknown; the hold is being looked up at the provider"}
}

// searchAttributes are the move's search attributes as they stand, those
// of payments where they fit: the order, the status, the reference and the
// hold's charge. The order is fixed, so that the upsert command is the
// same on every replay.
func (m *move) searchAttributes() []searchAttribute {
	return []searchAttribute{
		{SearchAttrOrderID, strconv.FormatInt(m.intent.OrderID, 10)},
		{SearchAttrPaymentStatus, string(m.outcome().Status)},
		{SearchAttrMerchantReference, m.intent.MerchantReference},
		{SearchAttrProviderPaymentID, m.intent.ChargeID},
	}
}
