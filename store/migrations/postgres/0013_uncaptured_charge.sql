-- The settlement expects a hold's charge on the day its capture ended it,
-- for what was captured, and the exceptions gain the kind of a charge line
-- for a hold that is not captured: uncaptured_charge.
ALTER TABLE settlement_exceptions DROP CONSTRAINT settlement_exceptions_kind_check;
ALTER TABLE settlement_exceptions ADD CONSTRAINT settlement_exceptions_kind_check CHECK (kind IN ('unknown_charge',
	'missing_in_report', 'amount_mismatch', 'currency_mismatch', 'uncaptured_charge', 'duplicate_line', 'malformed_line',
	'unknown_refund', 'refund_missing_in_report', 'refund_amount_mismatch', 'late_charge_adopted', 'late_charge_refunded'));
