package provider

import (
	"context"
	"slices"

	"chargeonce"
)

// Holder is what payments that authorize now and capture later need of a
// card provider; every Port is one. A hold is a charge sent with
// ChargeRequest.Hold: the provider authorizes the amount on the card
// (StatusAuthorized) and takes nothing until it is captured, in full or in
// part, or releases it when the hold is voided or expires. An
// implementation is safe for concurrent use.
type Holder interface {
	// Capture takes money from a hold under the capture's own key, exactly
	// one request on the wire or none. It never fails: everything that can
	// happen is an Outcome in the CaptureResult, read as a charge's is.
	// Approved carries the charge as it is after the capture; Declined
	// means the provider refused it, with one of the hold decline codes.
	Capture(ctx context.Context, req CaptureRequest) CaptureResult
	// Void releases a hold under the void's own key, exactly one request on
	// the wire or none. It never fails, as Capture; Approved carries the
	// voided charge.
	Void(ctx context.Context, req VoidRequest) VoidResult
	// GetCharge reads the charge id as the provider holds it now. Errors
	// are *Error; a charge the provider does not have is NotFound.
	GetCharge(ctx context.Context, id string) (Charge, error)
}

// CaptureRequest is one capture of a hold to send.
type CaptureRequest struct {
	// Key is the capture's own idempotency key; every retry of the capture
	// sends the same one.
	Key string
	// ChargeID is the provider's id of the hold.
	ChargeID string
	// Amount is what to take, in minor units of Currency: at most the
	// authorized amount. Taking less releases the rest.
	Amount int64
	// Currency is the hold's ISO 4217 code, such as "TRY".
	Currency string
}

// VoidRequest is one release of a hold to send.
type VoidRequest struct {
	// Key is the void's own idempotency key; every retry of the void sends
	// the same one.
	Key string
	// ChargeID is the provider's id of the hold.
	ChargeID string
}

// CaptureResult is how one capture request ended.
type CaptureResult struct {
	// Exchange is how the request ended on the wire, and what it means.
	Exchange
	// Charge is the charge after the capture, on Approved.
	Charge *Charge
	// DeclineCode is one of the hold decline codes on Declined.
	DeclineCode string
}

// VoidResult is how one void request ended.
type VoidResult struct {
	// Exchange is how the request ended on the wire, and what it means.
	Exchange
	// Charge is the voided charge, on Approved.
	Charge *Charge
	// DeclineCode is one of the hold decline codes on Declined.
	DeclineCode string
}

// The decline codes of a capture or a void the provider refused, whatever
// its dialect calls them: the state of the charge, not our request, is why.
const (
	// DeclineHoldExpired: the hold expired before it was captured or voided.
	DeclineHoldExpired = "hold_expired"
	// DeclineHoldVoided: the hold was voided already.
	DeclineHoldVoided = "hold_voided"
	// DeclineHoldCaptured: the hold was captured already.
	DeclineHoldCaptured = "hold_captured"
	// DeclineAmountTooLarge: the capture asked for more than the hold.
	DeclineAmountTooLarge = "amount_too_large"
	// DeclineNotAHold: the charge was never a hold (it was captured at
	// once, or it failed).
	DeclineNotAHold = "not_a_hold"
)

// holdDeclines are the decline codes a capture or void may carry.
var holdDeclines = []string{DeclineHoldExpired, DeclineHoldVoided, DeclineHoldCaptured, DeclineAmountTooLarge, DeclineNotAHold}

// IsHoldDecline reports whether code is one of the hold decline codes, for
// an adapter whose provider names the refusal itself.
func IsHoldDecline(code string) bool {
	return slices.Contains(holdDeclines, code)
}

// HoldDecline is the decline code of a capture or void refused because of
// the state the charge is in: its Status, and held, whether it was created
// as a hold. It is for an adapter whose provider says only that the charge
// is in the wrong state, and shows the charge. A charge still authorized
// has no such refusal: its code is the empty string.
func HoldDecline(status string, held bool) string {
	switch {
	case status == StatusAuthorized:
		return ""
	case !held:
		return DeclineNotAHold
	case status == StatusVoided:
		return DeclineHoldVoided
	case status == StatusExpired:
		return DeclineHoldExpired
	case status == StatusSucceeded:
		return DeclineHoldCaptured
	}
	return DeclineNotAHold
}

// HoldStatusOf is the status that a refusal of a capture or void with this
// decline code proves the hold is in, and false for a code that proves
// none (DeclineAmountTooLarge, DeclineNotAHold, or a code the port does
// not know).
func HoldStatusOf(code string) (chargeonce.HoldStatus, bool) {
	switch code {
	case DeclineHoldExpired:
		return chargeonce.HoldExpired, true
	case DeclineHoldVoided:
		return chargeonce.HoldVoided, true
	case DeclineHoldCaptured:
		return chargeonce.HoldCaptured, true
	}
	return "", false
}
