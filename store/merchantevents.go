package store

import (
	"context"
	"errors"
	"time"

	"chargeonce"
)

// Merchant events: the outbox of signed events to the merchant's
// endpoints. SettleAttempt, SettleRefund, RecordLateCharge,
// SettleAuthorization, SettleMove and EndHold write an
// event, numbered in its order's sequence, and one delivery of it to each
// enabled endpoint that wants its type, in the transaction that makes the
// change it reports. The worker's dispatcher (package notify) claims the
// deliveries that are due and records each try.

// ErrEndpointDisabled is returned when a replay names a disabled endpoint.
var ErrEndpointDisabled = errors.New("store: the endpoint is disabled")

// MerchantEvent is one event of the outbox, as committed with its change.
type MerchantEvent struct {
	// ID is evt_ and 32 hex digits.
	ID   string
	Type chargeonce.EventType
	// OrderID and Sequence place the event in its order's events, numbered
	// from 1 without gaps.
	OrderID  int64
	Sequence int64
	// OrderStatus is the order's status once the change was committed.
	OrderStatus chargeonce.OrderStatus
	// AttemptKey is set on payment.* events, RefundKey on refund.* events.
	AttemptKey string
	RefundKey  string
	// Amount is the attempt's or the refund's amount.
	Amount chargeonce.Money
	// ProviderID is the provider's payment or refund id, when known.
	ProviderID string
	// ChargeID is the charge a refund returns money from.
	ChargeID string
	// Status is the attempt's or the refund's status the event reports.
	Status string
	// FailureReason is a failed refund's reason.
	FailureReason string
	// Provider names the provider of the event's attempt or refund, and
	// RoutedBy why a payment.* event's attempt went to it
	// (Attempt.RoutedBy; empty when the attempt does not say).
	Provider  string
	RoutedBy  string
	CreatedAt time.Time
}

// Endpoint is a merchant's endpoint for events.
type Endpoint struct {
	// ID is we_ and 32 hex digits.
	ID  string
	URL string
	// EventTypes are the types it wants; empty means all.
	EventTypes  []chargeonce.EventType
	Description string
	// Secret signs every event; PreviousSecret signs too, beside it, until
	// PreviousSecretExpiresAt.
	Secret                  string
	PreviousSecret          string
	PreviousSecretExpiresAt *time.Time
	// DisabledAt is set on a disabled endpoint, with DisabledReason.
	DisabledAt     *time.Time
	DisabledReason string
	// FailingSince is when the oldest delivery to the endpoint that is
	// still undelivered first failed; nil when none is.
	FailingSince *time.Time
	CreatedAt    time.Time
}

// NewEndpoint is what CreateEndpoint stores.
type NewEndpoint struct {
	ID          string
	URL         string
	EventTypes  []chargeonce.EventType
	Description string
	Secret      string
	Now         time.Time
}

// DueDelivery is a delivery that ClaimDeliveries leased to one dispatcher:
// the event and where to send it.
type DueDelivery struct {
	// ID names the delivery (one event at one endpoint).
	ID       int64
	Event    MerchantEvent
	Endpoint Endpoint
	// Attempt is the number of this try, from 1.
	Attempt int
	// FailedInRound is how many tries failed since the event was queued at
	// the endpoint or last replayed there: the retry schedule's step.
	FailedInRound int
	// FirstFailedAt is when its first try failed; nil before any did.
	FirstFailedAt *time.Time
}

// DeliveryResult is what became of one try of a delivery.
type DeliveryResult string

// The results of a try.
const (
	// DeliveryDelivered: the endpoint answered 2xx.
	DeliveryDelivered DeliveryResult = "delivered"
	// DeliveryFailed: no answer or another status; it is tried again at
	// NextAttemptAt.
	DeliveryFailed DeliveryResult = "failed"
	// DeliveryGone: the endpoint answered 410, so it is disabled, and none
	// of its deliveries is tried again.
	DeliveryGone DeliveryResult = "gone"
	// DeliveryGivenUp: the retry schedule ran out; a replay sends it again.
	DeliveryGivenUp DeliveryResult = "given_up"
)

// DeliveryFailure is the class of a failed try, as the delivery log shows
// it. It never holds the transport's own error, which names addresses,
// ports and resolvers of the service's network: the worker's log keeps
// that.
type DeliveryFailure string

