package activities

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/temporal"

	"chargeonce"
	"chargeonce/provider"
	"chargeonce/store"
)

// ChargeInput is the input of Charge.
type ChargeInput struct {
	// Intent is the payment to charge; its Key goes out as the
	// Idempotency-Key and its CardToken as the source.
	Intent chargeonce.PaymentIntent `json:"Intent"`
	// Settle makes Charge settle the attempt in the database as soon as the
	// provider answers definitely, as RecordOutcome would, so that the
	// workflow need not run RecordOutcome after it (ChargeResult.Recorded).
	Settle bool `json:"Settle,omitempty"`
	// HoldMargin is how long before the hold's expiry its deadline comes,
	// for an intent of a manual capture (chargeonce.HoldDeadline).
	HoldMargin time.Duration `json:"HoldMargin,omitempty"`
}

// ChargeResult is a definite answer from the provider.
type ChargeResult struct {
	// Status is AttemptSucceeded or AttemptDeclined.
	Status chargeonce.AttemptStatus `json:"Status"`
	// ProviderPaymentID is the provider's charge id (a declined card
	// leaves a failed charge, so it is set on a decline too, except for a
	// card the provider refused as a payment method, which leaves none).
	ProviderPaymentID string `json:"ProviderPaymentID"`
	// DeclineCode is the provider's reason on a decline.
	DeclineCode string `json:"DeclineCode"`
	// ProviderTrouble reports that a decline is the provider's own trouble
	// (provider.Result.ProviderTrouble), not the card's: nothing was
	// charged, and another provider may take the payment. It is omitted
	// when false, so that the results in the histories of earlier code read
	// the same.
	ProviderTrouble bool `json:"ProviderTrouble,omitempty"`
	// Replayed reports that the provider answered from its idempotency store.
	Replayed bool `json:"Replayed"`
	// Recorded reports that Charge settled the attempt in the database
	// (ChargeInput.Settle). When it could not, the answer stands all the
	// same and Recorded is false: the workflow records it.
	Recorded bool `json:"Recorded,omitempty"`
	// Hold holds the terms of the hold that a manual capture's approval
	// authorized; nil for a charge that took the money.
	Hold *HoldTerms `json:"Hold,omitempty"`
}

// maxDeadlineMargin bounds how much of an attempt's time is kept back from
// the HTTP request for recording its outcome.
const maxDeadlineMargin = 250 * time.Millisecond

// requestLogTimeout bounds the write of how a request ended to its key's
// request log. The write has a deadline of its own rather than the
// activity's: a request that timed out has used the activity's time up, a
// busy database may need more than the margin kept back for it, and every
// request sent is listed all the same.
const requestLogTimeout = 5 * time.Second

// requestContext bounds the HTTP request a little before the activity's own
// deadline. A provider that does not answer in time is then observed here,
// logged and written to the request log as a timeout, and reported as a
// retryable ProviderTimeout; otherwise Temporal would cut the activity off
// at its deadline with nothing written down.
func requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin := min(time.Until(deadline)/5, maxDeadlineMargin)
	return context.WithDeadline(ctx, deadline.Add(-margin))
}

// requestOutcomeLogs says how each outcome that is not a result is told in
// the log. A contract violation or an invalid request is told at
// debug only: the workflow, which marks the attempt failed, writes the one
// error line and the alert, with this activity's error text.
var requestOutcomeLogs = map[provider.Outcome]struct {
	level slog.Level
	msg   string
}{
	provider.InFlight:          {slog.LevelInfo, "provider says the request is still in flight"},
	provider.RateLimited:       {slog.LevelWarn, "provider rate limited the request"},
	provider.Unavailable:       {slog.LevelWarn, "provider answered with a server error"},
	provider.TransportError:    {slog.LevelWarn, "connection to the provider failed"},
	provider.Timeout:           {slog.LevelWarn, "no answer from the provider in time, the charge may exist"},
	provider.BreakerOpen:       {slog.LevelWarn, "circuit breaker open, request not sent"},
	provider.ContractViolation: {slog.LevelDebug, "provider refused the request as a contract violation, a human must look"},
	provider.InvalidRequest:    {slog.LevelDebug, "provider refused the request as invalid, a human must look"},
}

