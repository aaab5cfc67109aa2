// Package provider is the port through which payments reach a card
// provider: a charge under an idempotency key read as a typed Outcome, a
// lookup of the charges of a merchant reference, a refund of a charge under
// its own key and the lookup of its refunds (Refunder), the capture or void
// of a hold under its own key and the reading of a charge by its id
// (Holder), and the limits the provider publishes. The activities depend on
// Port alone.
//
// Adapters live in packages of their own, one per provider dialect:
// provider/ietf speaks the IETF draft's contract (docs/provider-http.md),
// provider/stripe speaks Stripe's PaymentIntents API. Each reads every
// answer of its provider, or the lack of one, into an Exchange, the same
// way for charges, refunds, captures and voids, so that callers decide on
// its Class ("approved", "declined", "not processed", "unknown, retry with
// the same key" or "our bug, stop") rather than on a dialect's status
// codes. Breaker wraps any adapter in the circuit breakers, so that every
// dialect stops sending in the same way while its provider is failing.
//
// docs/provider-adapters.md says what a new adapter must do.
package provider

import (
	"context"
	"slices"
	"time"

	"chargeonce"
)

// Port is what the payment activities need of a card provider. An
// implementation is safe for concurrent use.
type Port interface {
	// Charge sends one charge request, exactly one request on the wire or
	// none, and reads the answer. It never fails: everything that can
	// happen, from a decline to a lost connection, is an Outcome in the
	// Result.
	Charge(ctx context.Context, req ChargeRequest) Result
	// FindCharges returns every charge the provider holds for the merchant
	// reference, oldest first; none is an empty list. Errors are *Error.
	FindCharges(ctx context.Context, merchantReference string) ([]Charge, error)
	// Limits returns what the provider publishes, or documents, about how
	// it may be used. Errors are *Error.
	Limits(ctx context.Context) (Limits, error)
	// Refunder returns money from a charge.
	Refunder
	// Holder captures or releases a charge that only authorized.
	Holder
}

// ChargeRequest is one charge to send.
type ChargeRequest struct {
	// Key is the idempotency key; every retry of the same payment sends the
	// same one.
	Key string
	// Amount is in minor units of Currency.
	Amount int64
	// Currency is the ISO 4217 code, such as "TRY".
	Currency string
	// Source is the card token or payment method.
	Source string
	// Description is shown on the provider's dashboard; it may be empty.
	Description string
	// MerchantReference is how the charge is found again when the outcome
	// of every request was lost.
	MerchantReference string
	// Hold asks the provider to authorize the amount only: the charge is
	// StatusAuthorized until a Capture takes the money, a Void releases
	// it, or it expires.
	Hold bool
}

// ChargeRequestOf is the charge of a payment intent: the same fields on every
// request under its key, so that the provider never sees one key with two
// bodies.
func ChargeRequestOf(p chargeonce.PaymentIntent) ChargeRequest {
	return ChargeRequest{
		Key:               p.Key,
		Amount:            p.Amount.Minor,
		Currency:          p.Amount.Currency,
		Source:            p.CardToken,
		Description:       p.Description,
		MerchantReference: p.MerchantReference,
		Hold:              p.Capture.Manual(),
	}
}

// Charge is a charge as the provider holds it.
type Charge struct {
	// ID is the provider's id of the payment, such as "ch_000001" or
	// "pi_3Mtw…".
	ID string
	// Status is StatusSucceeded, StatusFailed (a declined card), or for a
	// hold StatusAuthorized, StatusVoided or StatusExpired; a captured hold
	// is StatusSucceeded.
	Status string
	// Currency is the ISO 4217 code of Amount, in upper case.
	Currency string
	// MerchantReference is the reference sent with the charge.
	MerchantReference string
	// IdempotencyKey is the key the charge was created under, when the
	// provider tells it; empty otherwise.
	IdempotencyKey string
	// Amount is in minor units of Currency.
	Amount int64
	// Created is when the provider created the charge.
	Created time.Time
	// AmountCaptured is how much of a hold's Amount was captured: 0 until
	// it is, and at most Amount, since a partial capture releases the
	// rest. It is 0 for a charge that was no hold.
	AmountCaptured int64
	// CaptureBefore is when an authorized hold expires unless captured;
	// zero for a charge that was no hold, or when the provider does not
	// tell.
	CaptureBefore time.Time
}

