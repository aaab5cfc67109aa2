package chargeonce

// OrderStatus is where an order stands. An order moves placed →
// payment_pending → paid, and back from payment_pending to placed when its
// attempt is declined, abandoned or not processed, so that the customer may
// pay again. A paid order's refunds move it on to partially_refunded and
// refunded (OrderStatusAfterRefunds). An order paid by manual capture ends
// its checkout authorized instead of paid, and its hold then takes it to
// captured, voided or expired (HoldStatus.OrderStatus); a captured order's
// refunds move it on as a paid one's do.
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
	// OrderAuthorized: the checkout authorized a hold on the card, which
	// waits for a capture or a void.
	OrderAuthorized OrderStatus = "authorized"
	// OrderCaptured: a capture took the hold's money, all or part of it.
	OrderCaptured OrderStatus = "captured"
	// OrderVoided: a void released the hold; nothing was taken.
	OrderVoided OrderStatus = "voided"
	// OrderExpired: the hold expired at the provider; nothing was taken.
	OrderExpired OrderStatus = "expired"
)

// Valid reports whether s is one of the order statuses.
func (s OrderStatus) Valid() bool {
	switch s {
	case OrderPlaced, OrderPaymentPending, OrderPaid, OrderPartiallyRefunded, OrderRefunded,
		OrderAuthorized, OrderCaptured, OrderVoided, OrderExpired:
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

// Paid reports whether money was taken for the order: paid or captured, or
// either and refunded in part or in whole. Only a paid order is refunded.
func (s OrderStatus) Paid() bool {
	return s == OrderPaid || s == OrderCaptured || s == OrderPartiallyRefunded || s == OrderRefunded
}

// Open reports whether the order may still be paid: placed, or
// payment_pending while an attempt runs. An order that is paid, or whose
// hold was authorized, is never offered for payment again, even once the
// hold was voided or expired: its charge is on record, and a new payment
// is a new order.
func (s OrderStatus) Open() bool {
	return s == OrderPlaced || s == OrderPaymentPending
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

// OrderEventKind names what can move an order.
type OrderEventKind string

// The kinds of OrderEvent.
const (
	// OrderAttemptStarted: a new payment attempt was stored for the order.
	OrderAttemptStarted OrderEventKind = "attempt_started"
	// OrderAttemptSettled: the order's open attempt reached a terminal
	// status.
	OrderAttemptSettled OrderEventKind = "attempt_settled"
	// OrderLateChargeAdopted: the repair adopted a late charge, which pays
	// the order (LateChargeAdopted).
	OrderLateChargeAdopted OrderEventKind = "late_charge_adopted"
	// OrderRefundsSettled: a refund of the charge that paid the order
	// settled, so its succeeded refunds sum to something new.
	OrderRefundsSettled OrderEventKind = "refunds_settled"
	// OrderHoldAuthorized: the order's open attempt settled with a hold
	// that the provider authorized.
	OrderHoldAuthorized OrderEventKind = "hold_authorized"
	// OrderHoldEnded: the order's hold was captured, voided or expired.
	OrderHoldEnded OrderEventKind = "hold_ended"
)

// OrderEvent is something that happened to an order, with what its kind
// needs to decide the order's next status.
type OrderEvent struct {
	Kind OrderEventKind
	// Attempt is the settled attempt's status (OrderAttemptSettled).
	Attempt AttemptStatus
	// Charged and Refunded are the paying charge's amount (for a hold,
	// the amount captured) and the sum of its succeeded refunds, in minor
	// units (OrderRefundsSettled).
	Charged, Refunded int64
	// Captured says that the paying charge is a captured hold, so that an
	// order whose refunds return nothing is captured rather than paid
	// (OrderRefundsSettled).
	Captured bool
	// Hold is the status that ended the hold (OrderHoldEnded).
	Hold HoldStatus
}

// NextOrderStatus is the status an order in status s takes on e: the one
// owner of the order's transitions, which docs/design.md draws as a state
// machine and a test holds to the drawing. An event that does not apply
// to s leaves it as it is: an attempt starts only on a placed order; only
// a payment_pending order settles with its attempt (OrderStatusAfter), so
// a late answer never unpays an order that a late charge paid meanwhile;
// only an order still open to payment adopts a late charge; only a paid
// order's status follows its refunds (OrderStatusAfterRefunds); a hold is
// authorized only from payment_pending, and ends only from authorized.
func NextOrderStatus(s OrderStatus, e OrderEvent) OrderStatus {
	switch e.Kind {
	case OrderAttemptStarted:
		if s == OrderPlaced {
			return OrderPaymentPending
		}
	case OrderAttemptSettled:
		if s == OrderPaymentPending {
			return OrderStatusAfter(e.Attempt)
		}
	case OrderLateChargeAdopted:
		if s.Open() {
			return OrderPaid
		}
	case OrderRefundsSettled:
		if !s.Paid() {
			break
		}
		switch next := OrderStatusAfterRefunds(e.Charged, e.Refunded); {
		case next != OrderPaid:
			return next
		case s == OrderPaid || s == OrderCaptured:
			return s
		case e.Captured:
			return OrderCaptured
		default:
			return OrderPaid
		}
	case OrderHoldAuthorized:
		if s == OrderPaymentPending {
			return OrderAuthorized
		}
	case OrderHoldEnded:
		if s == OrderAuthorized && e.Hold.Ended() {
			return e.Hold.OrderStatus()
		}
	}
	return s
}

// CanSettleAs reports whether an attempt in status s may move to t: only
// an open attempt moves, and only to a terminal status, which nothing
// overwrites.
func (s AttemptStatus) CanSettleAs(t AttemptStatus) bool {
	return s == AttemptOpen && t.Terminal()
}
