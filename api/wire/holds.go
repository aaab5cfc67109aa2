package wire

import "time"

// CaptureRequest is the body of POST /api/orders/{id}/capture, which may
// also be empty. Amount is a decimal string in the hold's currency; absent
// captures the whole hold.
type CaptureRequest struct {
	Amount *string `json:"amount,omitempty"`
}

// VoidRequest is the body of POST /api/orders/{id}/void: an empty JSON
// object, or no body at all. A void releases the whole hold.
type VoidRequest struct{}

// Move is a capture or a void of an order's hold as the API shows it: in
// the order, and as the answer of a capture or void request (200 when its
// outcome is known, 202 while pending).
type Move struct {
	// ID is the move's own idempotency key, sent to the provider.
	ID string `json:"id"`
	// Kind is capture or void.
	Kind    string `json:"kind"`
	OrderID int64  `json:"orderId"`
	// Status is one of chargeonce's move statuses.
	Status string `json:"status"`
	// Amount is what a capture takes, or what a void releases.
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
	// DeclineCode says, for a declined move, how the provider found the
	// hold: already captured, voided or expired.
	DeclineCode       *string `json:"declineCode"`
	Origin            string  `json:"origin"`
	MerchantReference string  `json:"merchantReference"`
	// Provider names the provider that holds the hold.
	Provider  string     `json:"provider"`
	CreatedAt time.Time  `json:"createdAt"`
	SettledAt *time.Time `json:"settledAt"`
	// Requests are the move's requests that went on the wire, oldest
	// first; shown on the move's own answers, not in an order.
	Requests []ProviderRequest `json:"requests,omitempty"`
}

// Hold is the authorization that a manual capture's checkout left on the
// card, as an order shows it.
type Hold struct {
	// Status is one of chargeonce's hold statuses.
	Status   string `json:"status"`
	ChargeID string `json:"chargeId"`
	// Authorized is the amount held; Captured what a capture took of it.
	Authorized   string    `json:"authorized"`
	Captured     string    `json:"captured"`
	Currency     string    `json:"currency"`
	AuthorizedAt time.Time `json:"authorizedAt"`
	// CaptureBefore is when the provider said the hold expires; null when
	// it did not say.
	CaptureBefore *time.Time `json:"captureBefore"`
	// Deadline is when chargeonce ends a hold still authorized, by
	// OnDeadline: void or capture.
	Deadline   time.Time  `json:"deadline"`
	OnDeadline string     `json:"onDeadline"`
	EndedAt    *time.Time `json:"endedAt"`
}
