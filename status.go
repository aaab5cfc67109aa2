package chargeonce

// OrderStatus is where an order stands. An order moves placed →
// payment_pending → paid, and back from payment_pending to placed when its
// attempt is declined, abandoned or not processed, so that the customer may
// pay again. A paid order's refunds move it on to partially_refunded and
// refunded (OrderStatusAfterRefunds).
type OrderStatus string

// The order statuses.
const (
	OrderPlaced         OrderStatus = "placed"
	OrderPaymentPending OrderStatus = "payment_pending"
	OrderPaid           OrderStatus = "paid"
	// OrderPartiallyRefunded: some, not all, of the paying charge was
	// refunded.
	OrderPartiallyRefunded OrderStatus = "partially_refunded"
	// OrderRefunded: the whole paying charge was refunded.
	OrderRefunded OrderStatus = "refunded"
)

// Valid reports whether s is one of the order statuses.
func (s OrderStatus) Valid() bool {
	switch s {
	case OrderPlaced, OrderPaymentPending, OrderPaid, OrderPartiallyRefunded, OrderRefunded:
		return true
	}
	return false
}

// AttemptStatus is where a payment attempt stands. An attempt is open until
// it reaches one of the terminal statuses, and a terminal status is never
// overwritten.
type AttemptStatus string

// The attempt statuses.
const (
	// AttemptOpen: the outcome is not known yet; the key may still be sent.
	AttemptOpen AttemptStatus = "open"
	// AttemptSucceeded: the provider holds exactly one successful charge for it.
	AttemptSucceeded AttemptStatus = "succeeded"
	// AttemptDeclined: the provider declined the card.
	AttemptDeclined AttemptStatus = "declined"
	// AttemptAbandoned: no charge was found before the abandon deadline.
	AttemptAbandoned AttemptStatus = "abandoned"
	// AttemptFailed: the provider refused the request as a contract violation,
	// which is a bug on our side and needs a human.
	AttemptFailed AttemptStatus = "failed"
	// AttemptNotProcessed: no request of the attempt can have been processed
	// (none was sent, or the provider answered each with a status that
	// processes nothing), so no charge exists under its key and none ever
	// will. Nothing was charged.
	AttemptNotProcessed AttemptStatus = "not_processed"
)

// Terminal reports whether s is a final status that nothing may change.
func (s AttemptStatus) Terminal() bool {
	switch s {
	case AttemptSucceeded, AttemptDeclined, AttemptAbandoned, AttemptFailed, AttemptNotProcessed:
		return true
	}
	return false
}

// Valid reports whether s is one of the attempt statuses.
func (s AttemptStatus) Valid() bool {
	return s == AttemptOpen || s.Terminal()
}

// OrderStatusAfter is the status of an order whose latest attempt has status
// s. It is the one mapping from attempts to orders: the store settles orders
// by it, and the checkout answers with it. An open attempt keeps its order
// payment_pending. An attempt that settles makes it paid on success; placed
// again on decline, abandonment or nothing processed, so that the customer
// may pay again, with this card or another, under a new attempt. A failed
// attempt keeps the order payment_pending: the provider refused our request
// as a contract violation, so a charge under that key may exist, and only a
// human may offer the order for payment again.
func OrderStatusAfter(s AttemptStatus) OrderStatus {
	switch s {
	case AttemptSucceeded:
		return OrderPaid
	case AttemptDeclined, AttemptAbandoned, AttemptNotProcessed:
		return OrderPlaced
	default:
		// AttemptOpen and AttemptFailed.
		return OrderPaymentPending
	}
}

// Paid reports whether the order was paid: paid, or paid and refunded in
// part or in whole. A paid order is never offered for payment again.
func (s OrderStatus) Paid() bool {
	return s == OrderPaid || s == OrderPartiallyRefunded || s == OrderRefunded
}

// OrderStatusAfterRefunds is the status of a paid order whose paying charge
// of amount minor units has had refunded minor units returned by succeeded
// refunds. Pending refunds do not count: the money is back only once the
// provider says so.
func OrderStatusAfterRefunds(amount, refunded int64) OrderStatus {
	switch {
	case refunded <= 0:
		return OrderPaid
	case refunded < amount:
		return OrderPartiallyRefunded
	default:
		return OrderRefunded
	}
}
