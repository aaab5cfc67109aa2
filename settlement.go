package chargeonce

// ExceptionKind says what a settlement run found wrong with one charge, one
// refund or one line of the provider's settlement report. Each exception is
// put before a human, except a repair (Repair), which says what the
// settlement did by itself.
type ExceptionKind string

// The exception kinds.
const (
	// ExceptionUnknownCharge: the report holds a charge that no order can
	// take: no attempt made it, or its attempt is still open. A charge of no
	// order is never refunded by itself: a person finds the customer.
	ExceptionUnknownCharge ExceptionKind = "unknown_charge"
	// ExceptionMissingInReport: a succeeded attempt whose charge is in no
	// report by the end of the grace period.
	ExceptionMissingInReport ExceptionKind = "missing_in_report"
	// ExceptionAmountMismatch: the report's gross differs from the charge
	// the attempt expects: its amount, or what its hold's capture took.
	ExceptionAmountMismatch ExceptionKind = "amount_mismatch"
	// ExceptionCurrencyMismatch: the report's currency differs from the
	// attempt's.
	ExceptionCurrencyMismatch ExceptionKind = "currency_mismatch"
	// ExceptionUncapturedCharge: the report holds a charge for a hold that
	// we hold as authorized, voided or expired: the provider took money
	// that no capture of ours took.
	ExceptionUncapturedCharge ExceptionKind = "uncaptured_charge"
	// ExceptionDuplicateLine: the report holds the same charge, or the same
	// refund, more than once.
	ExceptionDuplicateLine ExceptionKind = "duplicate_line"
	// ExceptionMalformedLine: a line of the report cannot be read.
	ExceptionMalformedLine ExceptionKind = "malformed_line"
	// ExceptionUnknownRefund: the report holds a refund that we hold no
	// refund for, or hold as not succeeded: money went back that no refund
	// intent of ours returned.
	ExceptionUnknownRefund ExceptionKind = "unknown_refund"
	// ExceptionRefundMissingInReport: a succeeded refund that is in no
	// report by the end of the grace period.
	ExceptionRefundMissingInReport ExceptionKind = "refund_missing_in_report"
	// ExceptionRefundAmountMismatch: the report returns another amount, or
	// currency, than the refund.
	ExceptionRefundAmountMismatch ExceptionKind = "refund_amount_mismatch"
	// ExceptionLateChargeAdopted (a repair): a charge for an attempt that
	// did not succeed with it now pays its order, which no other charge had
	// paid.
	ExceptionLateChargeAdopted ExceptionKind = "late_charge_adopted"
	// ExceptionLateChargeRefunded (a repair): a charge for an order that
	// another charge paid is refunded in whole, under a refund of its own.
	ExceptionLateChargeRefunded ExceptionKind = "late_charge_refunded"
)

// ExceptionKinds lists every kind, in the order a report shows them.
var ExceptionKinds = []ExceptionKind{
	ExceptionUnknownCharge, ExceptionMissingInReport, ExceptionAmountMismatch,
	ExceptionCurrencyMismatch, ExceptionUncapturedCharge, ExceptionDuplicateLine, ExceptionMalformedLine,
	ExceptionUnknownRefund, ExceptionRefundMissingInReport, ExceptionRefundAmountMismatch,
	ExceptionLateChargeAdopted, ExceptionLateChargeRefunded,
}

// Valid reports whether k is one of the exception kinds.
func (k ExceptionKind) Valid() bool {
	for _, known := range ExceptionKinds {
		if k == known {
			return true
		}
	}
	return false
}

// Repair reports whether k records what the settlement repaired by itself,
// rather than a problem left for a person: the books balance with it.
func (k ExceptionKind) Repair() bool {
	return k == ExceptionLateChargeAdopted || k == ExceptionLateChargeRefunded
}
