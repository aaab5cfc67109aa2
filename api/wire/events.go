package wire

import "time"

// Event is the body of a signed event sent to a merchant's endpoint
// (Standard Webhooks: its ID is also the webhook-id header), and an entry of
// GET /api/orders/{id}/events.
type Event struct {
	// ID is the event's own id, evt_ and 32 hex digits; a receiver that
	// sees it twice drops the second.
	ID string `json:"id"`
	// Type is one of chargeonce's event types (payment.succeeded, …).
	Type string `json:"type"`
	// Timestamp is when the change was committed.
	Timestamp time.Time `json:"timestamp"`
	Data      EventData `json:"data"`
}

// EventData is what changed.
type EventData struct {
	OrderID int64 `json:"orderId"`
	// Sequence numbers the order's events from 1, without gaps, in the
	// order their changes were committed: a receiver that holds event n
	// and gets n-1 late keeps n.
	Sequence int64 `json:"sequence"`
	// OrderStatus is the order's status once the change was committed.
	OrderStatus string `json:"orderStatus"`
	// Payment is set on payment.* events.
	Payment *EventPayment `json:"payment,omitempty"`
	// Refund is set on refund.* events.
	Refund *EventRefund `json:"refund,omitempty"`
}

// EventPayment is the payment attempt that a payment.* event reports.
type EventPayment struct {
	IdempotencyKey    string  `json:"idempotencyKey"`
	Status            string  `json:"status"`
	Amount            string  `json:"amount"`
	Currency          string  `json:"currency"`
	ProviderPaymentID *string `json:"providerPaymentId"`
	// Provider names the provider the attempt went to, and RoutedBy why
	// (Attempt.RoutedBy).
	Provider string  `json:"provider"`
	RoutedBy *string `json:"routedBy"`
}

// EventRefund is the refund that a refund.* event reports.
type EventRefund struct {
	ID               string  `json:"id"`
	ChargeID         string  `json:"chargeId"`
	Status           string  `json:"status"`
	Amount           string  `json:"amount"`
	Currency         string  `json:"currency"`
	ProviderRefundID *string `json:"providerRefundId"`
	FailureReason    *string `json:"failureReason"`
	// Provider names the provider the refund went to: the one that took
	// the charge.
	Provider string `json:"provider"`
}

// EventList is the body of GET /api/orders/{id}/events: the order's events,
// by sequence.
type EventList struct {
	Events []Event `json:"events"`
}

// CreateEndpointRequest is the body of POST /api/webhook-endpoints.
type CreateEndpointRequest struct {
	// URL is where events are POSTed: https, or http to a loopback host.
	URL string `json:"url"`
	// EventTypes are the event types sent to the endpoint; empty means all.
	// An empty list is left out, since the API refuses null.
	EventTypes  []string `json:"eventTypes,omitempty"`
	Description string   `json:"description"`
}

// Endpoint is a merchant's endpoint as the API shows it.
type Endpoint struct {
	// ID is we_ and 32 hex digits.
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	EventTypes  []string `json:"eventTypes"`
	Description string   `json:"description"`
	// Status is enabled or disabled.
	Status string `json:"status"`
	// DisabledReason says why a disabled endpoint is: "disabled through
	// the API", or the 410 Gone that the endpoint answered.
	DisabledReason *string `json:"disabledReason"`
	// FailingSince is when the endpoint's oldest delivery still undelivered
	// first failed; null while every delivery goes through.
	FailingSince *time.Time `json:"failingSince"`
	CreatedAt    time.Time  `json:"createdAt"`
	// Secret is the signing secret (whsec_…), shown only in the answer of
	// the request that created or rotated it.
	Secret string `json:"secret,omitempty"`
	// PreviousSecretExpiresAt is, after a rotation, when the previous
	// secret stops signing; events are signed with both until then.
	PreviousSecretExpiresAt *time.Time `json:"previousSecretExpiresAt"`
}

// EndpointList is the body of GET /api/webhook-endpoints.
type EndpointList struct {
	Endpoints []Endpoint `json:"endpoints"`
}

// EndpointStateRequest is the body of POST
// /api/webhook-endpoints/{id}/disable and …/enable: an empty object, since
// every state-changing route takes a JSON body.
type EndpointStateRequest struct{}

// RotateSecretRequest is the body of POST
// /api/webhook-endpoints/{id}/rotate-secret.
type RotateSecretRequest struct {
	// KeepPreviousFor is how long the previous secret still signs, as a Go
	// duration ("24h"); empty means 24h, "0s" retires it at once.
	KeepPreviousFor string `json:"keepPreviousFor"`
}

// Delivery is one attempt to deliver one event to one endpoint.
type Delivery struct {
	EventID    string `json:"eventId"`
	EventType  string `json:"eventType"`
	EndpointID string `json:"endpointId"`
	// Attempt numbers the tries of this event at this endpoint from 1.
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	// Result is delivered (a 2xx), failed (to be tried again), gone (a 410:
	// the endpoint was disabled) or given_up (the retry schedule ran out).
	Result string `json:"result"`
	// HTTPStatus is the endpoint's status, null when no answer arrived.
	HTTPStatus *int `json:"httpStatus"`
	// Failure is the class of failure of a try that was not delivered
	// (store.DeliveryFailures): http_status for an answer other than
	// 2xx, or why no answer arrived; null for a delivered try. It never
	// names an address: the worker's log has the detail.
	Failure    *string `json:"failure"`
	DurationMS int64   `json:"durationMs"`
}

// DeliveryList is the body of GET /api/webhook-endpoints/{id}/deliveries:
// the newest deliveries first.
type DeliveryList struct {
	Deliveries []Delivery `json:"deliveries"`
}

// ReplayRequest is the body of POST /api/events/{id}/replay: the event is
// sent again to the endpoint, whatever became of its earlier deliveries.
type ReplayRequest struct {
	EndpointID string `json:"endpointId"`
}

// ReplayAnswer is the 202 answer of POST /api/events/{id}/replay.
type ReplayAnswer struct {
	EventID    string `json:"eventId"`
	EndpointID string `json:"endpointId"`
	// NextAttemptAt is when the worker sends it: now, or at once after.
	NextAttemptAt time.Time `json:"nextAttemptAt"`
}
