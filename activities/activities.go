// Package activities holds the side effects of the payment and refund
// workflows: the charge and refund requests to the provider, the lookups of
// a charge or a refund by merchant reference, and the settlement of the
// attempt or the refund in the merchant's database.
//
// Every method runs as a Temporal activity. Outcomes that the workflow must
// tell apart are returned as application errors with the explicit types
// below, never as Go error types, so that the workflow's retry policy and its
// branches do not change when code is renamed.
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

// Error types of the activities' application errors. The retry policies of
// the workflow name them in NonRetryableErrorTypes, and the workflow branches
// on them with errors.As and ApplicationError.Type.
const (
	// ErrTypeInFlight: the provider is still processing an earlier request
	// with the same key (409). Retryable.
	ErrTypeInFlight = "InFlight"
	// ErrTypeRateLimited: the provider refused the request for now (429).
	// Retryable, after its Retry-After.
	ErrTypeRateLimited = "RateLimited"
	// ErrTypeUnavailable: the provider answered with a server error. Retryable.
	ErrTypeUnavailable = "ProviderUnavailable"
	// ErrTypeTransport: the connection failed; the request may have arrived.
	// Retryable.
	ErrTypeTransport = "ProviderTransportError"
	// ErrTypeTimeout: no answer came before the attempt's deadline; the
	// charge may exist. Retryable.
	ErrTypeTimeout = "ProviderTimeout"
	// ErrTypeBreakerOpen: the circuit breaker is open and nothing was sent.
	// Retryable.
	ErrTypeBreakerOpen = "ProviderBreakerOpen"
	// ErrTypeNotProcessed: the request certainly was not processed, so it
	// created no charge or refund (provider.ClassNotProcessed): nothing
	// was sent (the breaker was open, the connection was refused), or the
	// provider answered 429, 500 or 503. Charge and Refund report every
	// retryable outcome of that kind with this type, whatever its cause, so
	// that the workflow can tell that an attempt charged nothing, or a
	// refund refunded nothing. Retryable, after the provider's Retry-After
	// when it sent one. (The name is older than refunds.)
	ErrTypeNotProcessed = "ChargeNotProcessed"
	// ErrTypeEarlierRequestUnanswered: the request processed nothing, but
	// an earlier request under the key went out and no answer to it was
	// ever written, as when a worker stopped while it was in flight: that
	// one may have been processed, so the outcome is unknown. Retryable.
	ErrTypeEarlierRequestUnanswered = "EarlierRequestUnanswered"
	// ErrTypeRequestLogUnavailable: the request log could not be written
	// before the request went out, which was then not sent, or could not be
	// read after it processed nothing. Either way the log cannot rule out
	// an earlier request under the key that went out unanswered, so the
	// outcome is unknown. Retryable.
	ErrTypeRequestLogUnavailable = "RequestLogUnavailable"
	// ErrTypeContractViolation: the provider and we disagree about the
	// contract (a 422 for a reused key, a malformed answer). Not retryable:
	// a human must look.
	ErrTypeContractViolation = "ContractViolation"
	// ErrTypeInvalidRequest: the request or the activity input is malformed.
	// Not retryable.
	ErrTypeInvalidRequest = "InvalidRequest"
	// ErrTypeChargeMismatch: the provider holds a succeeded charge for the
	// attempt's reference whose amount or currency differs from the attempt.
	// Not retryable; the error's details hold the provider's charge id.
	ErrTypeChargeMismatch = "ChargeMismatch"
	// ErrTypeNoCardToken: the intent has no card token, so nothing can be
	// sent. Not retryable.
	ErrTypeNoCardToken = "NoCardToken"
	// ErrTypeAttemptNotFound: the attempt to settle is not in the database.
	// Not retryable.
	ErrTypeAttemptNotFound = "AttemptNotFound"
	// ErrTypeRefundMismatch: the provider holds a refund under the refund's
	// merchant reference whose amount or currency differs from the refund.
	// Not retryable; the error's details hold the provider's refund id.
	ErrTypeRefundMismatch = "RefundMismatch"
	// ErrTypeRefundNotFound: the refund to settle is not in the database.
	// Not retryable.
	ErrTypeRefundNotFound = "RefundNotFound"
)

// outcomeErrorTypes maps each provider outcome that is not a charge result to
// the error type the activities report it with.
var outcomeErrorTypes = map[provider.Outcome]string{
	provider.InFlight:          ErrTypeInFlight,
	provider.RateLimited:       ErrTypeRateLimited,
	provider.Unavailable:       ErrTypeUnavailable,
	provider.TransportError:    ErrTypeTransport,
	provider.Timeout:           ErrTypeTimeout,
	provider.BreakerOpen:       ErrTypeBreakerOpen,
	provider.ContractViolation: ErrTypeContractViolation,
	provider.InvalidRequest:    ErrTypeInvalidRequest,
}

// outcomeError turns an outcome into an application error whose type and
// retryability follow the outcome. An outcome without a type of its own (a
// 404 where none is possible, an outcome this code does not know) is a
// contract violation. retryAfter, when positive, replaces the retry
// policy's interval for the next attempt.
func outcomeError(outcome provider.Outcome, retryAfter time.Duration, msg string) error {
	errType, ok := outcomeErrorTypes[outcome]
	if !ok {
		errType = ErrTypeContractViolation
	}
	return applicationError(msg, errType, temporal.ApplicationErrorOptions{
		NonRetryable:   !ok || !outcome.Retryable(),
		NextRetryDelay: retryAfter,
	})
}

