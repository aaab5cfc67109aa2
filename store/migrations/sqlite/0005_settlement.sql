-- Daily settlement: the lines of the provider's settlement reports, and the
-- result of matching each report date against the succeeded attempts.
--
-- Times are INTEGER microseconds since the Unix epoch, in UTC; report dates
-- are TEXT in the form 2006-01-02, which sorts as the dates do.

-- The lines of each report, staged so that matching reads them in pages by
-- charge id, in bounded memory, however long the report is. A malformed line
-- keeps its text and why it could not be read; its other columns are empty.
CREATE TABLE settlement_lines (
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
	PRIMARY KEY (report_date, line_no)
) STRICT;

CREATE INDEX settlement_lines_by_charge ON settlement_lines (report_date, charge_id, line_no);

-- One row per report date: the result of its latest complete run.
CREATE TABLE settlement_runs (
	report_date TEXT PRIMARY KEY NOT NULL CHECK (report_date GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
	-- The run whose exceptions are the date's; the exceptions of any other
	-- run of the date are left over from a run that did not finish.
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
	finished_at INTEGER NOT NULL
) STRICT;

CREATE TABLE settlement_exceptions (
	report_date        TEXT NOT NULL,
	run_id             TEXT NOT NULL,
	seq                INTEGER NOT NULL CHECK (seq > 0),
	kind               TEXT NOT NULL CHECK (kind IN ('unknown_charge', 'missing_in_report', 'amount_mismatch',
		'currency_mismatch', 'duplicate_line', 'malformed_line')),
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
	PRIMARY KEY (report_date, run_id, seq)
) STRICT;

-- Matching pages through the succeeded attempts by charge id.
CREATE INDEX payment_attempts_succeeded_by_charge ON payment_attempts (provider_payment_id) WHERE status = 'succeeded';
