// Package workflows holds the payment workflow: one durable workflow per
// payment intent, whose ID is the intent's idempotency key. It charges the
// card through the Charge activity with the same key on every request, and
// when the outcome stays unknown it reconciles the attempt with the provider
// until the abandon deadline. The refund workflow does the same for a
// refund intent, and is never abandoned. Both run the course of every money
// movement (operation.go), with the requests and lookups of send.go.
//
// The code here is deterministic workflow code: it reaches the provider and
// the database only through the activities.
package workflows

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/internal/alert"
)

// The phases of a payment, as the status query reports them.
const (
	// PhaseCharging: the charge requests of the charge phase are going out.
	PhaseCharging = "charging"
	// PhaseReconciling: the outcome is unknown (or nothing could be sent
	// yet) and the attempt is being looked up at the provider.
	PhaseReconciling = "reconciling"
	// PhaseCompleted: the attempt is settled.
	PhaseCompleted = "completed"
)

// MaxHistoryLength is the history length at which a reconciling payment, or
// a refund being looked up, continues as new, unless Temporal suggests it
// earlier. A reconciliation of the default timing writes a few hundred
// events; the limit only matters for very long timings.
const MaxHistoryLength = 10000

// ErrTypeInvalidInput is the error type of a payment workflow started with
// an input it cannot run: a bug of the starter, which no retry fixes.
const ErrTypeInvalidInput = "InvalidPaymentInput"

// PaymentInput is the input of PaymentWorkflow.
type PaymentInput struct {
	// Intent is the payment to charge. Its CardToken may be empty when the
	// outbox sweep starts the workflow; then nothing can be sent, and the
	// attempt settles not_processed at once (see startWithoutToken).
	Intent chargeonce.PaymentIntent `json:"intent"`
	// Timing is how long to wait for what; zero fields take DefaultTiming's
	// values.
	Timing Timing `json:"timing"`
	// Carried is the state handed over by continue-as-new; nil on the first
	// run. A run that carries state is always reconciling.
	Carried *CarriedState `json:"carried,omitempty"`
	// FailOver reports that another provider may take the payment should
	// this one process nothing. The charge phase then ends, not_processed,
	// at the first request that the provider certainly did not process,
	// rather than retrying until the budget ends, so that the checkout
	// moves the payment on at once. A request that may have been processed
	// still makes the outcome unknown, and the payment stays here.
	FailOver bool `json:"failOver,omitempty"`
}

// CarriedState is what a reconciling payment hands to its next run when it
// continues as new.
type CarriedState struct {
	// Checks is how many lookups were made.
	Checks int `json:"checks"`
	// LastError is the error of the last failed request or lookup.
	LastError string `json:"lastError,omitempty"`
	// CardToken is a token that a charge update brought to an intent that
	// had none.
	CardToken string `json:"cardToken,omitempty"`
}

// ChargeRequest is the input of the "charge" update: a customer paying, or
// paying again, with the card of this payment.
type ChargeRequest struct {
	// CardToken is the card's token. It must be the card of the intent; it
	// may be empty when the intent has its token already.
	CardToken string `json:"cardToken,omitempty"`
	// CardHash is the keyed hash of CardToken (chargeonce.CardHasher),
	// which the caller computes: workflow code holds no key. Requests sent
	// before card hashes were keyed have none.
	CardHash string `json:"cardHash,omitempty"`
}

// PaymentResult is the outcome of the payment, returned by the workflow and
// by the "charge" update.
type PaymentResult struct {
	// Status is the attempt's status; AttemptOpen means the outcome is still
	// unknown and the attempt is being verified with the provider.
	Status chargeonce.AttemptStatus `json:"status"`
	// ProviderPaymentID is the provider's charge id, when there is one.
	ProviderPaymentID string `json:"providerPaymentId,omitempty"`
	// DeclineCode is the provider's reason for a decline.
	DeclineCode string `json:"declineCode,omitempty"`
	// ProviderTrouble reports that a decline is the provider's own trouble
	// (the issuer or acquirer unavailable, a processing error, "try again
	// later"), not the card's: nothing was charged, and another provider
	// may take the same payment. A card's decline leaves it false.
	ProviderTrouble bool `json:"providerTrouble,omitempty"`
	// Message says what happened, for people.
	Message string `json:"message,omitempty"`
	// Hold is the hold that a manual capture's charge authorized; nil for
	// a charge that took the money.
	Hold *HoldResult `json:"hold,omitempty"`
}