func nonRetryable(errType, msg string, details ...any) error {
	return applicationError(msg, errType, temporal.ApplicationErrorOptions{
		NonRetryable: true,
		Details:      details,
	})
}

// applicationError is the error of an outcome that the activity has told in
// the log, or that the workflow tells when it acts on it. It is benign to the
// SDK, which would otherwise log every failed attempt once more, at error
// level ("Activity error."): a 503 or a 422 would read as two events.
func applicationError(msg, errType string, o temporal.ApplicationErrorOptions) error {
	o.Category = temporal.ApplicationErrorCategoryBenign
	return temporal.NewApplicationErrorWithOptions(msg, errType, o)
}

// Store is the part of the merchant's database the activities use; store.Store
// implements it.
type Store interface {
	// Requests returns the request log of op's intents, in which every
	// request is listed before it goes out.
	Requests(op chargeonce.Operation) (store.RequestLog, error)
	// MarkChecked records when the attempt was last looked up at the provider.
	MarkChecked(ctx context.Context, key string, at time.Time) error
	// SettleAttempt moves an open attempt to a terminal status, and reports
	// whether it did and which charge the order is paid by.
	SettleAttempt(ctx context.Context, key string, status chargeonce.AttemptStatus, providerPaymentID string, at time.Time) (store.Settlement, error)
	// GetAttempt returns one attempt.
	GetAttempt(ctx context.Context, key string) (store.Attempt, error)
	// GetOrder returns the order and its attempts.
	GetOrder(ctx context.Context, id int64) (store.Order, []store.Attempt, error)
	// RecordLateCharge repairs a succeeded charge of an attempt that did not
	// pay its order.
	RecordLateCharge(ctx context.Context, c store.LateCharge) (chargeonce.LateChargeDecision, *store.Refund, error)
	// GetRefund returns one refund.
	GetRefund(ctx context.Context, key string) (store.Refund, error)
	// MarkRefundChecked records when the refund was last looked up at the
	// provider.
	MarkRefundChecked(ctx context.Context, key string, at time.Time) error
	// SettleRefund moves a pending refund to a settled status, or a
	// succeeded one to failed, and reports false for any other move.
	SettleRefund(ctx context.Context, key string, status chargeonce.RefundStatus, providerRefundID, failureReason string, at time.Time) (bool, error)
	// SettleAuthorization settles an open attempt with the hold it
	// authorized, and reports whether it did.
	SettleAuthorization(ctx context.Context, attemptKey string, h store.NewHold) (store.Settlement, error)
	// GetHold returns the hold an attempt authorized.
	GetHold(ctx context.Context, attemptKey string) (store.Hold, error)
	// StartMove stores a capture or void of a hold, unless another move
	// decides the hold already.
	StartMove(ctx context.Context, n store.NewMove) (store.Move, store.MoveDecision, error)
	// OrderMoves returns the moves of an order.
	OrderMoves(ctx context.Context, orderID int64) ([]store.Move, error)
	// MarkMoveWorkflowStarted takes a move out of the outbox.
	MarkMoveWorkflowStarted(ctx context.Context, key string) error
	// MarkMoveChecked records when the move was last looked up.
	MarkMoveChecked(ctx context.Context, key string, at time.Time) error
	// SettleMove settles a pending move, and ends its hold with it.
	SettleMove(ctx context.Context, key string, status chargeonce.MoveStatus, declineCode string, ended chargeonce.HoldStatus, captured int64, at time.Time) (bool, error)
	// EndHold ends a hold that is still authorized.
	EndHold(ctx context.Context, attemptKey string, status chargeonce.HoldStatus, captured int64, at time.Time) (bool, error)
}

// Activities holds the dependencies of the payment activities. Register it
// with a worker as a struct: each exported method becomes an activity.
type Activities struct {
	// Providers are the card providers, each behind breakers of its own:
	// every charge, refund and lookup goes to the one its intent or input
	// names.
	Providers provider.Registry
	// Store is the merchant's database.
	Store Store
	// Now reads the clock for the request log and settlement times; nil
	// means time.Now.
	Now func() time.Time
	// Logger receives the story of each payment; nil means slog.Default().
	Logger *slog.Logger
	// Metrics counts outcomes; nil counts nothing.
	Metrics *Metrics
	// Temporal tells the payment workflow that keeps a hold when a move of
	// it settled (RecordMove); nil tells nothing.
	Temporal Signaler
}

// port returns the port of the provider named name, "" for the default.
// An unknown name is a non-retryable InvalidRequest: no retry makes this
// worker reach a provider it was not configured with, and nothing is sent.
func (a *Activities) port(name string) (provider.Port, error) {
	p, err := a.Providers.Get(name)
	if err != nil {
		return nil, nonRetryable(ErrTypeInvalidRequest, err.Error())
	}
	return p, nil
}

// providerName is the name of the provider that name stands for, the
// default provider's for "", as metrics label it.
func (a *Activities) providerName(name string) string {
	if name == "" {
		name, _ = a.Providers.Default()
	}
	return name
}

func (a *Activities) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}
