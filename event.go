package chargeonce

import (
	"crypto/rand"
	"encoding/hex"
)

// EventType names a signed event that chargeonce sends to the merchant's
// endpoints when a payment attempt, a hold or a refund reaches an outcome. An
// event is written in the same database transaction as the change it
// reports, so a change is never committed without its event.
type EventType string

// The event types. Each is sent once per change; a receiver orders what
// arrives out of order by the event's per-order sequence number.
const (
	// EventPaymentSucceeded: an attempt's charge went through and the
	// order is paid (also when a late charge is adopted).
	EventPaymentSucceeded EventType = "payment.succeeded"
	// EventPaymentDeclined: the provider declined the card; nothing was
	// charged, and the order may be paid with another card.
	EventPaymentDeclined EventType = "payment.declined"
	// EventPaymentAbandoned: the attempt's outcome stayed unknown past its
	// deadline; a charge found later is adopted or refunded.
	EventPaymentAbandoned EventType = "payment.abandoned"
	// EventPaymentNotProcessed: no request of the attempt can have been
	// processed, so nothing was charged.
	EventPaymentNotProcessed EventType = "payment.not_processed"
	// EventPaymentAuthorized: a manual capture's hold was authorized, and
	// the order waits for a capture or a void.
	EventPaymentAuthorized EventType = "payment.authorized"
	// EventPaymentCaptured: a capture took the hold's money, all or part
	// of it; the rest was released.
	EventPaymentCaptured EventType = "payment.captured"
	// EventPaymentVoided: a void released the hold; nothing was taken.
	EventPaymentVoided EventType = "payment.voided"
	// EventPaymentAuthorizationExpired: the hold expired at the provider;
	// nothing was taken.
	EventPaymentAuthorizationExpired EventType = "payment.authorization_expired"
	// EventRefundSucceeded: the money went back to the card.
	EventRefundSucceeded EventType = "refund.succeeded"
	// EventRefundFailed: the provider refused the refund, or failed it
	// after it had succeeded.
	EventRefundFailed EventType = "refund.failed"
	// EventRefundNotProcessed: no request of the refund can have been
	// processed, so nothing was refunded.
	EventRefundNotProcessed EventType = "refund.not_processed"
)

// EventTypes returns every event type, in the order the docs list them.
func EventTypes() []EventType {
	return []EventType{
		EventPaymentSucceeded, EventPaymentDeclined, EventPaymentAbandoned, EventPaymentNotProcessed,
		EventPaymentAuthorized, EventPaymentCaptured, EventPaymentVoided, EventPaymentAuthorizationExpired,
		EventRefundSucceeded, EventRefundFailed, EventRefundNotProcessed,
	}
}

// HoldEvent is the event of a hold in status s: authorized, or how it
// ended.
func HoldEvent(s HoldStatus) EventType {
	switch s {
	case HoldCaptured:
		return EventPaymentCaptured
	case HoldVoided:
		return EventPaymentVoided
	case HoldExpired:
		return EventPaymentAuthorizationExpired
	}
	return EventPaymentAuthorized
}

// Valid reports whether t is one of the event types.
func (t EventType) Valid() bool {
	for _, known := range EventTypes() {
		if t == known {
			return true
		}
	}
	return false
}

// EndpointIDPrefix starts every endpoint's id: we_ and 32 hex digits.
const EndpointIDPrefix = "we_"

// NewEndpointID returns a fresh random endpoint id.
func NewEndpointID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return EndpointIDPrefix + hex.EncodeToString(b)
}