// Status is the answer of the "status" query.
type Status struct {
	// Phase is PhaseCharging, PhaseReconciling or PhaseCompleted; for a
	// refund, PhaseRefunding, PhaseReconciling, PhaseUnresolved or
	// PhaseCompleted.
	Phase string `json:"phase"`
	// NextCheckAt is when the provider is next asked; zero when no lookup is
	// scheduled.
	NextCheckAt time.Time `json:"nextCheckAt"`
	// Checks is how many lookups were made.
	Checks int `json:"checks"`
	// LastError is the error of the last failed request or lookup.
	LastError string `json:"lastError,omitempty"`
	// HoldDeadline is the deadline of the hold the payment keeps, in
	// PhaseHolding; zero otherwise.
	HoldDeadline time.Time `json:"holdDeadline,omitzero"`
}

// ProviderEvent is the payload of the "provider-event" update (and of the
// signal of the same name that earlier API processes send): the provider
// reported a charge (by webhook). The workflow trusts but verifies: the
// signal only makes it look the attempt up at once.
type ProviderEvent struct {
	// ChargeID is the provider's charge id from the event.
	ChargeID string `json:"chargeId"`
}

// WorkflowID is the ID of the payment workflow of the intent with this key:
// the key itself, so that starting a payment twice joins the same workflow.
func WorkflowID(key string) string {
	return key
}

// Register registers the workflows of every money movement and the
// activities with a worker of chargeonce.TaskQueue. The lookups (FindCharge,
// FindRefund and FindHold) come with the struct but never run there: the workflows schedule them on the lookup
// task queue of the intent's provider (chargeonce.LookupTaskQueueOf).
func Register(r worker.Registry, a *activities.Activities) {
	registerPaymentWorkflows(r)
	r.RegisterActivity(a)
}

// registerPaymentWorkflows registers the workflows of Register, which
// NewReplayer registers too.
func registerPaymentWorkflows(r worker.WorkflowRegistry) {
	registerWorkflow(r, PaymentWorkflow)
	registerWorkflow(r, RefundWorkflow)
	registerWorkflow(r, CaptureWorkflow)
	registerWorkflow(r, VoidWorkflow)
}

// RegisterLookups registers the lookup activities, FindCharge, FindRefund
// and FindHold, alone with a worker of a lookup task queue
// (chargeonce.LookupTaskQueueOf).
func RegisterLookups(r worker.Registry, a *activities.Activities) {
	r.RegisterActivity(a.FindCharge)
	r.RegisterActivity(a.FindRefund)
	r.RegisterActivity(a.FindHold)
}

// acts names the activities for ExecuteActivity; it is never dereferenced.
var acts *activities.Activities

