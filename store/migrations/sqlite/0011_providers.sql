-- Every payment attempt and every refund names the provider it is sent to
-- (the worker's provider registry picks the port by this name). Rows
-- written before were all sent to the one provider a deployment had, whose
-- name is 'default' unless --provider-name says otherwise; the new rows are
-- written with the name of the provider they are sent to.
ALTER TABLE payment_attempts ADD COLUMN provider TEXT NOT NULL DEFAULT 'default' CHECK (provider <> '');
ALTER TABLE refunds ADD COLUMN provider TEXT NOT NULL DEFAULT 'default' CHECK (provider <> '');
