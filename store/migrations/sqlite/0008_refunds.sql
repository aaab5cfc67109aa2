-- Refunds: refund intents and their request logs, the repair of late
-- charges, and the order statuses partially_refunded and refunded.
--
-- SQLite cannot change a CHECK constraint in place, so orders is rebuilt by
-- the recipe of 0003_not_processed.sql: create the new table, copy the
-- rows, drop the old table, rename the new one. Foreign keys stay on inside
-- the migration's transaction, so dropping orders would orphan the attempts
-- that refer to it: payment_attempts and provider_requests are rebuilt with
-- it, each copy referring to the new copy of its parent, and renaming a
-- parent renames the references to it. Every index of the rebuilt tables is
-- created again at the end.
--
-- orders is AUTOINCREMENT, so that an order number is never given twice.
-- Its high-water mark lives in sqlite_sequence, which loses the row of a
-- dropped table: the new table takes the old one's mark before the drop,
-- and the rename carries it over.

CREATE TABLE orders_new (
	-- AUTOINCREMENT never reuses an order number.
	id                  INTEGER PRIMARY KEY AUTOINCREMENT,
	amount_minor        INTEGER NOT NULL CHECK (amount_minor > 0),
	currency            TEXT NOT NULL CHECK (currency GLOB '[A-Z][A-Z][A-Z]'),
	description         TEXT NOT NULL,
	status              TEXT NOT NULL CHECK (status IN ('placed', 'payment_pending', 'paid', 'partially_refunded', 'refunded')),
	-- The provider's charge ID that paid the order, set once it is paid;
	-- its refunds keep it.
	provider_payment_id TEXT CHECK (provider_payment_id <> ''),
	created_at          INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL,
	CHECK ((status IN ('paid', 'partially_refunded', 'refunded')) = (provider_payment_id IS NOT NULL))
) STRICT;

INSERT INTO orders_new (id, amount_minor, currency, description, status, provider_payment_id, created_at, updated_at)
	SELECT id, amount_minor, currency, description, status, provider_payment_id, created_at, updated_at FROM orders;

DELETE FROM sqlite_sequence WHERE name = 'orders_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'orders_new', seq FROM sqlite_sequence WHERE name = 'orders';

CREATE TABLE payment_attempts_new (
	-- The idempotency key sent with every request of the attempt, and the ID
	-- of its workflow.
	idempotency_key     TEXT PRIMARY KEY NOT NULL CHECK (length(idempotency_key) = 36),
	order_id            INTEGER NOT NULL REFERENCES orders_new (id),
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
	-- 1 once the card hash is keyed (0007_keyed_card_hashes.sql).
	card_hash_keyed     INTEGER NOT NULL DEFAULT 0 CHECK (card_hash_keyed IN (0, 1)),
	CHECK ((status = 'open') = (settled_at IS NULL)),
	CHECK (status <> 'succeeded' OR provider_payment_id IS NOT NULL)
) STRICT;

INSERT INTO payment_attempts_new (idempotency_key, order_id, amount_minor, currency, card_hash, merchant_reference,
		status, provider_payment_id, workflow_started, created_at, last_checked_at, abandon_at, settled_at, card_hash_keyed)
	SELECT idempotency_key, order_id, amount_minor, currency, card_hash, merchant_reference,
		status, provider_payment_id, workflow_started, created_at, last_checked_at, abandon_at, settled_at, card_hash_keyed
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

-- Children first, so that no drop leaves a reference behind.
DROP TABLE provider_requests;
DROP TABLE payment_attempts;
DROP TABLE orders;
ALTER TABLE orders_new RENAME TO orders;
ALTER TABLE payment_attempts_new RENAME TO payment_attempts;
ALTER TABLE provider_requests_new RENAME TO provider_requests;

-- The indexes of 0001, 0003 and 0005, which went with the old tables.
CREATE UNIQUE INDEX payment_attempts_one_open_per_order ON payment_attempts (order_id) WHERE status = 'open';
CREATE INDEX payment_attempts_by_order ON payment_attempts (order_id, created_at);
CREATE INDEX payment_attempts_unstarted ON payment_attempts (created_at) WHERE status = 'open' AND NOT workflow_started;
CREATE INDEX payment_attempts_succeeded_by_charge ON payment_attempts (provider_payment_id) WHERE status = 'succeeded';
CREATE INDEX provider_requests_by_key ON provider_requests (idempotency_key, at, id);