// PaymentWorkflow charges one payment intent exactly once.
//
// Charge phase: the Charge activity sends the charge with the intent's key,
// one local activity execution per request, every RetryInterval (or after
// the provider's Retry-After) within SendBudget. An approval or a decline
// settles the attempt, which the same execution records in the database. A contract violation settles it as failed, for a
// human. When the budget ends and no request can have been processed, it
// settles as not_processed at once: nothing was charged, and there is
// nothing to reconcile. Anything else leaves the outcome unknown. A run
// without a card token settles as not_processed at once.
//
// Reconciliation: the attempt is looked up at the provider by its merchant
// reference on its provider's lookup task queue, at the times of
// Timing.LookupTimes: from CreatedAt+MinAge plus the key's jitter, less and
// less often, and last exactly at CreatedAt+AbandonAfter. A succeeded charge settles it as
// succeeded, only failed charges as declined, and no charge at the deadline
// as abandoned.
// A "charge" update re-sends the charge at once with the same key; a
// "provider-event" update (or signal) makes the lookup happen at once.
//
// The workflow returns the outcome; it fails only for an input it cannot
// run, never for a payment outcome.
func PaymentWorkflow(ctx workflow.Context, in PaymentInput) (PaymentResult, error) {
	// Versioning. A run is pinned to the version of the workers that
	// started it (Versioning), so a change to the commands this function
	// produces reaches new runs only, and needs no workflow.GetVersion
	// gate, except for runs that can meet it on their way: those started
	// before the workers joined the deployment, and those an operator
	// moves with a versioning override (docs/design.md, "Deploying new
	// workflow code"). A gate retires once no run started before its
	// change can still be open: AbandonAfter plus a margin, since a run is
	// settled by its deadline's lookup, and after the deadline it only
	// waits for a provider that does not answer lookups. Take a day beyond
	// the longest AbandonAfter deployed. Past it, remove the call (or
	// raise its minimum supported version, as the SDK allows), delete the
	// old branch, and drop from testdata the histories that only the old
	// branch replays. Every gate costs each run a marker and a
	// search-attribute upsert, so gates do not accumulate.
	p, err := newPayment(ctx, in)
	if err != nil {
		return PaymentResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidInput, nil)
	}
	return run(ctx, p)
}

// payment is the state of one run of PaymentWorkflow. Its operation's
// mutex makes a lookup and a re-sent charge exclusive, so that an
// abandonment can never race an approval.
type payment struct {
	operation[PaymentResult]
	in     PaymentInput
	intent chargeonce.PaymentIntent
	// token is the card token to send; empty until one is known.
	token string
	// resend is the re-sent charge in flight, which further charge updates
	// wait for instead of sending again.
	resend *resendCall
	// ended is the move, or the lookup, that ended the payment's hold;
	// nil while the hold is authorized, or when there is none.
	ended *activities.HoldMoved
}

type resendCall struct {
	done   bool
	result PaymentResult
}

func newPayment(ctx workflow.Context, in PaymentInput) (*payment, error) {
	op, err := newOperation[PaymentResult](ctx, chargeonce.OperationCharge, in.Timing, in.Intent,
		log.With(workflow.GetLogger(ctx), "key", in.Intent.Key, "order", in.Intent.OrderID), PhaseCharging)
	if err != nil {
		return nil, err
	}
	p := &payment{operation: op, in: in, intent: in.Intent, token: in.Intent.CardToken}
	if c := in.Carried; c != nil {
		if c.CardToken != "" {
			// A keyed hash cannot be checked here; a carried token was
			// checked by validateCharge when its update was accepted.
			if !in.Intent.CardHashKeyed && chargeonce.LegacyCardHash(c.CardToken) != in.Intent.CardHash {
				return nil, errors.New("payment input: the carried card token does not match the card hash")
			}
			p.token = c.CardToken
		}
		p.status = Status{Phase: PhaseReconciling, Checks: c.Checks, LastError: c.LastError}
	}
	if p.token == "" {
		// Nothing has ever been sent under this key, so there is no charge
		// phase to run: only a charge update can send.
		p.status.Phase = PhaseReconciling
	}
	return p, nil
}

func (p *payment) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, chargeonce.UpdateCharge, p.handleCharge,
		workflow.UpdateHandlerOptions{Validator: p.validateCharge}); err != nil {
		return fmt.Errorf("register the charge update: %w", err)
	}
	if err := workflow.SetUpdateHandler(ctx, chargeonce.UpdateProviderEvent, func(_ workflow.Context, ev ProviderEvent) error {
		p.providerEvent(ev)
		return nil
	}); err != nil {
		return fmt.Errorf("register the provider-event update: %w", err)
	}
	listen(ctx, chargeonce.SignalProviderEvent, p.providerEvent)
	listen(ctx, chargeonce.SignalHoldMoved, p.holdMoved)
	return nil
}

// providerEvent makes the next lookup happen at once: the provider reported
// a charge.
func (p *payment) providerEvent(ev ProviderEvent) {
	p.log.Info("provider reported a charge, looking the attempt up at once", "charge", ev.ChargeID)
	p.checkNow = true
}

