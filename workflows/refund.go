package workflows

import (
	"errors"
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

// The phases of a refund as the status query reports them, besides
// PhaseReconciling (its outcome is unknown, or the provider still processes
// it, and it is being looked up) and PhaseCompleted.
const (
	// PhaseRefunding: the refund requests of the send phase are going out.
	PhaseRefunding = "refunding"
	// PhaseUnresolved: the refund's outcome was still unknown at its key's
	// retention horizon; the alert refund_unknown was raised, and the
	// refund waits for a refund event or a person (the refund-event
	// signal), without timed lookups.
	PhaseUnresolved = "unresolved"
)

// ErrTypeInvalidRefundInput is the error type of a refund workflow started
// with an input it cannot run: a bug of the starter, which no retry fixes.
const ErrTypeInvalidRefundInput = "InvalidRefundInput"

// RefundInput is the input of RefundWorkflow.
type RefundInput struct {
	// Intent is the refund to send.
	Intent chargeonce.RefundIntent `json:"intent"`
	// Timing is how long to wait for what, as for payments; zero fields
	// take DefaultTiming's values.
	Timing Timing `json:"timing"`
	// Carried is the state handed over by continue-as-new; nil on the first
	// run. A run that carries state never sends.
	Carried *RefundCarried `json:"carried,omitempty"`
}

// RefundCarried is what a refund that is being looked up hands to its next
// run when it continues as new.
type RefundCarried struct {
	// Checks is how many lookups were made.
	Checks int `json:"checks"`
	// LastError is the error of the last failed request or lookup.
	LastError string `json:"lastError,omitempty"`
	// ProviderRefundID is the id of the refund that the provider holds
	// pending; empty when no refund was found.
	ProviderRefundID string `json:"providerRefundId,omitempty"`
	// KeyRetention is the provider's key retention, once read.
	KeyRetention time.Duration `json:"keyRetention,omitempty"`
	// Unresolved is set once the alert refund_unknown was raised.
	Unresolved bool `json:"unresolved,omitempty"`
	// SentBy is when every refund request sent so far had ended; zero
	// when a run before changeRefundResend continued, whose requests had
	// all ended by the refund's CreatedAt+AbandonAfter.
	SentBy time.Time `json:"sentBy,omitzero"`
}

// RefundUpdate is the input of the "refund" update: the caller asking for
// the outcome of the refund it stored under Key. The update may also come
// without it: the workflow ID names the refund already.
type RefundUpdate struct {
	// Key is the refund's key, which must be this workflow's; empty means
	// this workflow's.
	Key string `json:"key,omitempty"`
}

// RefundResult is the outcome of a refund, returned by the workflow and by
// the "refund" update.
type RefundResult struct {
	// Status is the refund's status; RefundPending means the outcome is
	// still unknown, or the provider still processes the refund, and the
	// refund is being looked up at the provider.
	Status chargeonce.RefundStatus `json:"status"`
	// ProviderRefundID is the provider's refund id, when there is one.
	ProviderRefundID string `json:"providerRefundId,omitempty"`
	// FailureReason is the provider's reason for a failed refund.
	FailureReason string `json:"failureReason,omitempty"`
	// Message says what happened, for people.
	Message string `json:"message,omitempty"`
}

// RefundEvent is the payload of the "refund-event" signal: the provider
// reported the refund (by webhook), or a person asks for a lookup. As for
// charges, the signal only makes the workflow look the refund up at once.
type RefundEvent struct {
	// RefundID is the provider's refund id from the event.
	RefundID string `json:"refundId"`
	// Type is the event type, such as refund.failed.
	Type string `json:"type"`
}

// RefundWorkflowID is the ID of the refund workflow of the intent with this
// key: the key itself, as for payments.
func RefundWorkflowID(key string) string {
	return key
}

// RefundWorkflow refunds one refund intent exactly once.
//
// Send phase: the Refund activity sends the refund with the intent's key,
// one activity execution per request, as the payment's charge phase does
// (sendRequests). The provider's answer settles it: succeeded, or failed
// when the provider refused (its code is the failure reason). A refund the
// provider accepted as pending is looked up until it settles. When no
// request can have been processed, the refund settles as not_processed at
// once. Anything else, and a contract violation (alerted), leaves the
// outcome unknown. No request goes out after refundLastSendAt, which the
// key's retention bounds, so none reaches a provider that has forgotten the
// key, and the refund sweep's late start still sends.
//
// Lookups: the refund is looked up by its merchant reference on the lookup
// task queue, on the grid of the payment's lookups (nextLookupBefore), which
// ends at the key's retention horizon (refundHorizon). A lookup that finds
// no refund MinAge or more after every request had ended proves that the
// provider never processed one: the refund is sent again under its key,
// with the same body, while its last send time allows (resendsNow), so that
// a request lost before it reached the provider is finished here, not by a
// person. A refund is never
// abandoned: when the horizon's lookup finds none, it raises
// refund_unknown and waits, without timed lookups, for a refund-event
// signal, from the provider's webhook or from a person, each of which makes
// it look up at once. One the provider holds pending is looked up every
// longest lookup gap after the horizon, until it settles.
//
// The "refund" update waits for the send phase and answers its outcome. The
// workflow returns the settled outcome; it fails only for an input it
// cannot run.
func RefundWorkflow(ctx workflow.Context, in RefundInput) (RefundResult, error) {
	r, err := newRefund(ctx, in)
	if err != nil {
		return RefundResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidRefundInput, nil)
	}
	return run(ctx, r)
}

