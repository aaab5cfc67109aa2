-- Each provider's books are settled on their own: a report date is settled
-- once per provider, from that provider's report, so the staged lines, the
-- runs, their exceptions and what people decided about them are keyed by
-- the provider as well as the date. Rows written before were all of the one
-- provider a deployment settled, whose name is 'default' unless
-- --provider-name said otherwise (as in 0011).
--
-- SQLite cannot change a primary key in place, so the four tables are
-- rebuilt as 0013 rebuilds the exceptions; no table refers to them.

CREATE TABLE settlement_lines_new (
	provider               TEXT NOT NULL CHECK (provider <> ''),
	report_date            TEXT NOT NULL CHECK (report_date GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
	-- The line's number in the report, the header being line 1.
	line_no                INTEGER NOT NULL CHECK (line_no > 1),
	balance_transaction_id TEXT NOT NULL,
	created_at             INTEGER,
	charge_id              TEXT NOT NULL,
	merchant_reference     TEXT NOT NULL,
	reporting_category     TEXT NOT NULL,
	gross_minor            INTEGER NOT NULL,
	fee_minor              INTEGER NOT NULL,
	net_minor              INTEGER NOT NULL,
	currency               TEXT NOT NULL,
	problem                TEXT NOT NULL,
	raw                    TEXT NOT NULL,
	-- Empty on a charge line.
	refund_id              TEXT NOT NULL,
	PRIMARY KEY (provider, report_date, line_no)
) STRICT;

INSERT INTO settlement_lines_new (provider, report_date, line_no, balance_transaction_id, created_at, charge_id,
		merchant_reference, reporting_category, gross_minor, fee_minor, net_minor, currency, problem, raw, refund_id)
	SELECT 'default', report_date, line_no, balance_transaction_id, created_at, charge_id,
		merchant_reference, reporting_category, gross_minor, fee_minor, net_minor, currency, problem, raw, refund_id
	FROM settlement_lines;

DROP TABLE settlement_lines;
ALTER TABLE settlement_lines_new RENAME TO settlement_lines;

CREATE INDEX settlement_lines_by_charge ON settlement_lines (provider, report_date, charge_id, line_no);
CREATE INDEX settlement_lines_by_refund ON settlement_lines (provider, report_date, refund_id, line_no) WHERE refund_id <> '';

CREATE TABLE settlement_runs_new (
	provider    TEXT NOT NULL CHECK (provider <> ''),
	report_date TEXT NOT NULL CHECK (report_date GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
	-- The run whose exceptions are the provider's date's; the exceptions of
	-- any other run of it are left over from a run that did not finish.
	run_id      TEXT NOT NULL CHECK (run_id <> ''),
	status      TEXT NOT NULL CHECK (status IN ('provisional', 'final')),
	lines       INTEGER NOT NULL CHECK (lines >= 0),
	matched     INTEGER NOT NULL CHECK (matched >= 0),
	-- Succeeded attempts not in the report yet, within the grace period.
	awaiting    INTEGER NOT NULL CHECK (awaiting >= 0),
	exceptions  INTEGER NOT NULL CHECK (exceptions >= 0),
	-- Gross, fee and net per currency, as JSON; a handful of currencies at most.
	totals      TEXT NOT NULL,
	grace_days  INTEGER NOT NULL CHECK (grace_days >= 0),
	finished_at INTEGER NOT NULL,
	PRIMARY KEY (provider, report_date)
) STRICT;

INSERT INTO settlement_runs_new (provider, report_date, run_id, status, lines, matched, awaiting, exceptions,
		totals, grace_days, finished_at)
	SELECT 'default', report_date, run_id, status, lines, matched, awaiting, exceptions, totals, grace_days, finished_at
	FROM settlement_runs;

DROP TABLE settlement_runs;
ALTER TABLE settlement_runs_new RENAME TO settlement_runs;

-- The console lists the latest days of every provider.
CREATE INDEX settlement_runs_by_date ON settlement_runs (report_date, provider);

CREATE TABLE settlement_exceptions_new (
	provider           TEXT NOT NULL CHECK (provider <> ''),
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
	refund_id          TEXT NOT NULL,
	refund_key         TEXT NOT NULL,
	PRIMARY KEY (provider, report_date, run_id, seq)
) STRICT;

INSERT INTO settlement_exceptions_new (provider, report_date, run_id, seq, kind, charge_id, merchant_reference,
		order_id, attempt_key, line_no, reported_minor, reported_currency, expected_minor, expected_currency, detail,
		refund_id, refund_key)
	SELECT 'default', report_date, run_id, seq, kind, charge_id, merchant_reference,
		order_id, attempt_key, line_no, reported_minor, reported_currency, expected_minor, expected_currency, detail,
		refund_id, refund_key
	FROM settlement_exceptions;

DROP TABLE settlement_exceptions;
ALTER TABLE settlement_exceptions_new RENAME TO settlement_exceptions;

CREATE TABLE settlement_resolutions_new (
	provider     TEXT NOT NULL CHECK (provider <> ''),
	report_date  TEXT NOT NULL CHECK (report_date GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
	exception_id TEXT NOT NULL CHECK (length(exception_id) = 16 AND exception_id NOT GLOB '*[^0-9a-f]*'),
	note         TEXT NOT NULL CHECK (note <> ''),
	key_id       TEXT NOT NULL CHECK (key_id <> ''),
	key_name     TEXT NOT NULL,
	resolved_at  INTEGER NOT NULL,
	PRIMARY KEY (provider, report_date, exception_id)
) STRICT;

INSERT INTO settlement_resolutions_new (provider, report_date, exception_id, note, key_id, key_name, resolved_at)
	SELECT 'default', report_date, exception_id, note, key_id, key_name, resolved_at
	FROM settlement_resolutions;

DROP TABLE settlement_resolutions;
ALTER TABLE settlement_resolutions_new RENAME TO settlement_resolutions;