// The statuses of a charge at the provider.
const (
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	// StatusAuthorized is a hold waiting for its capture or void.
	StatusAuthorized = "authorized"
	// StatusVoided is a hold released without taking any money.
	StatusVoided = "voided"
	// StatusExpired is a hold the provider released because it was not
	// captured in time.
	StatusExpired = "expired"
)

// Succeeded reports whether the charge took the money, as opposed to a
// declined card.
func (c Charge) Succeeded() bool { return c.Status == StatusSucceeded }

// Held reports whether the charge is a hold still waiting for its capture
// or void.
func (c Charge) Held() bool { return c.Status == StatusAuthorized }

// Result is how one charge request ended.
type Result struct {
	// Exchange is how the request ended on the wire, and what it means.
	Exchange
	// Charge is the provider's charge, on Approved.
	Charge *Charge
	// ChargeID is the provider's charge id on Approved and Declined.
	ChargeID string
	// DeclineCode is the provider's reason on Declined, such as
	// "insufficient_funds".
	DeclineCode string
	// ProviderTrouble reports, on Declined, that the decline is the trouble
	// of the provider, its acquirer or the card's issuer (the issuer or the
	// acquirer unreachable, a processing error, "try again later"), not of
	// the card: nothing was charged, and another provider may take the same
	// payment. A card's decline (insufficient funds, a lost or stolen card,
	// do not honor, a payment method the provider cannot charge) leaves it
	// false, since no provider would charge that card.
	ProviderTrouble bool
}

// providerTroubleCodes are the decline codes, common to the IETF draft's
// dialect and Stripe's, by which a provider declines for its own trouble or
// its acquirer's or the issuer's rather than the card's.
var providerTroubleCodes = []string{
	"issuer_not_available", // the issuer, or the acquirer, could not be reached
	"processing_error",     // the provider failed to process the card
	"reenter_transaction",  // the issuer could not process it this time
	"try_again_later",      // the issuer asks for the same charge later
}

// IsProviderTrouble reports whether a decline with this code is the
// provider's own trouble rather than the card's (Result.ProviderTrouble),
// for a dialect that uses the common decline codes. Every other code is the
// card's: failing a payment over to another provider on it would only
// decline the card again, or charge a card its owner had reported lost.
func IsProviderTrouble(declineCode string) bool {
	return slices.Contains(providerTroubleCodes, declineCode)
}

// MaxRetryAfter caps a provider's Retry-After. A provider asking to wait
// longer than this is down or its header is broken; honouring it would park a
// payment for hours, while the caller's own budget and the reconciliation of
// unknown outcomes already cover a long outage.
const MaxRetryAfter = 5 * time.Minute

// Limits are what the provider publishes about how it may be used.
type Limits struct {
	// KeyRetention is how long the provider remembers an idempotency key.
	// After that, the same key creates a new charge, so every retry and
	// every reconciliation of an attempt must end well within it; the
	// worker checks its configuration against this at start.
	KeyRetention time.Duration
	// LookupsPerSecond is how many lookups by merchant reference the
	// provider serves a second, from all its clients together; past it, it
	// answers 429. The workers pace their lookups to stay under it.
	LookupsPerSecond float64
	// LookupDelay is how long after a charge is created a lookup by its
	// merchant reference may still miss it: zero for a provider whose
	// lookups read its books, about a minute for a search index that is
	// eventually consistent. The first lookup of an attempt must come later
	// than this, or a charge would be taken for absent; the worker checks
	// its configuration against it at start.
	LookupDelay time.Duration
	// HoldWindow is how long the provider keeps an authorization before it
	// expires; 0 means the provider offers no holds.
	HoldWindow time.Duration
}