// refund is the state of one run of RefundWorkflow.
type refund struct {
	operation[RefundResult]
	in     RefundInput
	intent chargeonce.RefundIntent
	// providerRefundID is the id of the refund the provider holds pending.
	providerRefundID string
	// retention is the provider's key retention; 0 until read.
	retention time.Duration
	// horizon is the key's retention horizon, after which a refund still
	// unknown is a person's (refundHorizon); set once retention is read.
	horizon time.Time
	// unresolved is set once refund_unknown was raised.
	unresolved bool
	// sentBy is when every request sent so far had ended; zero while
	// none was sent by this refund's runs, or as RefundCarried.SentBy.
	sentBy time.Time
	// refused is set once the provider refused a request of this run as a
	// contract violation, which a resend would only repeat.
	refused bool
}

func newRefund(ctx workflow.Context, in RefundInput) (*refund, error) {
	op, err := newOperation[RefundResult](ctx, chargeonce.OperationRefund, in.Timing, in.Intent,
		log.With(workflow.GetLogger(ctx), "key", in.Intent.Key, "order", in.Intent.OrderID, "charge", in.Intent.ChargeID), PhaseRefunding)
	if err != nil {
		return nil, err
	}
	r := &refund{operation: op, in: in, intent: in.Intent}
	if c := in.Carried; c != nil {
		r.status = Status{Phase: PhaseReconciling, Checks: c.Checks, LastError: c.LastError}
		r.providerRefundID = c.ProviderRefundID
		r.retention = c.KeyRetention
		r.unresolved = c.Unresolved
		r.sentBy = c.SentBy
		if r.unresolved {
			r.status.Phase = PhaseUnresolved
		}
	}
	return r, nil
}

func (r *refund) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, chargeonce.UpdateRefund, r.handleRefund,
		workflow.UpdateHandlerOptions{Validator: r.validateRefund}); err != nil {
		return fmt.Errorf("register the refund update: %w", err)
	}
	listen(ctx, chargeonce.SignalRefundEvent, func(ev RefundEvent) {
		r.log.Info("refund event, looking the refund up at once", "refund", ev.RefundID, "type", ev.Type)
		r.checkNow = true
	})
	return nil
}

// validateRefund refuses, before anything is written to the history, an
// update meant for another refund: a caller that computed the workflow ID
// from another key.
func (r *refund) validateRefund(req RefundUpdate) error {
	if req.Key != "" && req.Key != r.intent.Key {
		return fmt.Errorf("refund: the update is for refund %q, and this workflow refunds %q", req.Key, r.intent.Key)
	}
	return nil
}