// Charge sends the intent's charge to the provider: exactly one HTTP request
// per activity attempt, always with the intent's key, so that every retry is
// the same request and the provider charges at most once.
//
// An approval or a decline is a result. Every other outcome is an error: a
// retryable one when asking again with the same key may tell more (in
// flight, rate limited, unavailable, transport error, timeout, breaker open),
// a non-retryable one when it cannot (contract violation, invalid request, no
// card token). A retryable outcome that certainly processed nothing has the
// type ErrTypeNotProcessed whatever its cause; the others keep the type of
// their outcome. A 400 processed nothing too, but it is a bug on our side,
// and stays ErrTypeInvalidRequest, for a human.
func (a *Activities) Charge(ctx context.Context, in ChargeInput) (ChargeResult, error) {
	intent := in.Intent
	// No "attempt": each request is an activity execution of its own, whose
	// attempt is always 1; exchanged adds the request's number instead.
	log := a.logger().With("key", intent.Key, "order", intent.OrderID)
	if intent.CardToken == "" {
		log.Error("payment intent has no card token, nothing sent")
		return ChargeResult{}, nonRetryable(ErrTypeNoCardToken, "payment intent "+intent.Key+" has no card token; nothing can be sent until a customer retry brings it")
	}

	port, err := a.port(intent.Provider)
	if err != nil {
		log.Error("payment intent names a provider this worker does not reach, nothing sent", "provider", intent.Provider, "error", err)
		return ChargeResult{}, err
	}

	reqCtx, cancel := requestContext(ctx)
	defer cancel()
	listed, err := a.listRequest(ctx, log, chargeonce.OperationCharge, intent.Key)
	if err != nil {
		return ChargeResult{}, err
	}
	res := port.Charge(reqCtx, provider.ChargeRequestOf(intent))
	a.Metrics.request(a.providerName(intent.Provider), chargeonce.OperationCharge, res.Exchange)
	log = a.exchanged(ctx, log, listed, res.Exchange)

	var result ChargeResult
	switch res.Class() {
	case provider.ClassApproved:
		result = ChargeResult{Status: chargeonce.AttemptSucceeded, ProviderPaymentID: res.ChargeID, Replayed: res.Replayed}
		if intent.Capture.Manual() {
			result.Hold = a.authorized(ctx, log, port, res.Charge, in.HoldMargin)
		}
		log.Info("payment approved by provider", "charge", res.ChargeID, "hold", result.Hold != nil)
	case provider.ClassDeclined:
		msg := "card declined"
		if res.ProviderTrouble {
			msg = "declined for the provider's own trouble, not the card's"
		}
		log.Info(msg, "charge", res.ChargeID, "decline_code", res.DeclineCode, "provider_trouble", res.ProviderTrouble)
		result = ChargeResult{Status: chargeonce.AttemptDeclined, ProviderPaymentID: res.ChargeID, DeclineCode: res.DeclineCode, ProviderTrouble: res.ProviderTrouble, Replayed: res.Replayed}
	default:
		return ChargeResult{}, requestError(ctx, log, listed, res.Exchange)
	}
	if in.Settle {
		result.Recorded = a.settleAnswer(ctx, log, intent.Key, result)
	}
	return result, nil
}

// settleAnswer settles the attempt with the provider's definite answer and
// reports whether it did. A failure is logged and otherwise ignored: the
// answer is known, and turning it into an error would send the request
// again; the workflow records the answer instead.
func (a *Activities) settleAnswer(ctx context.Context, log *slog.Logger, key string, result ChargeResult) bool {
	in := RecordOutcomeInput{Key: key, Status: result.Status, ProviderPaymentID: result.ProviderPaymentID, Hold: result.Hold}
	if _, err := a.recordOutcome(ctx, log, in); err != nil {
		log.Warn("could not settle the attempt with the provider's answer; the workflow records it", "error", err)
		return false
	}
	return true
}

// listedRequest is a request listed in its key's request log before it
// goes out.
type listedRequest struct {
	requests store.RequestLog
	store.LoggedRequest
}

// listRequest lists a request under key in the request log of op's intents
// before it goes out. Its error is the activity's when the request cannot
// be listed: nothing is sent then, yet the outcome is not known to be
// nothing, since without the log an earlier request under the key that
// went out unanswered cannot be ruled out.
func (a *Activities) listRequest(ctx context.Context, log *slog.Logger, op chargeonce.Operation, key string) (listedRequest, error) {
	requests, err := a.Store.Requests(op)
	if err == nil {
		var lr store.LoggedRequest
		lr, err = requests.Begin(ctx, key, a.now())
		if err == nil {
			return listedRequest{requests, lr}, nil
		}
	}
	log.Warn("could not list the request in the request log, nothing sent", "error", err)
	return listedRequest{}, applicationError("not sent: the request could not be listed in the request log, which alone can rule out an earlier request under the key that went out unanswered: "+err.Error(),
		ErrTypeRequestLogUnavailable, temporal.ApplicationErrorOptions{})
}

