package provider

import (
	"context"
	"time"

	"chargeonce"
)

// Refunder is what the refund activities need of a card provider; every
// Port is one. An implementation is safe for concurrent use.
type Refunder interface {
	// Refund sends one refund request, exactly one request on the wire or
	// none, and reads the answer. It never fails: everything that can
	// happen is an Outcome in the RefundResult. Approved means the
	// provider accepted the refund (its Refund says whether it succeeded
	// or is still pending there); Declined means the provider refused to
	// refund (a charge refunded already, or one that cannot be refunded),
	// with the reason in DeclineCode.
	Refund(ctx context.Context, req RefundRequest) RefundResult
	// FindRefunds returns every refund the provider holds for the merchant
	// reference of a refund of the charge, oldest first; none is an empty
	// list. Errors are *Error. Providers that cannot search refunds by
	// reference list the charge's refunds and filter them.
	FindRefunds(ctx context.Context, chargeID, merchantReference string) ([]Refund, error)
}

// RefundRequest is one refund to send.
type RefundRequest struct {
	// Key is the refund intent's idempotency key; every retry of the
	// refund sends the same one.
	Key string
	// ChargeID is the provider's id of the charge to refund.
	ChargeID string
	// Amount is in minor units of Currency.
	Amount int64
	// Currency is the ISO 4217 code, such as "TRY".
	Currency string
	// Reason is shown on the provider's dashboard; it may be empty.
	Reason string
	// MerchantReference is how the refund is found again when the outcome
	// of every request was lost.
	MerchantReference string
}

// RefundRequestOf is the refund of a refund intent: the same fields on
// every request under its key.
func RefundRequestOf(r chargeonce.RefundIntent) RefundRequest {
	return RefundRequest{
		Key:               r.Key,
		ChargeID:          r.ChargeID,
		Amount:            r.Amount.Minor,
		Currency:          r.Amount.Currency,
		Reason:            r.Reason,
		MerchantReference: r.MerchantReference,
	}
}

// The statuses of a refund at the provider, after every dialect's own
// (Stripe's requires_action is pending, its canceled is failed).
const (
	RefundPending   = "pending"
	RefundSucceeded = "succeeded"
	RefundFailed    = "failed"
)

// Refund is a refund as the provider holds it.
type Refund struct {
	// ID is the provider's id of the refund, such as "re_000001".
	ID string
	// ChargeID is the charge it returns money from.
	ChargeID string
	// Status is RefundPending, RefundSucceeded or RefundFailed.
	Status string
	// FailureReason says why a failed refund failed; empty otherwise.
	FailureReason string
	// Amount is in minor units of Currency.
	Amount int64
	// Currency is the ISO 4217 code of Amount, in upper case.
	Currency string
	// MerchantReference is the reference sent with the refund.
	MerchantReference string
	// Created is when the provider created the refund.
	Created time.Time
}

// RefundResult is how one refund request ended.
type RefundResult struct {
	// Exchange is how the request ended on the wire, and what it means.
	Exchange
	// Refund is the provider's refund, on Approved; on Declined when the
	// provider stored the refusal as a failed refund.
	Refund *Refund
	// DeclineCode is the provider's reason on Declined, such as
	// "charge_already_refunded".
	DeclineCode string
}