// handleRefund answers the send phase's outcome, waiting for it while the
// requests are going out; later it answers the refund as it stands.
func (r *refund) handleRefund(ctx workflow.Context, _ RefundUpdate) (RefundResult, error) {
	if err := workflow.Await(ctx, func() bool { return r.status.Phase != PhaseRefunding }); err != nil {
		return RefundResult{}, err
	}
	return r.outcome(), nil
}

// changeRefundResend is the workflow.GetVersion change after which a
// refund's last send time comes from its key's retention (refundLastSendAt)
// instead of its payment timing's abandon deadline, and a refund that the
// lookups prove the provider never got is sent again (resendsNow). It is
// asked only where the two differ: a send later than the old last send time
// allowed (CreatedAt + AbandonAfter − SendBudget), or a resend; runs
// recorded without its marker keep the old rule. It retires by the rule of
// PaymentWorkflow's gates, with a refund's bound: a refund runs until the
// horizon of its key's retention, and past it only while it is pending at
// the provider or unresolved, so retire it once Temporal lists no open
// RefundWorkflow started before the change.
const (
	changeRefundResend                  = "refund-resend"
	refundResend       workflow.Version = 1
)

// sendPhase sends the refund when this run starts with it, unless its last
// send time has passed, and settles a definite outcome; an unknown one, or
// one the provider holds pending, moves the refund to lookups. Its error is
// only cancellation.
func (r *refund) sendPhase(ctx workflow.Context) error {
	if r.status.Phase != PhaseRefunding {
		return nil
	}
	defer func() {
		if r.final == nil {
			r.status.Phase = PhaseReconciling
		}
	}()
	lastSend, err := r.lastSendAt(ctx)
	if err != nil {
		return err
	}
	if workflow.Now(ctx).After(lastSend) {
		// The workflow starts this late only from the outbox, for a refund
		// whose first start was lost; a request of an earlier run may
		// exist, so the lookups decide.
		r.status.LastError = "too late to send: the refund's last send time " + formatTime(lastSend) + " has passed; the lookups decide"
		r.log.Warn("not sending: the refund's last send time has passed, the lookups decide", "last_send_at", formatTime(lastSend))
		return nil
	}
	return r.send(ctx)
}

// lastSendAt is the refund's last send time. Until the earliest last send
// time that the key's retention allows, which needs no reading of it, it
// reads nothing; later it reads the provider's key retention
// (refundLastSendAt), or, for a run recorded before changeRefundResend,
// keeps that run's rule. Its error is only cancellation.
func (r *refund) lastSendAt(ctx workflow.Context) (time.Time, error) {
	created := r.intent.CreatedAt
	if earliest := r.timing.refundLastSendAt(created, 0); !workflow.Now(ctx).After(earliest) {
		return earliest, nil
	}
	if workflow.GetVersion(ctx, changeRefundResend, workflow.DefaultVersion, refundResend) == workflow.DefaultVersion {
		return created.Add(r.timing.AbandonAfter - r.timing.SendBudget), nil
	}
	if err := r.readRetention(ctx); err != nil {
		return time.Time{}, err
	}
	return r.timing.refundLastSendAt(created, r.retention), nil
}

// send sends the refund's requests under its key, the same body each time,
// until the provider answers or SendBudget ends, and settles a definite
// outcome; an unknown one, or one the provider holds pending, leaves the
// refund to the lookups. Its error is only cancellation.
func (r *refund) send(ctx workflow.Context) error {
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("Refunding %s of charge %s with key %s: waiting for the provider's answer until %s at the latest.",
		r.intent.Amount, r.intent.ChargeID, r.intent.Key, formatTime(workflow.Now(ctx).Add(r.timing.SendBudget))))
	var res activities.RefundResult
	end, refusal, err := sendRequests(ctx, r.timing, false, "next refund request", &r.status.LastError, func(actx workflow.Context) error {
		return workflow.ExecuteActivity(actx, acts.Refund, activities.RefundInput{Intent: r.intent}).Get(ctx, &res)
	})
	if err != nil {
		return err
	}
	r.sentBy = workflow.Now(ctx)
	switch end {
	case sendAnswered:
		if res.Status == chargeonce.RefundPending {
			r.providerRefundID = res.ProviderRefundID
			r.log.Info("the provider accepted the refund and is processing it; it is looked up until it settles", "refund", res.ProviderRefundID)
			return nil
		}
		return r.settle(ctx, answeredRefund(res.Status, res.ProviderRefundID, res.FailureReason))
	case sendNothingProcessed:
		// Earlier requests, if any, processed nothing either: a resend
		// follows only a lookup that proved it.
		r.log.Warn("the provider processed no refund request: nothing was refunded, the refund is settled not_processed and may be asked for again", "error", r.status.LastError)
		return r.settle(ctx, RefundResult{Status: chargeonce.RefundNotProcessed, Message: "the provider processed none of the refund requests; nothing was refunded"})
	case sendRefused:
		// Unlike a payment, a refused refund is not marked failed: a 422
		// says that the key holds another refund, which may have returned
		// money, and a failed refund would free its amount for another.
		// The lookups find what the provider holds.
		r.refused = true
		r.log.Error("the provider refused the refund request as a contract violation: the refund stays pending and is looked up; a human must look at this key",
			alert.Attr(alert.ContractViolation), "error", refusal.Error())
		return nil
	}
	r.log.Warn("refund outcome unknown, the refund stays pending and is looked up at the provider", "error", r.status.LastError)
	return nil
}

