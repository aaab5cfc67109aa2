-- Each provider's books are settled on their own: a report date is settled
-- once per provider, from that provider's report, so the staged lines, the
-- runs, their exceptions and what people decided about them are keyed by
-- the provider as well as the date. Rows written before were all of the one
-- provider a deployment settled, whose name is 'default' unless
-- --provider-name said otherwise (as in 0011). The default fills them, and
-- is then dropped: every new row names its provider.

ALTER TABLE settlement_lines ADD COLUMN provider text NOT NULL DEFAULT 'default' CHECK (provider <> '');
ALTER TABLE settlement_lines ALTER COLUMN provider DROP DEFAULT;
ALTER TABLE settlement_lines DROP CONSTRAINT settlement_lines_pkey;
ALTER TABLE settlement_lines ADD PRIMARY KEY (provider, report_date, line_no);
DROP INDEX settlement_lines_by_charge;
CREATE INDEX settlement_lines_by_charge ON settlement_lines (provider, report_date, charge_id COLLATE "C", line_no);
DROP INDEX settlement_lines_by_refund;
CREATE INDEX settlement_lines_by_refund ON settlement_lines (provider, report_date, refund_id COLLATE "C", line_no) WHERE refund_id <> '';

ALTER TABLE settlement_runs ADD COLUMN provider text NOT NULL DEFAULT 'default' CHECK (provider <> '');
ALTER TABLE settlement_runs ALTER COLUMN provider DROP DEFAULT;
ALTER TABLE settlement_runs DROP CONSTRAINT settlement_runs_pkey;
ALTER TABLE settlement_runs ADD PRIMARY KEY (provider, report_date);
-- The console lists the latest days of every provider.
CREATE INDEX settlement_runs_by_date ON settlement_runs (report_date, provider);

ALTER TABLE settlement_exceptions ADD COLUMN provider text NOT NULL DEFAULT 'default' CHECK (provider <> '');
ALTER TABLE settlement_exceptions ALTER COLUMN provider DROP DEFAULT;
ALTER TABLE settlement_exceptions DROP CONSTRAINT settlement_exceptions_pkey;
ALTER TABLE settlement_exceptions ADD PRIMARY KEY (provider, report_date, run_id, seq);

ALTER TABLE settlement_resolutions ADD COLUMN provider text NOT NULL DEFAULT 'default' CHECK (provider <> '');
ALTER TABLE settlement_resolutions ALTER COLUMN provider DROP DEFAULT;
ALTER TABLE settlement_resolutions DROP CONSTRAINT settlement_resolutions_pkey;
ALTER TABLE settlement_resolutions ADD PRIMARY KEY (provider, report_date, exception_id);
