-- An attempt may settle as not_processed: none of its requests can have
-- been processed, so nothing was charged under its key.

ALTER TABLE payment_attempts DROP CONSTRAINT payment_attempts_status_check;
ALTER TABLE payment_attempts ADD CONSTRAINT payment_attempts_status_check
	CHECK (status IN ('open', 'succeeded', 'declined', 'abandoned', 'failed', 'not_processed'));
