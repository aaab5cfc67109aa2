-- The settlement matches refunds too: a report line names the refund it
-- returns money for, and the exceptions gain the kinds of refunds and of the
-- repairs of late charges, with the refund they are about.
--
-- A charge line's refund_id is empty, as is that of every line staged
-- before this migration.
ALTER TABLE settlement_lines ADD COLUMN refund_id text NOT NULL DEFAULT '';

-- Matching pages through the refund lines by refund id, byte by byte.
CREATE INDEX settlement_lines_by_refund ON settlement_lines (report_date, refund_id COLLATE "C", line_no) WHERE refund_id <> '';

ALTER TABLE settlement_exceptions DROP CONSTRAINT settlement_exceptions_kind_check;
ALTER TABLE settlement_exceptions ADD CONSTRAINT settlement_exceptions_kind_check CHECK (kind IN ('unknown_charge',
	'missing_in_report', 'amount_mismatch', 'currency_mismatch', 'duplicate_line', 'malformed_line', 'unknown_refund',
	'refund_missing_in_report', 'refund_amount_mismatch', 'late_charge_adopted', 'late_charge_refunded'));
-- The provider's refund id and our refund's key, when the exception is
-- about a refund; empty otherwise.
ALTER TABLE settlement_exceptions ADD COLUMN refund_id text NOT NULL DEFAULT '';
ALTER TABLE settlement_exceptions ADD COLUMN refund_key text NOT NULL DEFAULT '';