// sendPhase runs the charge phase, or settles at once a run that can send
// nothing (startWithoutToken).
func (p *payment) sendPhase(ctx workflow.Context) error {
	if p.status.Phase == PhaseCharging {
		return p.chargePhase(ctx)
	}
	if p.token == "" {
		return p.startWithoutToken(ctx)
	}
	return nil
}

// chargePhase sends the charge and settles a definite outcome. An unknown
// outcome moves the payment to reconciliation.
func (p *payment) chargePhase(ctx workflow.Context) error {
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("Charging %s with key %s: waiting for the provider's answer until %s at the latest.",
		p.intent.Amount, p.intent.Key, formatTime(workflow.Now(ctx).Add(p.timing.SendBudget))))
	r, recorded, err := p.charge(ctx)
	if err != nil {
		return err
	}
	if recorded {
		p.complete(ctx, r)
		return nil
	}
	if r.Status == chargeonce.AttemptNotProcessed {
		p.log.Warn("the provider processed no charge request of the attempt: nothing was charged, the attempt is settled not_processed and the order may be paid again", "error", p.status.LastError)
	}
	if r.Status.Terminal() {
		return p.settle(ctx, r)
	}
	p.log.Warn("payment outcome unknown, the attempt stays open and is reconciled with the provider", "error", p.status.LastError)
	p.status.Phase = PhaseReconciling
	return nil
}

// startWithoutToken settles a run that starts without a card token as
// not_processed. Such a run can send nothing, and nothing was ever sent
// under its key: the outbox sweep starts a new run only when the key has
// had none (USE_EXISTING joins a running one, REJECT_DUPLICATE refuses after
// a closed one), and a run that continues as new carries the token it had.
// So no charge exists under the key, and none can arrive later. Waiting for
// a customer retry to bring the token, and looking the attempt up until the
// abandon deadline, would keep the order payment_pending for nothing;
// instead the order is placed again at once, and the customer's next
// checkout opens a new attempt under a new key. A charge update that brings
// the token before the settlement wins: its resend decides.
func (p *payment) startWithoutToken(ctx workflow.Context) error {
	if err := p.mu.Lock(ctx); err != nil {
		return err
	}
	defer p.mu.Unlock()
	if p.token != "" {
		return nil
	}
	p.log.Info("payment has no card token and nothing was ever sent under its key: the attempt is settled not_processed and the order may be paid again")
	return p.settle(ctx, PaymentResult{Status: chargeonce.AttemptNotProcessed, Message: "no card token: nothing was sent and nothing was charged"})
}

// changeLocalCharge is the workflow.GetVersion change that made each charge
// request a local activity, which also records a definite answer in the
// database, instead of an activity followed by RecordOutcome: a paid
// checkout is one workflow task instead of two, with no activity task
// between them. The key makes that safe: a worker that dies during the
// request leaves no marker, so the next worker sends the same request
// again under the same key, which the provider answers from its
// idempotency store or with 409, and never charges twice. Nor is the lost
// request forgotten: the request log listed it before it went out, so a
// later request that processes nothing does not prove that nothing was
// charged (activities.ErrTypeEarlierRequestUnanswered).
const changeLocalCharge = "local-charge"

