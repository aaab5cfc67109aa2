package chargeonce

// ExceptionKind says what a settlement run found wrong with one charge or
// one line of the provider's settlement report. Each exception is put before
// a human.
type ExceptionKind string

// The exception kinds.
const (
	// ExceptionUnknownCharge: the report holds a charge with no succeeded
	// attempt, such as a double charge or a charge for an abandoned or
	// not_processed attempt. The customer paid for nothing: a refund
	// candidate.
	ExceptionUnknownCharge ExceptionKind = "unknown_charge"
	// ExceptionMissingInReport: a succeeded attempt whose charge is in no
	// report by the end of the grace period.
	ExceptionMissingInReport ExceptionKind = "missing_in_report"
	// ExceptionAmountMismatch: the report's gross differs from the attempt's
	// amount.
	ExceptionAmountMismatch ExceptionKind = "amount_mismatch"
	// ExceptionCurrencyMismatch: the report's currency differs from the
	// attempt's.
	ExceptionCurrencyMismatch ExceptionKind = "currency_mismatch"
	// ExceptionDuplicateLine: the report holds the same charge more than once.
	ExceptionDuplicateLine ExceptionKind = "duplicate_line"
	// ExceptionMalformedLine: a line of the report cannot be read.
	ExceptionMalformedLine ExceptionKind = "malformed_line"
)

// ExceptionKinds lists every kind, in the order a report shows them.
var ExceptionKinds = []ExceptionKind{
	ExceptionUnknownCharge, ExceptionMissingInReport, ExceptionAmountMismatch,
	ExceptionCurrencyMismatch, ExceptionDuplicateLine, ExceptionMalformedLine,
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
