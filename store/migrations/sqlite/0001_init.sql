-- Orders, payment attempts and the provider request log.
--
-- Times are INTEGER microseconds since the Unix epoch, in UTC: exact, compact,
-- and ordered the same way as the times themselves. Booleans are INTEGER 0 or 1.
-- STRICT tables refuse a value of the wrong type instead of storing it.

CREATE TABLE orders (
	-- AUTOINCREMENT never reuses an order number; the seed below makes the
	-- first one 1001, so that they look like order numbers.
	id                  INTEGER PRIMARY KEY AUTOINCREMENT,
	amount_minor        INTEGER NOT NULL CHECK (amount_minor > 0),
	currency            TEXT NOT NULL CHECK (currency GLOB '[A-Z][A-Z][A-Z]'),
	description         TEXT NOT NULL,
	status              TEXT NOT NULL CHECK (status IN ('placed', 'payment_pending', 'paid')),
	-- The provider's charge ID, set when the order is paid.
	provider_payment_id TEXT CHECK (provider_payment_id <> ''),
	created_at          INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL,
	CHECK ((status = 'paid') = (provider_payment_id IS NOT NULL))
) STRICT;

INSERT INTO sqlite_sequence (name, seq) VALUES ('orders', 1000);

CREATE TABLE payment_attempts (
	-- The idempotency key sent with every request of the attempt, and the ID
	-- of its workflow.
	idempotency_key     TEXT PRIMARY KEY NOT NULL CHECK (length(idempotency_key) = 36),
	order_id            INTEGER NOT NULL REFERENCES orders (id),
	amount_minor        INTEGER NOT NULL CHECK (amount_minor > 0),
	currency            TEXT NOT NULL CHECK (currency GLOB '[A-Z][A-Z][A-Z]'),
	-- SHA-256 of the card token, in lower-case hex; the token is never stored.
	card_hash           TEXT NOT NULL CHECK (length(card_hash) = 64 AND card_hash NOT GLOB '*[^0-9a-f]*'),
	merchant_reference  TEXT NOT NULL UNIQUE,
	status              TEXT NOT NULL CHECK (status IN ('open', 'succeeded', 'declined', 'abandoned', 'failed')),
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

-- At most one open attempt per order: a concurrent checkout cannot start a
-- second charge for the same order.
CREATE UNIQUE INDEX payment_attempts_one_open_per_order ON payment_attempts (order_id) WHERE status = 'open';

CREATE INDEX payment_attempts_by_order ON payment_attempts (order_id, created_at);

-- The outbox sweep: open attempts whose workflow was never started.
CREATE INDEX payment_attempts_unstarted ON payment_attempts (created_at) WHERE status = 'open' AND NOT workflow_started;

CREATE TABLE provider_requests (
	id              INTEGER PRIMARY KEY,
	idempotency_key TEXT NOT NULL REFERENCES payment_attempts (idempotency_key),
	-- When the request was sent.
	at              INTEGER NOT NULL,
	-- The HTTP status, or 0 when no response arrived.
	status_code     INTEGER NOT NULL CHECK (status_code = 0 OR status_code BETWEEN 100 AND 599),
	outcome         TEXT NOT NULL CHECK (outcome <> ''),
	replayed        INTEGER NOT NULL CHECK (replayed IN (0, 1)),
	-- How long the exchange took, in microseconds.
	duration_us     INTEGER NOT NULL CHECK (duration_us >= 0)
) STRICT;

CREATE INDEX provider_requests_by_key ON provider_requests (idempotency_key, at, id);