// charge sends the charge with the intent's key until the provider answers
// definitely or SendBudget, counted from now, ends. It returns a definite
// outcome, a failure for a contract violation, AttemptNotProcessed when no
// request can have been processed, or an open result when the outcome is
// unknown (sendRequests says how). recorded reports that the request that
// brought a definite outcome settled the attempt in the database already.
// Its error is only cancellation.
func (p *payment) charge(ctx workflow.Context) (r PaymentResult, recorded bool, err error) {
	if workflow.Now(ctx).After(p.timing.lastSendAt(p.intent.CreatedAt)) {
		// A request sent now might still be processing when the deadline's
		// lookup finds nothing, and the attempt would be abandoned with a
		// charge arriving behind it. The lookup decides instead; after an
		// abandonment the customer pays again under a new key.
		p.status.LastError = "too close to the abandon deadline to send; the last lookup decides"
		p.log.Warn("not sending: too close to the abandon deadline, the last lookup decides", "abandon_at", formatTime(p.intent.CreatedAt.Add(p.timing.AbandonAfter)))
		return unknownOutcome(), false, nil
	}
	local := workflow.GetVersion(ctx, changeLocalCharge, workflow.DefaultVersion, 1) == 1
	intent := p.intent
	intent.CardToken = p.token
	var res activities.ChargeResult
	end, refusal, err := sendRequests(ctx, p.timing, p.in.FailOver, "next charge request", &p.status.LastError, func(actx workflow.Context) error {
		if local {
			return workflow.ExecuteLocalActivity(actx, acts.Charge, activities.ChargeInput{Intent: intent, Settle: true, HoldMargin: p.holdMargin()}).Get(ctx, &res)
		}
		return workflow.ExecuteActivity(actx, acts.Charge, activities.ChargeInput{Intent: intent, HoldMargin: p.holdMargin()}).Get(ctx, &res)
	})
	switch {
	case err != nil:
		return PaymentResult{}, false, err
	case end == sendAnswered:
		return definiteOutcome(res), res.Recorded, nil
	case end == sendRefused:
		p.log.Error("the provider refused the payment request as a contract violation: the attempt is marked failed and its order stays pending until a human looks at this key", alert.Attr(alert.ContractViolation), "error", p.status.LastError)
		return PaymentResult{Status: chargeonce.AttemptFailed, Message: "the provider refused the payment request: " + refusal.Message()}, false, nil
	case end == sendUnknown:
		return unknownOutcome(), false, nil
	}
	return PaymentResult{Status: chargeonce.AttemptNotProcessed, Message: "the provider processed none of the charge requests; nothing was charged"}, false, nil
}

// definiteOutcome is the outcome of a charge the provider approved or
// declined.
func definiteOutcome(res activities.ChargeResult) PaymentResult {
	if res.Hold != nil {
		return heldOutcome(res.ProviderPaymentID, *res.Hold, "hold authorized by the provider")
	}
	r := PaymentResult{Status: res.Status, ProviderPaymentID: res.ProviderPaymentID, DeclineCode: res.DeclineCode, ProviderTrouble: res.ProviderTrouble}
	switch {
	case res.Status == chargeonce.AttemptSucceeded:
		r.Message = "payment approved by the provider"
	case res.Status == chargeonce.AttemptDeclined && res.ProviderTrouble:
		r.Message = "declined for the provider's own trouble, not the card's; nothing was charged: " + res.DeclineCode
	case res.Status == chargeonce.AttemptDeclined:
		r.Message = "card declined by the provider: " + res.DeclineCode
	}
	return r
}

func unknownOutcome() PaymentResult {
	return PaymentResult{Status: chargeonce.AttemptOpen, Message: "payment outcome unknown; the payment is being verified with the provider"}
}

// settle records a terminal outcome in the database and completes the
// payment (operation.settle). Its error is only cancellation.
func (p *payment) settle(ctx workflow.Context, r PaymentResult) error {
	return p.operation.settle(ctx, r, func(ctx workflow.Context) (bool, error) {
		out, err := record(ctx, p.log, acts.RecordOutcome, activities.RecordOutcomeInput{
			Key:               p.intent.Key,
			Status:            r.Status,
			ProviderPaymentID: r.ProviderPaymentID,
			Hold:              holdTerms(r),
		})
		return out.Changed, err
	})
}

func (r PaymentResult) completion() string {
	details := "Completed: " + string(r.Status)
	if r.ProviderPaymentID != "" {
		details += ", provider charge " + r.ProviderPaymentID
	}
	return details + "."
}

// reconcile looks the attempt up at the provider until it is settled,
// and then keeps the hold that it authorized, if any, until the hold ends.
func (p *payment) reconcile(ctx workflow.Context) error {
	if err := lookups(ctx, p); err != nil {
		return err
	}
	if p.final.Hold == nil || p.final.Hold.Status != chargeonce.HoldAuthorized {
		return nil
	}
	return p.keepHold(ctx)
}

