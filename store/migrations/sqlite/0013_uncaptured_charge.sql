-- The settlement expects a hold's charge on the day its capture ended it,
-- for what was captured, and the exceptions gain the kind of a charge line
-- for a hold that is not captured: uncaptured_charge.
--
-- SQLite cannot change a CHECK constraint in place, so the exceptions are
-- rebuilt as 0009 rebuilds them; no table refers to them.
CREATE TABLE settlement_exceptions_new (
	report_date        TEXT NOT NULL,
	run_id             TEXT NOT NULL,
	seq                INTEGER NOT NULL CHECK (seq > 0),
	kind               TEXT NOT NULL CHECK (kind IN ('unknown_charge', 'missing_in_report', 'amount_mismatch',
		'currency_mismatch', 'uncaptured_charge', 'duplicate_line', 'malformed_line', 'unknown_refund',
		'refund_missing_in_report', 'refund_amount_mismatch', 'late_charge_adopted', 'late_charge_refunded')),
	charge_id          TEXT NOT NULL,
	merchant_reference TEXT NOT NULL,
	-- 0 when no order is known.
	order_id           INTEGER NOT NULL,
	attempt_key        TEXT NOT NULL,
	-- 0 when the report has no line for it.
	line_no            INTEGER NOT NULL,
	reported_minor     INTEGER NOT NULL,
	reported_currency  TEXT NOT NULL,
	expected_minor     INTEGER NOT NULL,
	expected_currency  TEXT NOT NULL,
	detail             TEXT NOT NULL CHECK (detail <> ''),
	-- The provider's refund id and our refund's key, when the exception is
	-- about a refund; empty otherwise.
	refund_id          TEXT NOT NULL DEFAULT '',
	refund_key         TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (report_date, run_id, seq)
) STRICT;

INSERT INTO settlement_exceptions_new (report_date, run_id, seq, kind, charge_id, merchant_reference, order_id,
		attempt_key, line_no, reported_minor, reported_currency, expected_minor, expected_currency, detail,
		refund_id, refund_key)
	SELECT report_date, run_id, seq, kind, charge_id, merchant_reference, order_id,
		attempt_key, line_no, reported_minor, reported_currency, expected_minor, expected_currency, detail,
		refund_id, refund_key
	FROM settlement_exceptions;

DROP TABLE settlement_exceptions;
ALTER TABLE settlement_exceptions_new RENAME TO settlement_exceptions;