CREATE TABLE refunds (
	-- The idempotency key sent with every request of the refund, and the ID
	-- of its workflow. It is ours; the merchant's key is request_key.
	idempotency_key     TEXT PRIMARY KEY NOT NULL CHECK (length(idempotency_key) = 36),
	-- NULL for an operator's refund of a charge that belongs to no order.
	order_id            INTEGER REFERENCES orders (id),
	charge_id           TEXT NOT NULL CHECK (charge_id <> ''),
	amount_minor        INTEGER NOT NULL CHECK (amount_minor > 0),
	currency            TEXT NOT NULL CHECK (currency GLOB '[A-Z][A-Z][A-Z]'),
	reason              TEXT NOT NULL,
	origin              TEXT NOT NULL CHECK (origin IN ('merchant', 'operator', 'late_charge')),
	merchant_reference  TEXT NOT NULL UNIQUE,
	status              TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'not_processed')),
	provider_refund_id  TEXT CHECK (provider_refund_id <> ''),
	failure_reason      TEXT NOT NULL DEFAULT '',
	-- The Idempotency-Key of the API request that asked for the refund, and
	-- the SHA-256 of that request's body; NULL for the repair's refunds.
	request_key         TEXT CHECK (request_key <> ''),
	request_fingerprint TEXT CHECK (length(request_fingerprint) = 64 AND request_fingerprint NOT GLOB '*[^0-9a-f]*'),
	-- 0 until the workflow is known to run: the refund row is the outbox.
	workflow_started    INTEGER NOT NULL DEFAULT 0 CHECK (workflow_started IN (0, 1)),
	created_at          INTEGER NOT NULL,
	last_checked_at     INTEGER,
	-- When the refund left pending; a later failure keeps it.
	settled_at          INTEGER,
	CHECK ((status = 'pending') = (settled_at IS NULL)),
	CHECK (status <> 'succeeded' OR provider_refund_id IS NOT NULL),
	CHECK ((request_key IS NULL) = (request_fingerprint IS NULL)),
	CHECK (origin = 'operator' OR order_id IS NOT NULL)
) STRICT;

-- A request key names one refund, until that refund is not_processed: then
-- nothing was refunded, and the same request may be sent again.
CREATE UNIQUE INDEX refunds_one_per_request_key ON refunds (request_key) WHERE status <> 'not_processed';

-- One repair refund per late charge, however often the charge is found; a
-- not_processed one refunded nothing and makes way for the next.
CREATE UNIQUE INDEX refunds_one_per_late_charge ON refunds (charge_id) WHERE origin = 'late_charge' AND status <> 'not_processed';

CREATE INDEX refunds_by_order ON refunds (order_id, created_at);

-- The amount invariant sums the refunds of a charge.
CREATE INDEX refunds_by_charge ON refunds (charge_id, status);

-- The outbox sweep: pending refunds whose workflow was never started.
CREATE INDEX refunds_unstarted ON refunds (created_at) WHERE status = 'pending' AND NOT workflow_started;

-- The open-refund gauges.
CREATE INDEX refunds_pending ON refunds (created_at) WHERE status = 'pending';

-- Matching pages through the succeeded refunds by the provider's refund id.
CREATE INDEX refunds_succeeded_by_provider_id ON refunds (provider_refund_id) WHERE status = 'succeeded';

CREATE TABLE refund_requests (
	id              INTEGER PRIMARY KEY,
	idempotency_key TEXT NOT NULL REFERENCES refunds (idempotency_key),
	-- When the request was sent.
	at              INTEGER NOT NULL,
	-- The HTTP status, or 0 when no response arrived.
	status_code     INTEGER NOT NULL CHECK (status_code = 0 OR status_code BETWEEN 100 AND 599),
	outcome         TEXT NOT NULL CHECK (outcome <> ''),
	replayed        INTEGER NOT NULL CHECK (replayed IN (0, 1)),
	-- How long the exchange took, in microseconds.
	duration_us     INTEGER NOT NULL CHECK (duration_us >= 0)
) STRICT;

CREATE INDEX refund_requests_by_key ON refund_requests (idempotency_key, at, id);

-- The succeeded charges found for an attempt that did not settle with them,
-- and what the repair decided: the order adopted the charge, or the charge
-- is refunded. The attempt keeps its own status.
CREATE TABLE late_charges (
	charge_id    TEXT PRIMARY KEY NOT NULL CHECK (charge_id <> ''),
	attempt_key  TEXT NOT NULL REFERENCES payment_attempts (idempotency_key),
	order_id     INTEGER NOT NULL REFERENCES orders (id),
	amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),
	currency     TEXT NOT NULL CHECK (currency GLOB '[A-Z][A-Z][A-Z]'),
	decision     TEXT NOT NULL CHECK (decision IN ('adopted', 'refunded')),
	-- The repair's refund; NULL when refunds of others had returned the
	-- whole charge already.
	refund_key   TEXT REFERENCES refunds (idempotency_key),
	found_at     INTEGER NOT NULL,
	CHECK (decision = 'refunded' OR refund_key IS NULL)
) STRICT;

CREATE INDEX late_charges_by_order ON late_charges (order_id);
