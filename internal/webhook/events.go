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
