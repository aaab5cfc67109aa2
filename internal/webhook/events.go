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
