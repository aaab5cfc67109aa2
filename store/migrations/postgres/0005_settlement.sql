-- Daily settlement: the lines of the provider's settlement reports, and the
-- result of matching each report date against the succeeded attempts.
--
-- Report dates are text in the form 2006-01-02, as the report and the API
-- spell them, which sorts as the dates do.

-- The lines of each report, staged so that matching reads them in pages by
-- charge id, in bounded memory, however long the report is. A malformed line
-- keeps its text and why it could not be read; its other columns are empty.
CREATE TABLE settlement_lines (
	report_date            text NOT NULL CHECK (report_date ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
	-- The line's number in the report, the header being line 1.
	line_no                bigint NOT NULL CHECK (line_no > 1),
	balance_transaction_id text NOT NULL,
	created_at             timestamptz,
	charge_id              text NOT NULL,
	merchant_reference     text NOT NULL,
	reporting_category     text NOT NULL,
	gross_minor            bigint NOT NULL,
	fee_minor              bigint NOT NULL,
	net_minor              bigint NOT NULL,
	currency               text NOT NULL,
	problem                text NOT NULL,
	raw                    text NOT NULL,
	PRIMARY KEY (report_date, line_no)
);

-- Matching pages through the lines by charge id byte by byte (COLLATE "C"),
-- as Go compares strings, whatever the database's collation.
CREATE INDEX settlement_lines_by_charge ON settlement_lines (report_date, charge_id COLLATE "C", line_no);

-- One row per report date: the result of its latest complete run.
CREATE TABLE settlement_runs (
	report_date text PRIMARY KEY CHECK (report_date ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
	-- The run whose exceptions are the date's; the exceptions of any other
	-- run of the date are left over from a run that did not finish.
	run_id      text NOT NULL CHECK (run_id <> ''),
	status      text NOT NULL CHECK (status IN ('provisional', 'final')),
	lines       bigint NOT NULL CHECK (lines >= 0),
	matched     bigint NOT NULL CHECK (matched >= 0),
	-- Succeeded attempts not in the report yet, within the grace period.
	awaiting    bigint NOT NULL CHECK (awaiting >= 0),
	exceptions  bigint NOT NULL CHECK (exceptions >= 0),
	-- Gross, fee and net per currency, as JSON; a handful of currencies at most.
	totals      text NOT NULL,
	grace_days  integer NOT NULL CHECK (grace_days >= 0),
	finished_at timestamptz NOT NULL
);

CREATE TABLE settlement_exceptions (
	report_date        text NOT NULL,
	run_id             text NOT NULL,
	seq                bigint NOT NULL CHECK (seq > 0),
	kind               text NOT NULL CHECK (kind IN ('unknown_charge', 'missing_in_report', 'amount_mismatch',
		'currency_mismatch', 'duplicate_line', 'malformed_line')),
	charge_id          text NOT NULL,
	merchant_reference text NOT NULL,
	-- 0 when no order is known.
	order_id           bigint NOT NULL,
	attempt_key        text NOT NULL,
	-- 0 when the report has no line for it.
	line_no            bigint NOT NULL,
	reported_minor     bigint NOT NULL,
	reported_currency  text NOT NULL,
	expected_minor     bigint NOT NULL,
	expected_currency  text NOT NULL,
	detail             text NOT NULL CHECK (detail <> ''),
	PRIMARY KEY (report_date, run_id, seq)
);

-- Matching pages through the succeeded attempts by charge id, byte by byte.
CREATE INDEX payment_attempts_succeeded_by_charge ON payment_attempts (provider_payment_id COLLATE "C") WHERE status = 'succeeded';