// exchanged writes how the listed request ended to its key's request log,
// or withdraws it when nothing went on the wire, and tells a replay; it
// returns log with the exchange's attributes, for the lines that tell how
// the request ended: among them "request", the request's number in the
// log, which the API's timeline (and the starter) shows it under.
func (a *Activities) exchanged(ctx context.Context, log *slog.Logger, listed listedRequest, ex provider.Exchange) *slog.Logger {
	attrs := []any{"status", ex.StatusCode, "outcome", string(ex.Outcome), "duration", ex.Duration}
	// A failure to write the log is logged and otherwise ignored: the
	// exchange has happened and its outcome is known, and turning a known
	// answer into an error would make Temporal retry the request, which
	// only replays the same answer. The request stays listed as
	// unanswered, which can only make a later outcome unknown rather than
	// nothing. The worker log keeps the exchange either way.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestLogTimeout)
	defer cancel()
	if !ex.Sent {
		if err := listed.requests.Withdraw(ctx, listed.LoggedRequest); err != nil {
			log.Warn("could not take a request that was not sent out of the request log", "error", err)
		}
		return log.With(attrs...)
	}
	err := listed.requests.End(ctx, listed.LoggedRequest, chargeonce.ProviderRequest{
		Key:        listed.Key,
		At:         listed.At,
		StatusCode: ex.StatusCode,
		Outcome:    string(ex.Outcome),
		Replayed:   ex.Replayed,
		Duration:   ex.Duration,
	})
	if err != nil {
		log.Warn("could not write the provider request log", "error", err)
	}
	log = log.With(append([]any{"request", listed.N}, attrs...)...)
	if ex.Replayed {
		log.Info("provider replayed the stored response for the key")
	}
	return log
}

// requestError is the error of a listed request that brought no result, a
// charge or a refund alike: it tells the outcome in the log, and returns
// exchangeError, unless the request processed nothing but an earlier one
// under the key went out unanswered, or the log that would tell cannot be
// read: the outcome is unknown then, whatever this request's was.
func requestError(ctx context.Context, log *slog.Logger, listed listedRequest, ex provider.Exchange) error {
	entry, ok := requestOutcomeLogs[ex.Outcome]
	if !ok {
		entry = requestOutcomeLogs[provider.ContractViolation]
	}
	log.Log(ctx, entry.level, entry.msg, "detail", ex.Detail, "retry_after", ex.RetryAfter, "not_processed", ex.NotProcessed())
	msg := entry.msg + ": " + describe(ex.Outcome, ex.Detail)
	if ex.Class() != provider.ClassNotProcessed {
		return exchangeError(ex, msg)
	}
	unanswered, err := listed.requests.Unanswered(ctx, listed.LoggedRequest)
	switch {
	case err != nil:
		log.Warn("could not read the request log; the request processed nothing, but an earlier one may have", "error", err)
		return applicationError(msg+"; the request was not processed, but the request log could not be read to rule out an earlier request under the key that went out unanswered: "+err.Error(),
			ErrTypeRequestLogUnavailable, temporal.ApplicationErrorOptions{NextRetryDelay: ex.RetryAfter})
	case unanswered > 0:
		log.Warn("the request processed nothing, but an earlier one under the key went out and was never answered: it may have been processed", "unanswered", unanswered)
		return applicationError(msg+"; the request was not processed, but an earlier request under the key went out unanswered and may have been", ErrTypeEarlierRequestUnanswered,
			temporal.ApplicationErrorOptions{NextRetryDelay: ex.RetryAfter})
	}
	return exchangeError(ex, msg)
}

// exchangeError is the application error, with the text msg, of an
// exchange that brought no result, typed by its class: ErrTypeNotProcessed
// for ClassNotProcessed, whatever the outcome, so that the workflow can
// tell that nothing was charged or refunded; the outcome's own type, as a
// lookup's, for ClassUnknown (retryable) and ClassOurBug (not retryable).
func exchangeError(ex provider.Exchange, msg string) error {
	if ex.Class() == provider.ClassNotProcessed {
		return applicationError(msg+"; the request was not processed", ErrTypeNotProcessed,
			temporal.ApplicationErrorOptions{NextRetryDelay: ex.RetryAfter})
	}
	return outcomeError(ex.Outcome, ex.RetryAfter, msg)
}

// describe is the error text of an outcome: what the provider said, or what
// happened on the wire.
func describe(outcome provider.Outcome, detail string) string {
	if detail != "" {
		return string(outcome) + " (" + detail + ")"
	}
	return string(outcome)
}
