-- An attempt may settle as not_processed: none of its requests can have
-- been processed, so nothing was charged under its key.
--
-- SQLite cannot change a CHECK constraint in place, so payment_attempts is
-- rebuilt the way the SQLite documentation recommends for schema changes
-- that ALTER TABLE cannot make: create the new table, copy the rows, drop
-- the old table, rename the new one to the old name, and create the indexes
-- again. The recipe begins by turning foreign keys off, which cannot be done
-- inside the transaction that migrations run in; with them on, dropping
-- payment_attempts would orphan the rows of provider_requests that refer to
-- it. So provider_requests is rebuilt with it: its copy refers to the new
-- table from the start, and renaming that table renames the reference too.

CREATE TABLE payment_attempts_new (
	-- The idempotency key sent with every request of the attempt, and the ID
	-- of its workflow.
	idempotency_key     TEXT PRIMARY KEY NOT NULL CHECK (length(idempotency_key) = 36),
	order_id            INTEGER NOT NULL REFERENCES orders (id),
	amount_minor        INTEGER NOT NULL CHECK (amount_minor > 0),
	currency            TEXT NOT NULL CHECK (currency GLOB '[A-Z][A-Z][A-Z]'),
	-- SHA-256 of the card token, in lower-case hex; the token is never stored.
	card_hash           TEXT NOT NULL CHECK (length(card_hash) = 64 AND card_hash NOT GLOB '*[^0-9a-f]*'),
	merchant_reference  TEXT NOT NULL UNIQUE,
	status              TEXT NOT NULL CHECK (status IN ('open', 'succeeded', 'declined', 'abandoned', 'failed', 'not_processed')),
	provider_payment_id TEXT CHECK (provider_payment_id <> ''),
	-- 0 until the workflow is known to run: the attempt row is the outbox.
	workflow_started    INTEGER NOT NULL DEFAULT 0 CHECK (workflow_started IN (0, 1)),
	created_at          INTEGER NOT NULL,
	last_checked_at     INTEGER,
	abandon_at          INTEGER NOT NULL,
	-- When the attempt reached its terminal status.
	settled_at          INTEGER,
	CHECK ((status = 'open') = (settled_at IS NULL)),
	CHECK (status <> 'succeeded' OR provider_payment_id IS NOT NULL)
) STRICT;

INSERT INTO payment_attempts_new (idempotency_key, order_id, amount_minor, currency, card_hash, merchant_reference,
		status, provider_payment_id, workflow_started, created_at, last_checked_at, abandon_at, settled_at)
	SELECT idempotency_key, order_id, amount_minor, currency, card_hash, merchant_reference,
		status, provider_payment_id, workflow_started, created_at, last_checked_at, abandon_at, settled_at
	FROM payment_attempts;

CREATE TABLE provider_requests_new (
	id              INTEGER PRIMARY KEY,
	idempotency_key TEXT NOT NULL REFERENCES payment_attempts_new (idempotency_key),
	-- When the request was sent.
	at              INTEGER NOT NULL,
	-- The HTTP status, or 0 when no response arrived.
	status_code     INTEGER NOT NULL CHECK (status_code = 0 OR status_code BETWEEN 100 AND 599),
	outcome         TEXT NOT NULL CHECK (outcome <> ''),
	replayed        INTEGER NOT NULL CHECK (replayed IN (0, 1)),
	-- How long the exchange took, in microseconds.
	duration_us     INTEGER NOT NULL CHECK (duration_us >= 0)
) STRICT;

INSERT INTO provider_requests_new (id, idempotency_key, at, status_code, outcome, replayed, duration_us)
	SELECT id, idempotency_key, at, status_code, outcome, replayed, duration_us FROM provider_requests;

DROP TABLE provider_requests;
DROP TABLE payment_attempts;
ALTER TABLE payment_attempts_new RENAME TO payment_attempts;
ALTER TABLE provider_requests_new RENAME TO provider_requests;

-- The indexes of 0001_init.sql, which went with the old tables.
CREATE UNIQUE INDEX payment_attempts_one_open_per_order ON payment_attempts (order_id) WHERE status = 'open';
CREATE INDEX payment_attempts_by_order ON payment_attempts (order_id, created_at);
CREATE INDEX payment_attempts_unstarted ON payment_attempts (created_at) WHERE status = 'open' AND NOT workflow_started;
CREATE INDEX provider_requests_by_key ON provider_requests (idempotency_key, at, id);