// The classes of failure.
const (
	// FailureHTTPStatus: the endpoint answered with a status other than 2xx.
	FailureHTTPStatus DeliveryFailure = "http_status"
	// FailureDNS: the endpoint's host name did not resolve.
	FailureDNS DeliveryFailure = "dns_failure"
	// FailureConnectionRefused: nothing listened at the endpoint's address.
	FailureConnectionRefused DeliveryFailure = "connection_refused"
	// FailureTimeout: no answer arrived in time.
	FailureTimeout DeliveryFailure = "timeout"
	// FailureTLS: the TLS handshake failed, as on a certificate that does
	// not verify.
	FailureTLS DeliveryFailure = "tls_failure"
	// FailureRefusedAddress: the endpoint's address is not one that events
	// are sent to (an internal one), so nothing was sent.
	FailureRefusedAddress DeliveryFailure = "refused_address"
	// FailureConnection: the connection failed in another way, as when it
	// closed before the answer.
	FailureConnection DeliveryFailure = "connection_failed"
	// FailureNotSent: the event could not be sent from the endpoint's
	// record, as when its secret is unreadable.
	FailureNotSent DeliveryFailure = "not_sent"
)

// DeliveryFailures lists every class of failure.
func DeliveryFailures() []DeliveryFailure {
	return []DeliveryFailure{FailureHTTPStatus, FailureDNS, FailureConnectionRefused, FailureTimeout, FailureTLS,
		FailureRefusedAddress, FailureConnection, FailureNotSent}
}

// DeliveryAttempt is one try of a delivery, as the delivery log keeps it.
type DeliveryAttempt struct {
	DeliveryID int64
	EventID    string
	EventType  chargeonce.EventType
	EndpointID string
	Attempt    int
	At         time.Time
	Result     DeliveryResult
	// HTTPStatus is 0 when no answer arrived.
	HTTPStatus int
	// Failure is why a try that was not delivered failed: FailureHTTPStatus
	// for an answer, another class when no answer arrived; empty for a
	// delivered try.
	Failure  DeliveryFailure
	Duration time.Duration
	// NextAttemptAt is when a failed delivery is tried again.
	NextAttemptAt time.Time
}

// DeliveryStats is what the metrics show of the outbox.
type DeliveryStats struct {
	// Pending is how many deliveries wait to be delivered.
	Pending int
	// OldestPendingAt is the creation time of the oldest of them; zero
	// when none waits.
	OldestPendingAt time.Time
	// FailingSince is, per enabled endpoint that has an undelivered
	// delivery that failed, when the oldest of them first failed.
	FailingSince map[string]time.Time
}

// EventStore keeps the merchant's endpoints, the event outbox and its
// delivery log.
type EventStore interface {
	// CreateEndpoint stores a new enabled endpoint.
	CreateEndpoint(ctx context.Context, n NewEndpoint) (Endpoint, error)
	// Endpoints returns every endpoint, oldest first.
	Endpoints(ctx context.Context) ([]Endpoint, error)
	// GetEndpoint returns one endpoint, or ErrNotFound.
	GetEndpoint(ctx context.Context, id string) (Endpoint, error)
	// SetEndpointDisabled disables the endpoint with reason (disabled true)
	// or enables it again, and returns it; ErrNotFound when it does not
	// exist. While disabled, its deliveries are not tried and new events
	// are not queued for it.
	SetEndpointDisabled(ctx context.Context, id string, disabled bool, reason string, at time.Time) (Endpoint, error)
	// RotateEndpointSecret makes secret the endpoint's signing secret and
	// keeps the current one signing until previousUntil (not at all when it
	// is not after now).
	RotateEndpointSecret(ctx context.Context, id, secret string, previousUntil, now time.Time) (Endpoint, error)
	// OrderEvents returns the order's events by sequence.
	OrderEvents(ctx context.Context, orderID int64) ([]MerchantEvent, error)
	// GetEvent returns one event, or ErrNotFound.
	GetEvent(ctx context.Context, id string) (MerchantEvent, error)
	// ClaimDeliveries leases at most limit deliveries that are due at now,
	// to enabled endpoints, until now+lease, oldest first, so that of
	// several dispatchers only one tries each.
	ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]DueDelivery, error)
	// RecordDeliveryAttempt appends a to the delivery log and moves its
	// delivery on: delivered, due again at a.NextAttemptAt, given up, or,
	// for gone, disables the endpoint.
	RecordDeliveryAttempt(ctx context.Context, a DeliveryAttempt) error
	// Deliveries returns the newest limit tries at the endpoint, newest
	// first.
	Deliveries(ctx context.Context, endpointID string, limit int) ([]DeliveryAttempt, error)
	// ReplayEvent makes the event due at the endpoint at now, whatever
	// became of its earlier deliveries there (queuing it if it never was);
	// ErrNotFound when either does not exist, ErrEndpointDisabled when the
	// endpoint is disabled.
	ReplayEvent(ctx context.Context, eventID, endpointID string, now time.Time) error
	// DeliveryStats reads what the metrics show.
	DeliveryStats(ctx context.Context) (DeliveryStats, error)
}