// answeredRefund is the outcome of a refund the provider answered.
func answeredRefund(status chargeonce.RefundStatus, providerRefundID, failureReason string) RefundResult {
	res := RefundResult{Status: status, ProviderRefundID: providerRefundID, FailureReason: failureReason}
	switch status {
	case chargeonce.RefundSucceeded:
		res.Message = "refunded by the provider"
	case chargeonce.RefundFailed:
		res.Message = "the provider did not refund: " + failureReason
	}
	return res
}

// reconcile reads the provider's key retention, which sets the refund's
// horizon, and looks the refund up until it is settled.
func (r *refund) reconcile(ctx workflow.Context) error {
	if r.final != nil {
		return nil
	}
	if err := r.readRetention(ctx); err != nil {
		return err
	}
	r.horizon = r.timing.refundHorizon(r.intent.CreatedAt, r.retention)
	return lookups(ctx, r)
}

// nextLookup is on the grid of the payment's lookups up to the horizon;
// one the provider holds pending is looked up every longest lookup gap
// after it, and an unresolved refund only on an event.
func (r *refund) nextLookup(now time.Time) (time.Time, bool) {
	if r.unresolved {
		return time.Time{}, false
	}
	if r.providerRefundID != "" && !now.Before(r.horizon) {
		return now.Add(r.timing.longestLookupGap()), true
	}
	return r.timing.nextLookupBefore(r.timing.LookupJitter(r.intent.Key), r.intent.CreatedAt, r.horizon, now, r.status.Checks), true
}

func (r *refund) waitingDetails(next time.Time) string {
	if r.unresolved {
		return fmt.Sprintf("Outcome unknown at the key's retention horizon (%s): alert refund_unknown raised. Waiting for a refund event or a person (signal %q); nothing is sent again.",
			chargeonce.Plural(r.status.Checks, "lookup"), chargeonce.SignalRefundEvent)
	}
	if r.providerRefundID != "" {
		return fmt.Sprintf("The provider is processing refund %s: next lookup at %s (%d so far). A refund event acts at once.",
			r.providerRefundID, formatTime(next), r.status.Checks)
	}
	return fmt.Sprintf("Outcome unknown: next provider lookup at %s (%d so far); a person is alerted at %s if the provider still holds no refund. A refund event acts at once.",
		formatTime(next), r.status.Checks, formatTime(r.horizon))
}

// retentionAttempts bounds the reads of the provider's key retention. A
// provider that does not answer them leaves the lower bound that the worker
// guarantees: its key retention exceeds AbandonAfter.
const retentionAttempts = 3

