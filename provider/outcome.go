package provider

import (
	"fmt"
	"time"
)

// Outcome is how one exchange with the provider was read. It is the only
// thing callers branch on: an HTTP status alone does not say whether a card
// was charged, and a transport error does not say whether the request arrived.
type Outcome string

// The outcomes of an exchange with the provider.
const (
	// Approved: the provider holds a succeeded charge for the key, matching
	// what was sent.
	Approved Outcome = "approved"
	// Declined: the provider declined the card, or refused it as a payment
	// method it cannot charge (DeclineInvalidPaymentMethod). This is a
	// result, not an error: the customer's card, not our request, is what
	// failed, and retrying the same key only gives the same answer. A
	// declined card leaves a failed charge (ChargeID); a refused payment
	// method leaves none.
	Declined Outcome = "declined"
	// InFlight: the provider is still processing an earlier request with the
	// same key (409). The charge may yet succeed or fail, so the outcome is
	// unknown; asking again with the same key later returns the result.
	InFlight Outcome = "in_flight"
	// ContractViolation: the provider and this client disagree about the
	// contract. The key reused with another body (the draft's 422, Stripe's
	// 400 idempotency_error) is a bug on our side; a 2xx whose charge does
	// not match what was sent, an unreadable body or an unexpected status
	// means the provider broke the contract. Either way a retry cannot fix
	// it and a human must look.
	ContractViolation Outcome = "contract_violation"
	// InvalidRequest: the request was refused as malformed (400), or was
	// found malformed here and never sent. Retrying the same request cannot
	// succeed.
	InvalidRequest Outcome = "invalid_request"
	// RateLimited: the provider refused the request without processing it
	// (429). Retrying after RetryAfter is safe.
	RateLimited Outcome = "rate_limited"
	// Unavailable: the provider answered with a server error (500, 502, 503,
	// 504). Whether anything was processed is the dialect's to say
	// (Exchange.Refused); a gateway error may hide a request that did arrive,
	// so the caller retries with the same key.
	Unavailable Outcome = "unavailable"
	// TransportError: the connection failed (refused, reset, closed without
	// an answer). The request may or may not have been processed.
	TransportError Outcome = "transport_error"
	// Timeout: no complete answer arrived before the deadline, or the caller
	// gave up. The provider keeps processing a request it received, so the
	// card may have been charged: the outcome is unknown.
	Timeout Outcome = "timeout"
	// BreakerOpen: the circuit breaker refused the request after repeated
	// provider failures. Nothing was sent, so nothing became ambiguous.
	BreakerOpen Outcome = "breaker_open"
	// NotFound: a lookup asked for something the provider does not have (404).
	NotFound Outcome = "not_found"
)

// DeclineInvalidPaymentMethod is the decline code of a card that the
// provider refused as a payment method it cannot charge: a token it does not
// know, or a card it does not accept. Every adapter reports such a refusal
// as Declined with this code, whatever its provider calls it, so that the
// customer is told that this card cannot be used.
const DeclineInvalidPaymentMethod = "invalid_payment_method"

// Retryable reports whether sending the same request again, with the same
// key, may give a different answer. Every retryable outcome is safe to retry
// because the key makes the provider process a charge at most once.
func (o Outcome) Retryable() bool {
	switch o {
	case InFlight, RateLimited, Unavailable, TransportError, Timeout, BreakerOpen:
		return true
	}
	return false
}

// Error is the error of a lookup (FindCharges, Limits). Its Outcome
// tells a retryable failure from a permanent one:
//
//	var perr *provider.Error
//	if errors.As(err, &perr) && perr.Outcome.Retryable() { ... }
type Error struct {
	// Op names the lookup, such as "find charges".
	Op string
	// Outcome classifies the failure.
	Outcome Outcome
	// StatusCode is the HTTP status, or 0 when no response arrived.
	StatusCode int
	// RetryAfter is the provider's Retry-After, or 0 when it sent none.
	RetryAfter time.Duration
	// Detail is the problem detail or the transport error text.
	Detail string
}

// Error describes the failure for logs.
func (e *Error) Error() string {
	msg := "provider: " + e.Op + ": " + string(e.Outcome)
	if e.StatusCode != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.StatusCode)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}
