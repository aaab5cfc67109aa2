package chargeonce

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// RefundStatus is where a refund intent stands. A refund is pending until
// the provider's answer is known; pending covers both "not sent yet" and
// "sent, outcome unknown". Unlike a payment attempt, a pending refund is
// never abandoned: it stays pending, and raises refund_unknown, until the
// provider's answer is learnt or a person closes it.
type RefundStatus string

// The refund statuses.
const (
	// RefundPending: the outcome is not known yet.
	RefundPending RefundStatus = "pending"
	// RefundSucceeded: the provider holds the refund as succeeded. It may
	// still move to failed, when the provider reports that the money could
	// not be returned after all (Adyen's REFUND_FAILED, Stripe's
	// failure_reason).
	RefundSucceeded RefundStatus = "succeeded"
	// RefundFailed: the provider said no (the charge is fully refunded
	// already, or cannot be refunded), or a refund that had succeeded failed
	// later. It is a result, not an error: nothing was returned.
	RefundFailed RefundStatus = "failed"
	// RefundNotProcessed: no request of the refund can have been processed,
	// so nothing was refunded, and nothing will be under its key.
	RefundNotProcessed RefundStatus = "not_processed"
)

// Valid reports whether s is one of the refund statuses.
func (s RefundStatus) Valid() bool {
	switch s {
	case RefundPending, RefundSucceeded, RefundFailed, RefundNotProcessed:
		return true
	}
	return false
}

// Settled reports whether the provider's answer is known: every status but
// pending. Only a succeeded refund can change again, to failed.
func (s RefundStatus) Settled() bool {
	return s.Valid() && s != RefundPending
}

// Holds reports whether a refund in status s counts against the amount
// that its charge can still refund: a pending one may yet succeed, and a
// succeeded one has returned the money. The refunds of a charge that hold
// never sum to more than the charge.
func (s RefundStatus) Holds() bool {
	return s == RefundPending || s == RefundSucceeded
}

// RefundOrigin says who asked for a refund.
type RefundOrigin string

// The origins of a refund.
const (
	// RefundByMerchant: the merchant refunded its order through the API.
	RefundByMerchant RefundOrigin = "merchant"
	// RefundByOperator: an operator refunded a charge that the books hold,
	// which may belong to no order.
	RefundByOperator RefundOrigin = "operator"
	// RefundLateCharge: the repair refunded a charge that arrived for an
	// order already paid by another charge (late, or twice).
	RefundLateCharge RefundOrigin = "late_charge"
)

// Valid reports whether o is one of the refund origins.
func (o RefundOrigin) Valid() bool {
	switch o {
	case RefundByMerchant, RefundByOperator, RefundLateCharge:
		return true
	}
	return false
}

// RefundIntent is one refund of one charge: the same charge, amount and
// reason on every request. Every request sent to the provider for it
// carries its Key, which is also the ID of the workflow that refunds it.
type RefundIntent struct {
	// Key is the idempotency key sent to the provider, a UUIDv7 stored
	// before the first request. It is ours, not the key of the API request
	// that asked for the refund.
	Key string `json:"key"`
	// OrderID is the merchant's order; 0 for a charge that belongs to no
	// order.
	OrderID int64 `json:"orderId,omitempty"`
	// ChargeID is the provider's id of the charge to refund.
	ChargeID string `json:"chargeId"`
	// Amount is what is returned, at most the charge's amount.
	Amount Money `json:"amount"`
	// Reason says why, for the provider's dashboard and for people.
	Reason string `json:"reason"`
	// MerchantReference is how the refund is found again when the outcome
	// of every request was lost (RefundReference).
	MerchantReference string `json:"merchantReference"`
	// Origin says who asked for the refund.
	Origin RefundOrigin `json:"origin"`
	// CreatedAt is when the intent was stored; the key's retention counts
	// from it.
	CreatedAt time.Time `json:"createdAt"`
	// Provider names the provider the refund is sent to, which the worker's
	// provider registry maps to its port. It is empty in the inputs of
	// workflows started before refunds named their provider, which were all
	// sent to the deployment's default provider.
	Provider string `json:"provider,omitempty"`
}

// Validate checks that the intent can be sent.
func (r RefundIntent) Validate() error {
	switch {
	case !ValidKey(r.Key):
		return fmt.Errorf("refund intent: key %q is not a UUID", r.Key)
	case r.OrderID < 0:
		return fmt.Errorf("refund intent: order ID %d is negative", r.OrderID)
	case r.ChargeID == "":
		return errors.New("refund intent: charge ID is empty")
	case r.MerchantReference == "":
		return errors.New("refund intent: merchant reference is empty")
	case !r.Origin.Valid():
		return fmt.Errorf("refund intent: unknown origin %q", r.Origin)
	case r.CreatedAt.IsZero():
		return errors.New("refund intent: creation time is missing")
	}
	if err := ValidateText(r.Reason); err != nil {
		return fmt.Errorf("refund intent: the reason %w", err)
	}
	if _, err := NewMoney(r.Amount.Minor, r.Amount.Currency); err != nil {
		return fmt.Errorf("refund intent: %w", err)
	}
	return nil
}

// RefundReference builds the reference sent with every request of a
// refund: "<prefix>-refund-<key without dashes>". It cannot be read as a
// payment's reference (MerchantReference), whose middle part is an order
// number, so that the provider's events and the books tell refunds from
// charges by the reference alone.
func RefundReference(prefix, key string) string {
	return prefix + "-refund-" + strings.ReplaceAll(key, "-", "")
}

var refundReferencePattern = regexp.MustCompile(`^([a-z][a-z0-9_]*)-refund-([0-9a-f]{32})$`)

// ParseRefundReference splits a reference built by RefundReference into its
// prefix and key (with its dashes restored).
func ParseRefundReference(ref string) (prefix, key string, err error) {
	m := refundReferencePattern.FindStringSubmatch(ref)
	if m == nil {
		return "", "", fmt.Errorf("merchant reference %q is not of the form <prefix>-refund-<key>", ref)
	}
	k := m[2]
	return m[1], k[0:8] + "-" + k[8:12] + "-" + k[12:16] + "-" + k[16:20] + "-" + k[20:32], nil
}

// RefundLimit is what a charge of amount charge can still refund when its
// refunds that hold (RefundStatus.Holds) sum to held minor units.
func RefundLimit(charge Money, held int64) Money {
	return Money{Minor: max(charge.Minor-held, 0), Currency: charge.Currency}
}

// RefundAmount is the refund amount invariant: the refunds of a charge
// that hold never sum to more than the charge. It returns the amount a
// refund of requested minor units takes from that charge (0 asks for all
// that is left), and false when that would pass RefundLimit or nothing is
// left. The store calls it under the charge's lock, with held summed in
// the same transaction.
func RefundAmount(charge Money, held, requested int64) (Money, bool) {
	limit := RefundLimit(charge, held)
	if requested == 0 {
		requested = limit.Minor
	}
	if requested <= 0 || requested > limit.Minor {
		return Money{}, false
	}
	return Money{Minor: requested, Currency: charge.Currency}, true
}
