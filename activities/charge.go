package activities

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/temporal"

	"chargeonce"
	"chargeonce/provider"
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
	// Replayed reports that the provider answered from its idempotency store.
	Replayed bool `json:"Replayed"`
	// Recorded reports that Charge settled the attempt in the database
	// (ChargeInput.Settle). When it could not, the answer stands all the
	// same and Recorded is false: the workflow records it.
	Recorded bool `json:"Recorded,omitempty"`
}

// maxDeadlineMargin bounds how much of an attempt's time is kept back from
// the HTTP request for recording its outcome.
const maxDeadlineMargin = 250 * time.Millisecond

// requestLogTimeout bounds the write of a sent request to its key's request
// log. The write has a deadline of its own rather than the activity's: a
// request that timed out has used the activity's time up, a busy database
// may need more than the margin kept back for it, and every request sent is
// listed all the same.
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
	at := a.now()
	res := port.Charge(reqCtx, provider.ChargeRequestOf(intent))
	a.Metrics.request(a.providerName(intent.Provider), chargeonce.OperationCharge, res.Exchange)
	log = a.exchanged(ctx, log, a.Store.LogProviderRequest, intent.Key, at, res.Exchange)

	var result ChargeResult
	switch res.Class() {
	case provider.ClassApproved:
		log.Info("payment approved by provider", "charge", res.ChargeID)
		result = ChargeResult{Status: chargeonce.AttemptSucceeded, ProviderPaymentID: res.ChargeID, Replayed: res.Replayed}
	case provider.ClassDeclined:
		log.Info("card declined", "charge", res.ChargeID, "decline_code", res.DeclineCode)
		result = ChargeResult{Status: chargeonce.AttemptDeclined, ProviderPaymentID: res.ChargeID, DeclineCode: res.DeclineCode, Replayed: res.Replayed}
	default:
		return ChargeResult{}, requestError(ctx, log, res.Exchange)
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
	in := RecordOutcomeInput{Key: key, Status: result.Status, ProviderPaymentID: result.ProviderPaymentID}
	if _, err := a.recordOutcome(ctx, log, in); err != nil {
		log.Warn("could not settle the attempt with the provider's answer; the workflow records it", "error", err)
		return false
	}
	return true
}

// exchanged writes a sent request to its key's request log with logRequest
// and tells a replay; it returns log with the exchange's attributes, for
// the lines that tell how the request ended: among them "request", the
// request's number in the log, which the API's timeline (and the starter)
// shows it under.
func (a *Activities) exchanged(ctx context.Context, log *slog.Logger, logRequest func(context.Context, chargeonce.ProviderRequest) (int, error), key string, at time.Time, ex provider.Exchange) *slog.Logger {
	attrs := []any{"status", ex.StatusCode, "outcome", string(ex.Outcome), "duration", ex.Duration}
	if ex.Sent {
		r := chargeonce.ProviderRequest{
			Key:        key,
			At:         at,
			StatusCode: ex.StatusCode,
			Outcome:    string(ex.Outcome),
			Replayed:   ex.Replayed,
			Duration:   ex.Duration,
		}
		// A failure to write the log is logged and otherwise ignored: the
		// exchange has happened and its outcome is known, and turning a
		// known answer into an error would make Temporal retry the
		// request, which only replays the same answer while the timeline
		// stays as incomplete as before. The worker log keeps the exchange
		// either way.
		n, err := writeRequestLog(ctx, logRequest, r)
		if err != nil {
			log.Warn("could not write the provider request log", "error", err)
		} else {
			attrs = append([]any{"request", n}, attrs...)
		}
	}
	log = log.With(attrs...)
	if ex.Replayed {
		log.Info("provider replayed the stored response for the key")
	}
	return log
}

// writeRequestLog writes r with logRequest under a context of its own,
// bounded by requestLogTimeout, which keeps ctx's values but not its
// deadline or cancellation.
func writeRequestLog(ctx context.Context, logRequest func(context.Context, chargeonce.ProviderRequest) (int, error), r chargeonce.ProviderRequest) (int, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestLogTimeout)
	defer cancel()
	return logRequest(ctx, r)
}

// requestError is the error of a request that brought no result, a charge
// or a refund alike: it tells the outcome in the log, and returns
// exchangeError.
func requestError(ctx context.Context, log *slog.Logger, ex provider.Exchange) error {
	entry, ok := requestOutcomeLogs[ex.Outcome]
	if !ok {
		entry = requestOutcomeLogs[provider.ContractViolation]
	}
	log.Log(ctx, entry.level, entry.msg, "detail", ex.Detail, "retry_after", ex.RetryAfter, "not_processed", ex.NotProcessed())
	return exchangeError(ex, entry.msg+": "+describe(ex.Outcome, ex.Detail))
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
