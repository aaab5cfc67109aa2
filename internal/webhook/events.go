package webhook

// The event types of the provider contract
// (docs/provider-http.md#events-webhooks): the fake provider sends them when
// a charge finishes, and the checkout API accepts no others.
const (
	// EventChargeSucceeded: the charge was approved.
	EventChargeSucceeded = "charge.succeeded"
	// EventChargeFailed: the charge was declined.
	EventChargeFailed = "charge.failed"
)

// The event types of holds: the provider sends them when a charge sent as
// a hold is authorized, and when its capture, its void or its expiry ends
// it. Their data is the charge, as for charge.succeeded.
const (
	// EventChargeAuthorized: the hold was authorized.
	EventChargeAuthorized = "charge.authorized"
	// EventChargeCaptured: a capture took the hold's money.
	EventChargeCaptured = "charge.captured"
	// EventChargeVoided: a void released the hold.
	EventChargeVoided = "charge.voided"
	// EventChargeExpired: the hold expired.
	EventChargeExpired = "charge.expired"
)

// HoldEnded reports whether an event of type t says that a hold ended.
func HoldEnded(t string) bool {
	return t == EventChargeCaptured || t == EventChargeVoided || t == EventChargeExpired
}

// The refund event types: the provider sends them when a refund finishes,
// and when one that had succeeded fails later. Their data is the refund,
// with its id, charge, status and merchant_reference.
const (
	// EventRefundSucceeded: the refund returned the money.
	EventRefundSucceeded = "refund.succeeded"
	// EventRefundFailed: the provider refused the refund, or a refund that
	// had succeeded failed later.
	EventRefundFailed = "refund.failed"
)
