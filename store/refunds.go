package store

import (
	"context"
	"errors"
	"time"

	"chargeonce"
	"chargeonce/internal/idemkey"
)

// ErrRefundExceedsCharge is returned when a refund would make the refunds
// of a charge that hold (pending or succeeded) sum to more than the charge.
var ErrRefundExceedsCharge = errors.New("store: the refund exceeds what the charge can still refund")

// ErrNotRefundable is returned when the order was never paid, so that it
// has no charge to refund, or when an operator names a charge the books do
// not hold.
var ErrNotRefundable = errors.New("store: nothing to refund")

// Refund is one refund intent as stored: the intent, where it stands, and
// the API request that asked for it.
type Refund struct {
	chargeonce.RefundIntent
	Status chargeonce.RefundStatus
	// ProviderRefundID is the provider's refund id, once known.
	ProviderRefundID string
	// FailureReason is the provider's reason for a failed refund.
	FailureReason string
	// RequestKey is the Idempotency-Key of the API request that asked for
	// the refund; empty for a refund the repair started.
	RequestKey string
	// RequestFingerprint identifies the body of that request, so that the
	// same key with another body is told apart.
	RequestFingerprint string
	// WorkflowStarted is false until the refund's workflow is known to run;
	// the outbox sweep starts the ones left behind.
	WorkflowStarted bool
	// LastCheckedAt is when the provider was last asked about the refund.
	LastCheckedAt *time.Time
	// SettledAt is when the refund left pending; nil while pending.
	SettledAt *time.Time
	// Requests is the log of the refund's exchanges with the provider,
	// oldest first; only GetRefund loads it.
	Requests []chargeonce.ProviderRequest
}

// MaxRequestKeyLength bounds the Idempotency-Key of an API request that a
// refund keeps, in bytes: the longest key the header may carry. The key is
// free text (chargeonce.ValidateText).
const MaxRequestKeyLength = idemkey.MaxLength

// NewRefund is what StartRefund needs to find or create a refund.
type NewRefund struct {
	// OrderID is the order to refund. For RefundByOperator it may be 0, and
	// ChargeID names a charge the books hold.
	OrderID int64
	// ChargeID is the charge to refund; empty means the order's paying
	// charge.
	ChargeID string
	// Amount is what to return in minor units of the charge's currency;
	// 0 means all that the charge can still refund.
	Amount int64
	Reason string
	Origin chargeonce.RefundOrigin
	// Key is a fresh UUIDv7, used only if a new refund is created.
	Key string
	// ReferencePrefix starts the merchant reference of a new refund.
	ReferencePrefix string
	// RequestKey and RequestFingerprint are the API request's
	// Idempotency-Key (at most MaxRequestKeyLength bytes) and the
	// fingerprint of its body (a SHA-256 in lower-case hex); both empty for
	// a refund no API request asked for.
	RequestKey         string
	RequestFingerprint string
	// Now is the creation time of a new refund.
	Now time.Time
}

// RefundableCharge is a charge that the books hold, as a refund of it sees
// it.
type RefundableCharge struct {
	// ID is the provider's charge id.
	ID string
	// Amount is what the charge took.
	Amount chargeonce.Money
	// OrderID is the order the charge belongs to, 0 for none (a charge
	// that only a settlement report shows).
	OrderID int64
	// Provider names the provider that holds the charge: that of the
	// attempt that made it, or, for a charge that only a settlement report
	// shows, the provider whose report shows it. A refund of the charge is
	// sent there.
	Provider string
}

// RefundDecision says what StartRefund did.
type RefundDecision string

// The decisions of StartRefund.
const (
	// RefundCreated: a new refund was stored, pending.
	RefundCreated RefundDecision = "created"
	// RefundReplayed: a refund with the same request key and fingerprint
	// exists; it is the refund returned.
	RefundReplayed RefundDecision = "replayed"
	// RefundKeyReused: a refund with the same request key and another
	// fingerprint exists; it is the refund returned, and nothing changed.
	RefundKeyReused RefundDecision = "key_reused"
)

// LateCharge is a succeeded charge found at the provider for an attempt
// that did not settle with it: an attempt abandoned or not processed, or a
// second charge for an order that another charge paid.
type LateCharge struct {
	// AttemptKey is the attempt whose merchant reference the charge
	// carries.
	AttemptKey string
	ChargeID   string
	Amount     chargeonce.Money
	// RefundKey is a fresh UUIDv7 for the repair's refund, used only if
	// one is created.
	RefundKey       string
	ReferencePrefix string
	Now             time.Time
}