// holdMargin is the hold margin that a charge of this payment's intent
// sends its activity: the timing's for a manual capture, none otherwise,
// so that the inputs of other payments stay as they were.
func (p *payment) holdMargin() time.Duration {
	if !p.intent.Capture.Manual() {
		return 0
	}
	return p.timing.HoldMargin
}

// nextLookup is on the grid of Timing.LookupTimes, which ends at the
// abandon deadline.
func (p *payment) nextLookup(now time.Time) (time.Time, bool) {
	return p.timing.nextLookupAt(p.timing.LookupJitter(p.intent.Key), p.intent.CreatedAt, now, p.status.Checks), true
}

func (p *payment) waitingDetails(next time.Time) string {
	abandon := formatTime(p.intent.CreatedAt.Add(p.timing.AbandonAfter))
	if p.token == "" {
		return fmt.Sprintf("No card token yet, nothing was sent: waiting for a customer retry to bring it. Provider lookup at %s; abandoned at %s if the provider has no charge.",
			formatTime(next), abandon)
	}
	return fmt.Sprintf("Outcome unknown: next provider lookup at %s (%d so far); abandoned at %s if the provider has no charge. A customer retry or a provider event acts at once.",
		formatTime(next), p.status.Checks, abandon)
}

// check looks the attempt up once and settles it when the provider's answer
// decides it. A lookup that keeps failing is logged and retried at the next
// check (withLookupOptions). Its error is only cancellation.
func (p *payment) check(ctx workflow.Context) error {
	startedAt := workflow.Now(ctx)
	p.status.Checks++
	actx := withLookupOptions(ctx, p.timing, p.intent.Provider, activities.ErrTypeChargeMismatch)
	var res activities.FindChargeResult
	err := workflow.ExecuteActivity(actx, acts.FindCharge, activities.FindChargeInput{
		Key:               p.intent.Key,
		MerchantReference: p.intent.MerchantReference,
		Amount:            p.intent.Amount,
		Provider:          p.intent.Provider,
		Hold:              p.intent.Capture.Manual(),
		HoldMargin:        p.holdMargin(),
	}).Get(ctx, &res)
	if temporal.IsCanceledError(err) {
		return err
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeChargeMismatch {
		var chargeID string
		if appErr.HasDetails() {
			_ = appErr.Details(&chargeID)
		}
		p.log.Error("the provider holds a charge for this attempt that does not match its amount; the attempt is marked failed and needs a human", alert.Attr(alert.ChargeMismatch), "charge", chargeID, "error", err)
		return p.settle(ctx, PaymentResult{Status: chargeonce.AttemptFailed, ProviderPaymentID: chargeID, Message: "the provider's charge does not match the payment: " + appErr.Message()})
	}
	if err != nil {
		p.status.LastError = err.Error()
		p.log.Warn("provider lookup failed, trying again at the next check", "checks", p.status.Checks, "error", err)
		return nil
	}
	p.status.LastError = ""
	switch res.Found {
	case activities.FoundSucceeded:
		p.log.Info("reconciled order: provider has the charge", "charge", res.ProviderPaymentID, "hold", res.Hold != nil)
		if res.Hold != nil {
			return p.settle(ctx, heldOutcome(res.ProviderPaymentID, *res.Hold, "reconciled: the provider has authorized the hold"))
		}
		return p.settle(ctx, PaymentResult{Status: chargeonce.AttemptSucceeded, ProviderPaymentID: res.ProviderPaymentID, Message: "reconciled: the provider has the charge"})
	case activities.FoundFailedOnly:
		p.log.Info("reconciled order: provider has only failed charges, attempt declined")
		return p.settle(ctx, PaymentResult{Status: chargeonce.AttemptDeclined, Message: "reconciled: the provider declined the charge"})
	}
	if age := startedAt.Sub(p.intent.CreatedAt); age >= p.timing.AbandonAfter {
		p.log.Warn("reconciled order: no charge by the abandon deadline, attempt abandoned", "age", age)
		return p.settle(ctx, PaymentResult{Status: chargeonce.AttemptAbandoned, Message: "no charge at the provider after " + age.String() + "; the attempt is abandoned"})
	}
	p.log.Info("no charge at the provider yet, will check again", "checks", p.status.Checks)
	return nil
}

// nextRun carries the lookups' count, the last error and a card token that
// a charge update brought.
func (p *payment) nextRun() (any, any) {
	next := p.in
	next.Carried = &CarriedState{Checks: p.status.Checks, LastError: p.status.LastError}
	if p.token != p.intent.CardToken {
		next.Carried.CardToken = p.token
	}
	return PaymentWorkflow, next
}

// validateCharge refuses, before anything is written to the history, a
// charge update that must not charge this payment: another card, or no card
// when the payment has none.
func (p *payment) validateCharge(req ChargeRequest) error {
	if req.CardToken != "" && !p.sameCard(req) {
		return errors.New("charge: the card differs from the card of this payment; paying with another card needs a new payment attempt")
	}
	if req.CardToken == "" && p.token == "" {
		return errors.New("charge: this payment has no card token yet; send the card token")
	}
	return nil
}

// sameCard reports whether the card of req is the intent's card: by the
// keyed hashes the caller computed, or, for an intent started before hashes
// were keyed, by the legacy hash of the token.
func (p *payment) sameCard(req ChargeRequest) bool {
	if p.intent.CardHashKeyed {
		return req.CardHash == p.intent.CardHash
	}
	return chargeonce.LegacyCardHash(req.CardToken) == p.intent.CardHash
}

// handleCharge answers a customer paying (again) with this payment's card.
// During the charge phase it waits for the phase's outcome; during
// reconciliation it re-sends the charge at once with the same key; after
// completion it returns the outcome.
func (p *payment) handleCharge(ctx workflow.Context, req ChargeRequest) (PaymentResult, error) {
	if p.token == "" {
		p.token = req.CardToken
	}
	if p.status.Phase == PhaseCharging {
		if err := workflow.Await(ctx, func() bool { return p.status.Phase != PhaseCharging }); err != nil {
			return PaymentResult{}, err
		}
		return p.outcome(), nil
	}
	if p.final != nil {
		return *p.final, nil
	}
	if call := p.resend; call != nil {
		if err := workflow.Await(ctx, func() bool { return call.done }); err != nil {
			return PaymentResult{}, err
		}
		return call.result, nil
	}
	call := &resendCall{}
	p.resend = call
	defer func() {
		call.done = true
		p.resend = nil
	}()
	if err := p.mu.Lock(ctx); err != nil {
		return PaymentResult{}, err
	}
	defer p.mu.Unlock()
	if p.final == nil {
		p.log.Info("resending payment with the stored key")
		r, recorded, err := p.charge(ctx)
		switch {
		case err != nil:
			return PaymentResult{}, err
		case recorded:
			p.complete(ctx, r)
		// A resend that processed nothing tells nothing: an earlier
		// request of the attempt may have been processed.
		case r.Status.Terminal() && r.Status != chargeonce.AttemptNotProcessed:
			if err := p.settle(ctx, r); err != nil {
				return PaymentResult{}, err
			}
		default:
			p.log.Warn("payment outcome still unknown after the resend, reconciliation goes on", "error", p.status.LastError)
		}
	}
	call.result = p.outcome()
	return call.result, nil
}

// outcome is the settled outcome, or an open result while it is unknown.
func (p *payment) outcome() PaymentResult {
	if p.final != nil {
		return *p.final
	}
	return unknownOutcome()
}

// searchAttributes are the payment's search attributes as they stand, which
// let the Web UI find payments by order, status, reference and charge. The
// order is fixed, so that the upsert command is the same on every replay.
func (p *payment) searchAttributes() []searchAttribute {
	r := p.outcome()
	attrs := []searchAttribute{
		{SearchAttrOrderID, strconv.FormatInt(p.intent.OrderID, 10)},
		{SearchAttrPaymentStatus, string(r.Status)},
		{SearchAttrMerchantReference, p.intent.MerchantReference},
	}
	if r.ProviderPaymentID != "" {
		attrs = append(attrs, searchAttribute{SearchAttrProviderPaymentID, r.ProviderPaymentID})
	}
	return attrs
}
