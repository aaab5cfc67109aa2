package chargeonce

import "fmt"

// LateChargeDecision says what the repair does with a late charge: a
// succeeded charge found for an attempt that did not settle with it (an
// attempt abandoned or not processed, or a second charge for an order that
// another charge paid). Money taken is never dropped: it pays the order or
// goes back.
type LateChargeDecision string

// The decisions of the repair.
const (
	// LateChargeAdopted: the order had not been paid since, so the charge
	// pays it now, and the merchant delivers.
	LateChargeAdopted LateChargeDecision = "adopted"
	// LateChargeRefunded: the order was paid by another charge, or the
	// charge is not the order's amount, so the whole charge goes back.
	LateChargeRefunded LateChargeDecision = "refunded"
	// LateChargeKnown: the charge is the one that paid the order; nothing
	// changes.
	LateChargeKnown LateChargeDecision = "known"
)

// LateChargeFacts is what the repair knows when it decides: the order the
// charge's attempt belongs to, as it stands under its lock, and the
// charge.
type LateChargeFacts struct {
	OrderID     int64
	OrderStatus OrderStatus
	OrderAmount Money
	// OrderPaidBy is the charge that paid the order, or whose hold it
	// authorized; empty when none did.
	OrderPaidBy  string
	ChargeID     string
	ChargeAmount Money
	// Decided is what an earlier repair of the same charge decided; empty
	// when the charge is found for the first time.
	Decided LateChargeDecision
}

// Decide is the repair's rule. The charge that paid the order is known.
// Found for the first time, a charge of the order's amount for an order
// still open to payment (OrderStatus.Open) is adopted: an order paid, or
// authorized by a hold, since is not; every other charge is refunded in whole, and
// stays refunded however often it is found again, since an order that
// another charge has paid meanwhile can no longer take it. An adopted
// charge pays its order for good, so finding one that no longer does is
// an error: only a change by hand gets there.
func (c LateChargeFacts) Decide() (LateChargeDecision, error) {
	switch {
	case c.OrderPaidBy == c.ChargeID:
		return LateChargeKnown, nil
	case c.Decided == LateChargeAdopted:
		return "", fmt.Errorf("the charge was adopted by order %d, which is now paid by %q", c.OrderID, c.OrderPaidBy)
	case c.Decided == "" && c.OrderStatus.Open() && c.ChargeAmount == c.OrderAmount:
		return LateChargeAdopted, nil
	default:
		return LateChargeRefunded, nil
	}
}

// RefundReason is the reason written on the refund of a charge that
// Decide refunds: the charge that paid the order, the hold it authorized,
// or the amount that could not pay it.
func (c LateChargeFacts) RefundReason() string {
	switch {
	case c.OrderStatus.Paid():
		return fmt.Sprintf("late charge: order %d was paid by charge %s", c.OrderID, c.OrderPaidBy)
	case !c.OrderStatus.Open():
		return fmt.Sprintf("late charge: order %d was authorized by hold %s", c.OrderID, c.OrderPaidBy)
	}
	return fmt.Sprintf("late charge: %s is not the amount of order %d, %s", c.ChargeAmount, c.OrderID, c.OrderAmount)
}
