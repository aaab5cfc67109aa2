package wire

import "time"

// RefundRequest is the body of POST /api/orders/{id}/refunds, and of POST
// /api/charges/{id}/refunds. Amount is a decimal string in the charge's
// currency; absent means all that the charge can still refund.
type RefundRequest struct {
	Amount *string `json:"amount,omitempty"`
	Reason string  `json:"reason"`
}

// Refund is a refund as the API shows it: in an order, and as the answer of
// a refund request (200 when its outcome is known, 202 while pending).
type Refund struct {
	// ID is the refund's own idempotency key, sent to the provider.
	ID string `json:"id"`
	// OrderID is absent for a charge that belongs to no order.
	OrderID  int64  `json:"orderId,omitempty"`
	ChargeID string `json:"chargeId"`
	// Status is one of chargeonce's refund statuses.
	Status            string `json:"status"`
	Amount            string `json:"amount"`
	Currency          string `json:"currency"`
	Reason            string `json:"reason"`
	Origin            string `json:"origin"`
	MerchantReference string `json:"merchantReference"`
	// Provider names the provider the refund is sent to.
	Provider         string     `json:"provider"`
	ProviderRefundID *string    `json:"providerRefundId"`
	FailureReason    *string    `json:"failureReason"`
	CreatedAt        time.Time  `json:"createdAt"`
	SettledAt        *time.Time `json:"settledAt"`
	// Requests are the refund requests that went on the wire, oldest
	// first; shown on the refund answer, not in an order.
	Requests []ProviderRequest `json:"requests,omitempty"`
}