// RefundStore keeps refund intents, their request logs, and the repair of
// late charges.
type RefundStore interface {
	// StartRefund decides, in one transaction that locks the order (or,
	// for a charge of no order, the charge), what a refund request does. A
	// refund with the same RequestKey is replayed when its fingerprint is
	// the same, and key_reused otherwise; a not_processed refund frees its
	// request key, so that the same request may be sent again. The key
	// decides before the target's refundability does: a key sent again
	// with another request is key_reused even where the order was never
	// paid or the charge is not one the books hold. Otherwise
	// the amount (0: the rest) is checked against what the charge can still
	// refund, its amount less its refunds that hold, and a pending refund is
	// inserted. Concurrent calls for one charge never pass its amount
	// together, whether they name its order or only the charge. The charge
	// named must be one of the order's (its paying charge or a late one),
	// or, without an order, one the books hold: a succeeded attempt's, a
	// late charge, or a settlement report's charge line; a refund of a
	// charge that belongs to an order gets that order's ID. Errors:
	// ErrNotFound (no such order), ErrNotRefundable, ErrRefundExceedsCharge
	// (also for the rest of a charge that has nothing left), and ErrConflict
	// when the new refund's Key is taken.
	StartRefund(ctx context.Context, n NewRefund) (Refund, RefundDecision, error)
	// RefundableCharge returns the charge with this id that the books hold
	// (a succeeded attempt's, a late charge, or a settlement report's
	// charge line), so that a refund's amount can be read in its currency;
	// ErrNotRefundable for any other. It takes no lock: StartRefund checks
	// the charge again under its own.
	RefundableCharge(ctx context.Context, chargeID string) (RefundableCharge, error)
	// GetRefund returns one refund with its Requests.
	GetRefund(ctx context.Context, key string) (Refund, error)
	// RefundByReference returns the refund with this merchant reference,
	// without its Requests, or ErrNotFound.
	RefundByReference(ctx context.Context, merchantReference string) (Refund, error)
	// OrderRefunds returns the refunds of an order, oldest first, without
	// their Requests, or ErrNotFound when there is no such order.
	OrderRefunds(ctx context.Context, orderID int64) ([]Refund, error)
	// MarkRefundWorkflowStarted records that the refund's workflow runs,
	// which takes it out of the outbox.
	MarkRefundWorkflowStarted(ctx context.Context, key string) error
	// UnstartedRefunds is the refunds' outbox: pending refunds created
	// before createdBefore whose workflow is not known to run, oldest
	// first, at most limit of them.
	UnstartedRefunds(ctx context.Context, createdBefore time.Time, limit int) ([]Refund, error)
	// MarkRefundChecked records when the provider was last asked about the
	// refund.
	MarkRefundChecked(ctx context.Context, key string, at time.Time) error
	// SettleRefund moves a pending refund to a settled status, or a
	// succeeded one to failed, with the provider's refund id (required for
	// succeeded; a later failure keeps the one stored when it is empty) and
	// failure reason, and sets its order's status by
	// chargeonce.OrderStatusAfterRefunds when the refund's charge is the
	// one that paid the order, in one transaction and conditionally. It
	// returns false, and changes nothing, for any other move. SettledAt
	// stays the time the refund first left pending.
	SettleRefund(ctx context.Context, key string, status chargeonce.RefundStatus, providerRefundID, failureReason string, at time.Time) (bool, error)
	// OpenRefundStats returns how many refunds are pending and when the
	// oldest of them was created (the zero time when none is).
	OpenRefundStats(ctx context.Context) (open int, oldestCreated time.Time, err error)
	// RecordLateCharge repairs a succeeded charge found for an attempt that
	// did not settle with it, in one transaction that locks the order: an
	// order not paid since adopts it (paid by this charge); an order paid
	// by another charge gets a pending RefundLateCharge refund of the whole
	// charge, one per charge however often it is found; the charge that
	// paid the order changes nothing. A charge of another amount than the
	// order's cannot pay it, and is refunded too. The refund is returned
	// when the decision is refunded; it is nil when refunds of others had
	// returned the whole charge already. A refund of the charge that ended
	// not_processed refunded nothing, so the next call stores a new one,
	// under c.RefundKey. ErrNotFound: no such attempt.
	RecordLateCharge(ctx context.Context, c LateCharge) (chargeonce.LateChargeDecision, *Refund, error)
}
