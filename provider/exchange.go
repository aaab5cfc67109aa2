package provider

import "time"

// Exchange is how one request that may create or change something at the
// provider, a charge, a refund, a capture or a void, ended on the wire:
// what every such request has, whatever it asked for. An adapter fills it
// once per request, from the HTTP exchange or from the lack of one, the
// same way for every endpoint; the endpoint's own result (Result,
// RefundResult, CaptureResult, VoidResult) embeds it.
type Exchange struct {
	// Outcome is how the exchange was read; callers decide on it, through
	// Class, alone.
	Outcome Outcome
	// StatusCode is the HTTP status, or 0 when no response arrived.
	StatusCode int
	// Replayed reports that the provider answered from its idempotency
	// store. It is for logs and metrics only: a replayed answer means
	// exactly what the first one meant.
	Replayed bool
	// Sent is false when nothing went on the wire (the breaker was open, the
	// context had ended, the request was invalid, the connection was
	// refused): such a request cannot have processed anything. When true,
	// the request may have reached the provider.
	Sent bool
	// Refused is set by the adapter when the provider's answer is one its
	// dialect documents as processing nothing and storing nothing under the
	// key, such as a 429 from a rate limiter in front of the idempotency
	// layer. Which answers qualify differs between providers.
	Refused bool
	// Duration is how long the exchange took, 0 when nothing was sent.
	Duration time.Duration
	// RetryAfter is the provider's Retry-After, 0 when absent or unreadable,
	// and at most MaxRetryAfter.
	RetryAfter time.Duration
	// Detail is the problem detail or the transport error text, for logs.
	Detail string
}

// NotProcessed reports whether the provider certainly did not process the
// request, so that no charge or refund can exist for it: nothing was sent,
// or the provider refused it before processing (Refused). Anything else may
// hide one: a timeout, a connection lost after the request was written, a
// request still in flight, a gateway error.
func (e Exchange) NotProcessed() bool {
	return !e.Sent || e.Refused
}

// Class is what a caller must do about an exchange: the one reading of
// Outcome, Sent and Refused that every operation shares.
type Class string

// The classes of an exchange.
const (
	// ClassApproved: the provider did what was asked (Approved).
	ClassApproved Class = "approved"
	// ClassDeclined: the provider refused what was asked, for a reason of
	// the card or the charge (Declined). A result, not an error.
	ClassDeclined Class = "declined"
	// ClassNotProcessed: a retryable outcome of a request the provider
	// certainly did not process (NotProcessed): nothing exists for it, and
	// the same key may be sent again, after RetryAfter.
	ClassNotProcessed Class = "not_processed"
	// ClassUnknown: a retryable outcome of a request the provider may have
	// processed (in flight, a timeout, a gateway error, a lost
	// connection): only the same key sent again, or a lookup, tells.
	ClassUnknown Class = "unknown"
	// ClassOurBug: the exchange broke the contract (ContractViolation,
	// InvalidRequest, or an outcome such a request never has). No retry
	// can fix it, even one that was never sent: a human must look.
	ClassOurBug Class = "our_bug"
)

// Class reads the exchange as what a caller must do about it. A result
// (Approved, Declined) stands whatever else the exchange says; a
// non-retryable outcome is a bug even when nothing was sent; only then does
// NotProcessed tell the two kinds of retry apart.
func (e Exchange) Class() Class {
	switch {
	case e.Outcome == Approved:
		return ClassApproved
	case e.Outcome == Declined:
		return ClassDeclined
	case !e.Outcome.Retryable():
		return ClassOurBug
	case e.NotProcessed():
		return ClassNotProcessed
	}
	return ClassUnknown
}