// readRetention reads the provider's key retention once per refund. Its
// error is only cancellation.
func (r *refund) readRetention(ctx workflow.Context) error {
	if r.retention > 0 {
		return nil
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: r.timing.AttemptTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        r.timing.RetryInterval,
			BackoffCoefficient:     2,
			MaximumAttempts:        retentionAttempts,
			NonRetryableErrorTypes: []string{activities.ErrTypeContractViolation},
		},
	})
	var res activities.KeyRetentionResult
	err := workflow.ExecuteActivity(actx, acts.KeyRetention, activities.KeyRetentionInput{Provider: r.intent.Provider}).Get(ctx, &res)
	if temporal.IsCanceledError(err) {
		return err
	}
	if err != nil {
		r.retention = r.timing.AbandonAfter
		r.log.Warn("could not read the provider's key retention; the refund is looked up until its last send instead, the earliest the key may be forgotten", "error", err)
		return nil
	}
	r.retention = res.KeyRetention
	return nil
}

// check looks the refund up once and settles it when the provider's answer
// decides it. A lookup that keeps failing is logged and retried at the next
// check. At or after the horizon, a lookup that finds no refund raises
// refund_unknown, once. Its error is only cancellation.
func (r *refund) check(ctx workflow.Context) error {
	startedAt := workflow.Now(ctx)
	r.status.Checks++
	var res activities.FindRefundResult
	err := workflow.ExecuteActivity(withLookupOptions(ctx, r.timing, r.intent.Provider, activities.ErrTypeRefundMismatch), acts.FindRefund, activities.FindRefundInput{
		Key:               r.intent.Key,
		ChargeID:          r.intent.ChargeID,
		MerchantReference: r.intent.MerchantReference,
		Amount:            r.intent.Amount,
		Provider:          r.intent.Provider,
	}).Get(ctx, &res)
	if temporal.IsCanceledError(err) {
		return err
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeRefundMismatch {
		var refundID string
		if appErr.HasDetails() {
			_ = appErr.Details(&refundID)
		}
		r.log.Error("the provider holds a refund for this refund's reference that does not match its amount; the refund is marked failed and needs a human", alert.Attr(alert.RefundMismatch), "refund", refundID, "error", err)
		return r.settle(ctx, RefundResult{Status: chargeonce.RefundFailed, ProviderRefundID: refundID, FailureReason: "amount_mismatch", Message: "the provider's refund does not match: " + appErr.Message()})
	}
	if err != nil {
		r.status.LastError = err.Error()
		r.log.Warn("provider lookup failed, trying again at the next check", "checks", r.status.Checks, "error", err)
		return nil
	}
	r.status.LastError = ""
	switch res.Found {
	case activities.FoundSucceeded, activities.FoundFailed:
		status := chargeonce.RefundStatus(res.Found)
		r.log.Info("refund reconciled with the provider", "status", res.Found, "refund", res.ProviderRefundID, "failure_reason", res.FailureReason)
		return r.settle(ctx, answeredRefund(status, res.ProviderRefundID, res.FailureReason))
	case activities.FoundPending:
		r.providerRefundID = res.ProviderRefundID
		// A refund found after the alert is followed again by timed
		// lookups, until it settles.
		r.unresolved = false
		r.status.Phase = PhaseReconciling
		r.log.Info("the provider is still processing the refund, will check again", "refund", res.ProviderRefundID, "checks", r.status.Checks)
		return nil
	}
	r.providerRefundID = ""
	if r.resendsNow(ctx, startedAt) {
		return r.resend(ctx)
	}
	if startedAt.Before(r.horizon) || r.unresolved {
		r.log.Info("no refund at the provider yet, will check again", "checks", r.status.Checks)
		return nil
	}
	r.unresolved = true
	r.status.Phase = PhaseUnresolved
	r.status.NextCheckAt = time.Time{}
	r.log.Error("refund outcome still unknown as the provider's retention of its key nears: it is never sent again and stays pending; a person must ask the provider whether it exists, by its merchant reference, then signal the workflow",
		alert.Attr(alert.RefundUnknown), "reference", r.intent.MerchantReference, "amount", r.intent.Amount.String(), "created_at", formatTime(r.intent.CreatedAt),
		"checks", r.status.Checks, "signal", chargeonce.SignalRefundEvent)
	return nil
}

// resendsNow reports whether a lookup started at lookedUp that found no
// refund proves that the provider never processed one, and the refund may
// be sent again now. The lookup must start MinAge or more after every
// request had ended, which is longer than the provider's lookups lag
// behind a refund (the worker checks it against its published limits), so
// no request can still be processing; and the resend must fit before the
// last send time. The lookup grid paces the resends: one per lookup at
// most, backing off as the lookups do. A request refused as a contract
// violation is not sent again: a person looks at the key (its alert).
func (r *refund) resendsNow(ctx workflow.Context, lookedUp time.Time) bool {
	sentBy := r.sentBy
	if sentBy.IsZero() {
		sentBy = r.intent.CreatedAt.Add(r.timing.AbandonAfter)
	}
	if r.refused || lookedUp.Before(sentBy.Add(r.timing.MinAge)) || workflow.Now(ctx).After(r.timing.refundLastSendAt(r.intent.CreatedAt, r.retention)) {
		return false
	}
	return workflow.GetVersion(ctx, changeRefundResend, workflow.DefaultVersion, refundResend) == refundResend
}

// resend sends the refund again, as the send phase did, after a lookup
// proved that the provider holds no refund under its reference. Its error
// is only cancellation.
func (r *refund) resend(ctx workflow.Context) error {
	r.log.Warn("the provider holds no refund under the reference, and no request can still be processing: sending the refund again under its key",
		"checks", r.status.Checks, "sent_by", formatTime(r.sentBy))
	r.status.Phase = PhaseRefunding
	defer func() {
		if r.final == nil {
			r.status.Phase = PhaseReconciling
		}
	}()
	return r.send(ctx)
}

// settle records a settled outcome in the database and completes the
// refund (operation.settle). Its error is only cancellation.
func (r *refund) settle(ctx workflow.Context, res RefundResult) error {
	return r.operation.settle(ctx, res, func(ctx workflow.Context) (bool, error) {
		out, err := record(ctx, r.log, acts.RecordRefundOutcome, activities.RecordRefundOutcomeInput{
			Key:              r.intent.Key,
			Status:           res.Status,
			ProviderRefundID: res.ProviderRefundID,
			FailureReason:    res.FailureReason,
		})
		return out.Changed, err
	})
}

func (res RefundResult) completion() string {
	details := "Completed: " + string(res.Status)
	if res.ProviderRefundID != "" {
		details += ", provider refund " + res.ProviderRefundID
	}
	if res.FailureReason != "" {
		details += ", reason " + res.FailureReason
	}
	return details + "."
}

// nextRun carries the lookups' state: what the provider holds, the key's
// retention, the alert raised, and when the requests had ended.
func (r *refund) nextRun() (any, any) {
	next := r.in
	next.Carried = &RefundCarried{
		Checks:           r.status.Checks,
		LastError:        r.status.LastError,
		ProviderRefundID: r.providerRefundID,
		KeyRetention:     r.retention,
		Unresolved:       r.unresolved,
		SentBy:           r.sentBy,
	}
	return RefundWorkflow, next
}

// outcome is the settled outcome, or a pending result while it is not.
func (r *refund) outcome() RefundResult {
	if r.final != nil {
		return *r.final
	}
	res := RefundResult{Status: chargeonce.RefundPending, ProviderRefundID: r.providerRefundID}
	if r.providerRefundID != "" {
		res.Message = "the provider is processing the refund; it is looked up until it settles"
	} else {
		res.Message = "refund outcome unknown; the refund is being verified with the provider"
	}
	return res
}

// searchAttributes are the refund's search attributes as they stand, those
// of payments where they fit: the order (none for a charge of no order),
// the status, the reference, and the provider's refund id once settled. The
// order is fixed, so that the upsert command is the same on every replay.
func (r *refund) searchAttributes() []searchAttribute {
	res := r.outcome()
	var attrs []searchAttribute
	if r.intent.OrderID > 0 {
		attrs = append(attrs, searchAttribute{SearchAttrOrderID, strconv.FormatInt(r.intent.OrderID, 10)})
	}
	attrs = append(attrs,
		searchAttribute{SearchAttrPaymentStatus, string(res.Status)},
		searchAttribute{SearchAttrMerchantReference, r.intent.MerchantReference},
	)
	if r.final != nil && res.ProviderRefundID != "" {
		attrs = append(attrs, searchAttribute{SearchAttrProviderPaymentID, res.ProviderRefundID})
	}
	return attrs
}
