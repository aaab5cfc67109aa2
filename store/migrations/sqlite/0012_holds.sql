-- Holds: manual capture. A checkout of capture mode manual only authorizes
-- the order's amount, which leaves a hold on the card; a capture or a void
-- (a hold move) ends it, or the hold's deadline does. The orders gain the
-- statuses authorized, captured, voided and expired; an authorized order
-- names its hold's charge, and keeps naming it once the hold ended.
--
-- SQLite cannot change a CHECK constraint in place, so orders is rebuilt by
-- the recipe of 0008_refunds.sql, and with it every table that refers to
-- orders or to one of the tables rebuilt: payment_attempts (which gains its
-- capture mode), provider_requests, refunds, refund_requests, late_charges,
-- merchant_events, event_deliveries and event_delivery_attempts. Foreign
-- keys stay on inside the migration's transaction, so each copy refers to
-- the new copy of its parent, the children are dropped before their
-- parents, and renaming a parent renames the references to it. Every index
-- of the rebuilt tables is created again at the end; event_endpoints is
-- only referred to, and stays. orders keeps its AUTOINCREMENT mark as in
-- 0008.

CREATE TABLE orders_new (
	-- AUTOINCREMENT never reuses an order number.
	id                  INTEGER PRIMARY KEY AUTOINCREMENT,
	amount_minor        INTEGER NOT NULL CHECK (amount_minor > 0),
	currency            TEXT NOT NULL CHECK (currency GLOB '[A-Z][A-Z][A-Z]'),
	description         TEXT NOT NULL,
	status              TEXT NOT NULL CHECK (status IN ('placed', 'payment_pending', 'paid', 'partially_refunded', 'refunded',
		'authorized', 'captured', 'voided', 'expired')),
	-- The provider's charge ID that paid the order, or whose hold it
	-- authorized; set once the checkout ends, and kept by its refunds and
	-- by the end of its hold.
	provider_payment_id TEXT CHECK (provider_payment_id <> ''),
	created_at          INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL,
	-- The last sequence number given to an event of the order
	-- (0010_merchant_events.sql).
	event_sequence      INTEGER NOT NULL DEFAULT 0 CHECK (event_sequence >= 0),
	CHECK ((status NOT IN ('placed', 'payment_pending')) = (provider_payment_id IS NOT NULL))
) STRICT;

INSERT INTO orders_new (id, amount_minor, currency, description, status, provider_payment_id, created_at, updated_at, event_sequence)
	SELECT id, amount_minor, currency, description, status, provider_payment_id, created_at, updated_at, event_sequence FROM orders;

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
	-- The charge of a succeeded attempt: for a manual capture, its hold.
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
	-- The provider the attempt is sent to (0011_providers.sql).
	provider            TEXT NOT NULL DEFAULT 'default' CHECK (provider <> ''),
	-- Every attempt before holds took the money at once.
	capture_mode        TEXT NOT NULL DEFAULT 'automatic' CHECK (capture_mode IN ('automatic', 'manual')),
	-- What the hold's deadline does; a manual capture's alone, and never
	-- missing from one.
	on_deadline         TEXT CHECK (on_deadline IN ('void', 'capture')),
	CHECK ((status = 'open') = (settled_at IS NULL)),
	CHECK (status <> 'succeeded' OR provider_payment_id IS NOT NULL),
	CHECK ((capture_mode = 'manual') = (on_deadline IS NOT NULL))
) STRICT;

INSERT INTO payment_attempts_new (idempotency_key, order_id, amount_minor, currency, card_hash, merchant_reference,
		status, provider_payment_id, workflow_started, created_at, last_checked_at, abandon_at, settled_at, card_hash_keyed, provider)
	SELECT idempotency_key, order_id, amount_minor, currency, card_hash, merchant_reference,
		status, provider_payment_id, workflow_started, created_at, last_checked_at, abandon_at, settled_at, card_hash_keyed, provider
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

CREATE TABLE refunds_new (
	-- The idempotency key sent with every request of the refund, and the ID
	-- of its workflow. It is ours; the merchant's key is request_key.
	idempotency_key     TEXT PRIMARY KEY NOT NULL CHECK (length(idempotency_key) = 36),
	-- NULL for an operator's refund of a charge that belongs to no order.
	order_id            INTEGER REFERENCES orders_new (id),
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
	-- The provider the refund is sent to (0011_providers.sql).
	provider            TEXT NOT NULL DEFAULT 'default' CHECK (provider <> ''),
	CHECK ((status = 'pending') = (settled_at IS NULL)),
	CHECK (status <> 'succeeded' OR provider_refund_id IS NOT NULL),
	CHECK ((request_key IS NULL) = (request_fingerprint IS NULL)),
	CHECK (origin = 'operator' OR order_id IS NOT NULL)
) STRICT;

INSERT INTO refunds_new (idempotency_key, order_id, charge_id, amount_minor, currency, reason, origin, merchant_reference,
		status, provider_refund_id, failure_reason, request_key, request_fingerprint, workflow_started, created_at,
		last_checked_at, settled_at, provider)
	SELECT idempotency_key, order_id, charge_id, amount_minor, currency, reason, origin, merchant_reference,
		status, provider_refund_id, failure_reason, request_key, request_fingerprint, workflow_started, created_at,
		last_checked_at, settled_at, provider
	FROM refunds;

CREATE TABLE refund_requests_new (
	id              INTEGER PRIMARY KEY,
	idempotency_key TEXT NOT NULL REFERENCES refunds_new (idempotency_key),
	-- When the request was sent.
	at              INTEGER NOT NULL,
	-- The HTTP status, or 0 when no response arrived.
	status_code     INTEGER NOT NULL CHECK (status_code = 0 OR status_code BETWEEN 100 AND 599),
	outcome         TEXT NOT NULL CHECK (outcome <> ''),
	replayed        INTEGER NOT NULL CHECK (replayed IN (0, 1)),
	-- How long the exchange took, in microseconds.
	duration_us     INTEGER NOT NULL CHECK (duration_us >= 0)
) STRICT;

INSERT INTO refund_requests_new (id, idempotency_key, at, status_code, outcome, replayed, duration_us)
	SELECT id, idempotency_key, at, status_code, outcome, replayed, duration_us FROM refund_requests;

-- The succeeded charges found for an attempt that did not settle with them,
-- and what the repair decided: the order adopted the charge, or the charge
-- is refunded. The attempt keeps its own status.
CREATE TABLE late_charges_new (
	charge_id    TEXT PRIMARY KEY NOT NULL CHECK (charge_id <> ''),
	attempt_key  TEXT NOT NULL REFERENCES payment_attempts_new (idempotency_key),
	order_id     INTEGER NOT NULL REFERENCES orders_new (id),
	amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),
	currency     TEXT NOT NULL CHECK (currency GLOB '[A-Z][A-Z][A-Z]'),
	decision     TEXT NOT NULL CHECK (decision IN ('adopted', 'refunded')),
	-- The repair's refund; NULL when refunds of others had returned the
	-- whole charge already.
	refund_key   TEXT REFERENCES refunds_new (idempotency_key),
	found_at     INTEGER NOT NULL,
	CHECK (decision = 'refunded' OR refund_key IS NULL)
) STRICT;

INSERT INTO late_charges_new (charge_id, attempt_key, order_id, amount_minor, currency, decision, refund_key, found_at)
	SELECT charge_id, attempt_key, order_id, amount_minor, currency, decision, refund_key, found_at FROM late_charges;

CREATE TABLE merchant_events_new (
	-- evt_ and 32 hex digits; also the webhook-id of every try.
	id             TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 36 AND id GLOB 'evt_*'),
	order_id       INTEGER NOT NULL REFERENCES orders_new (id),
	sequence       INTEGER NOT NULL CHECK (sequence > 0),
	type           TEXT NOT NULL CHECK (type IN ('payment.succeeded', 'payment.declined', 'payment.abandoned',
		'payment.not_processed', 'payment.authorized', 'payment.captured', 'payment.voided', 'payment.authorization_expired',
		'refund.succeeded', 'refund.failed', 'refund.not_processed')),
	-- The attempt of a payment.* event, the refund of a refund.* event.
	attempt_key    TEXT NOT NULL,
	refund_key     TEXT NOT NULL,
	amount_minor   INTEGER NOT NULL CHECK (amount_minor > 0),
	currency       TEXT NOT NULL CHECK (currency GLOB '[A-Z][A-Z][A-Z]'),
	-- The order's status once the change was committed.
	order_status   TEXT NOT NULL,
	-- The provider's payment or refund id, when known.
	provider_id    TEXT NOT NULL,
	-- The charge a refund returns money from.
	charge_id      TEXT NOT NULL,
	-- The attempt's or the refund's status that the event reports.
	status         TEXT NOT NULL CHECK (status <> ''),
	failure_reason TEXT NOT NULL,
	created_at     INTEGER NOT NULL,
	UNIQUE (order_id, sequence),
	CHECK ((type GLOB 'payment.*') = (attempt_key <> '' AND refund_key = '')),
	CHECK ((type GLOB 'refund.*') = (refund_key <> '' AND attempt_key = ''))
) STRICT;

INSERT INTO merchant_events_new (id, order_id, sequence, type, attempt_key, refund_key, amount_minor, currency,
		order_status, provider_id, charge_id, status, failure_reason, created_at)
	SELECT id, order_id, sequence, type, attempt_key, refund_key, amount_minor, currency,
		order_status, provider_id, charge_id, status, failure_reason, created_at
	FROM merchant_events;

CREATE TABLE event_deliveries_new (
	id               INTEGER PRIMARY KEY,
	event_id         TEXT NOT NULL REFERENCES merchant_events_new (id),
	endpoint_id      TEXT NOT NULL REFERENCES event_endpoints (id),
	-- pending until a 2xx (delivered), a 410 (gone) or the end of the
	-- retry schedule (given_up); a replay makes it pending again.
	status           TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'gone', 'given_up')),
	-- Every try so far, and the tries that failed since it was queued or
	-- last replayed: the retry schedule's step.
	attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
	failed_in_round  INTEGER NOT NULL DEFAULT 0 CHECK (failed_in_round BETWEEN 0 AND attempts),
	next_attempt_at  INTEGER NOT NULL,
	-- A dispatcher that claimed it holds it until then.
	lease_until      INTEGER,
	-- When the oldest failed try since it was queued or last replayed
	-- happened; NULL when none failed.
	first_failed_at  INTEGER,
	created_at       INTEGER NOT NULL,
	delivered_at     INTEGER,
	UNIQUE (event_id, endpoint_id),
	CHECK ((status = 'delivered') = (delivered_at IS NOT NULL))
) STRICT;

INSERT INTO event_deliveries_new (id, event_id, endpoint_id, status, attempts, failed_in_round, next_attempt_at,
		lease_until, first_failed_at, created_at, delivered_at)
	SELECT id, event_id, endpoint_id, status, attempts, failed_in_round, next_attempt_at,
		lease_until, first_failed_at, created_at, delivered_at
	FROM event_deliveries;

CREATE TABLE event_delivery_attempts_new (
	id              INTEGER PRIMARY KEY,
	delivery_id     INTEGER NOT NULL REFERENCES event_deliveries_new (id),
	-- The endpoint, again, so that its log is read by one index.
	endpoint_id     TEXT NOT NULL REFERENCES event_endpoints (id),
	attempt         INTEGER NOT NULL CHECK (attempt > 0),
	at              INTEGER NOT NULL,
	result          TEXT NOT NULL CHECK (result IN ('delivered', 'failed', 'gone', 'given_up')),
	-- The HTTP status, or 0 when no answer arrived; error then says why.
	http_status     INTEGER NOT NULL CHECK (http_status = 0 OR http_status BETWEEN 100 AND 599),
	error           TEXT NOT NULL,
	-- How long the exchange took, in microseconds.
	duration_us     INTEGER NOT NULL CHECK (duration_us >= 0),
	-- When a failed delivery is tried again.
	next_attempt_at INTEGER,
	UNIQUE (delivery_id, attempt)
) STRICT;

INSERT INTO event_delivery_attempts_new (id, delivery_id, endpoint_id, attempt, at, result, http_status, error,
		duration_us, next_attempt_at)
	SELECT id, delivery_id, endpoint_id, attempt, at, result, http_status, error, duration_us, next_attempt_at
	FROM event_delivery_attempts;

-- Children first, so that no drop leaves a reference behind.
DROP TABLE event_delivery_attempts;
DROP TABLE event_deliveries;
DROP TABLE merchant_events;
DROP TABLE late_charges;
DROP TABLE refund_requests;
DROP TABLE refunds;
DROP TABLE provider_requests;
DROP TABLE payment_attempts;
DROP TABLE orders;
ALTER TABLE orders_new RENAME TO orders;
ALTER TABLE payment_attempts_new RENAME TO payment_attempts;
ALTER TABLE provider_requests_new RENAME TO provider_requests;
ALTER TABLE refunds_new RENAME TO refunds;
ALTER TABLE refund_requests_new RENAME TO refund_requests;
ALTER TABLE late_charges_new RENAME TO late_charges;
ALTER TABLE merchant_events_new RENAME TO merchant_events;
ALTER TABLE event_deliveries_new RENAME TO event_deliveries;
ALTER TABLE event_delivery_attempts_new RENAME TO event_delivery_attempts;

-- The indexes of 0001 to 0010 on the rebuilt tables, which went with the
-- old ones.
CREATE UNIQUE INDEX payment_attempts_one_open_per_order ON payment_attempts (order_id) WHERE status = 'open';
CREATE INDEX payment_attempts_by_order ON payment_attempts (order_id, created_at);
CREATE INDEX payment_attempts_unstarted ON payment_attempts (created_at) WHERE status = 'open' AND NOT workflow_started;
CREATE INDEX payment_attempts_succeeded_by_charge ON payment_attempts (provider_payment_id) WHERE status = 'succeeded';
CREATE INDEX provider_requests_by_key ON provider_requests (idempotency_key, at, id);
CREATE UNIQUE INDEX refunds_one_per_request_key ON refunds (request_key) WHERE status <> 'not_processed';
CREATE UNIQUE INDEX refunds_one_per_late_charge ON refunds (charge_id) WHERE origin = 'late_charge' AND status <> 'not_processed';
CREATE INDEX refunds_by_order ON refunds (order_id, created_at);
CREATE INDEX refunds_by_charge ON refunds (charge_id, status);
CREATE INDEX refunds_unstarted ON refunds (created_at) WHERE status = 'pending' AND NOT workflow_started;
CREATE INDEX refunds_pending ON refunds (created_at) WHERE status = 'pending';
CREATE INDEX refunds_succeeded_by_provider_id ON refunds (provider_refund_id) WHERE status = 'succeeded';
CREATE INDEX refund_requests_by_key ON refund_requests (idempotency_key, at, id);
CREATE INDEX late_charges_by_order ON late_charges (order_id);
CREATE INDEX event_deliveries_due ON event_deliveries (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX event_deliveries_failing ON event_deliveries (endpoint_id, first_failed_at) WHERE status = 'pending';
CREATE INDEX event_delivery_attempts_by_endpoint ON event_delivery_attempts (endpoint_id, at, id);

-- The hold of a manual capture's attempt that succeeded, and how it ended.
CREATE TABLE holds (
	attempt_key    TEXT PRIMARY KEY NOT NULL REFERENCES payment_attempts (idempotency_key),
	order_id       INTEGER NOT NULL REFERENCES orders (id),
	-- The provider's id of the hold: the attempt's provider_payment_id.
	charge_id      TEXT NOT NULL CHECK (charge_id <> ''),
	-- What was authorized: the attempt's amount.
	amount_minor   INTEGER NOT NULL CHECK (amount_minor > 0),
	currency       TEXT NOT NULL CHECK (currency GLOB '[A-Z][A-Z][A-Z]'),
	-- What a capture took; 0 unless captured.
	captured_minor INTEGER NOT NULL DEFAULT 0,
	status         TEXT NOT NULL CHECK (status IN ('authorized', 'captured', 'voided', 'expired')),
	-- When the provider said the hold expires; NULL when it did not say.
	capture_before INTEGER,
	-- When chargeonce ends the hold if nobody did, and how.
	deadline       INTEGER NOT NULL,
	on_deadline    TEXT NOT NULL CHECK (on_deadline IN ('void', 'capture')),
	authorized_at  INTEGER NOT NULL,
	ended_at       INTEGER,
	CHECK ((status = 'authorized') = (ended_at IS NULL)),
	CHECK ((status = 'captured') = (captured_minor > 0)),
	CHECK (captured_minor BETWEEN 0 AND amount_minor)
) STRICT;

-- An order authorized once is never offered for payment again, so it has
-- one hold at most.
CREATE UNIQUE INDEX holds_one_per_order ON holds (order_id);

-- The captures and voids of holds: each is the outbox of its workflow, as a
-- refund is.
CREATE TABLE hold_moves (
	-- The idempotency key sent with every request of the move, and the ID
	-- of its workflow. It is ours; the merchant's key is request_key.
	idempotency_key     TEXT PRIMARY KEY NOT NULL CHECK (length(idempotency_key) = 36),
	kind                TEXT NOT NULL CHECK (kind IN ('capture', 'void')),
	order_id            INTEGER NOT NULL REFERENCES orders (id),
	attempt_key         TEXT NOT NULL REFERENCES holds (attempt_key),
	charge_id           TEXT NOT NULL CHECK (charge_id <> ''),
	-- What a capture takes; what a void releases: the hold's amount.
	amount_minor        INTEGER NOT NULL CHECK (amount_minor > 0),
	currency            TEXT NOT NULL CHECK (currency GLOB '[A-Z][A-Z][A-Z]'),
	origin              TEXT NOT NULL CHECK (origin IN ('merchant', 'deadline')),
	provider            TEXT NOT NULL CHECK (provider <> ''),
	merchant_reference  TEXT NOT NULL UNIQUE,
	status              TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'declined', 'failed', 'not_processed')),
	-- The provider's hold decline code of a declined move.
	decline_code        TEXT NOT NULL DEFAULT '',
	-- The Idempotency-Key of the API request that asked for the move, and
	-- the SHA-256 of that request's body; NULL for the deadline's moves.
	request_key         TEXT CHECK (request_key <> ''),
	request_fingerprint TEXT CHECK (length(request_fingerprint) = 64 AND request_fingerprint NOT GLOB '*[^0-9a-f]*'),
	-- 0 until the workflow is known to run: the move row is the outbox.
	workflow_started    INTEGER NOT NULL DEFAULT 0 CHECK (workflow_started IN (0, 1)),
	created_at          INTEGER NOT NULL,
	last_checked_at     INTEGER,
	settled_at          INTEGER,
	CHECK ((status = 'pending') = (settled_at IS NULL)),
	CHECK (status = 'declined' OR decline_code = ''),
	CHECK ((request_key IS NULL) = (request_fingerprint IS NULL)),
	CHECK (origin = 'merchant' OR request_key IS NULL)
) STRICT;

-- A hold is captured or voided once: at most one of its moves is pending
-- or succeeded.
CREATE UNIQUE INDEX hold_moves_one_holding_per_hold ON hold_moves (attempt_key) WHERE status IN ('pending', 'succeeded');

-- A request key names one move, until that move is not_processed.
CREATE UNIQUE INDEX hold_moves_one_per_request_key ON hold_moves (request_key) WHERE status <> 'not_processed';

CREATE INDEX hold_moves_by_order ON hold_moves (order_id, created_at);

-- The outbox sweep: pending moves whose workflow was never started.
CREATE INDEX hold_moves_unstarted ON hold_moves (created_at) WHERE status = 'pending' AND NOT workflow_started;

CREATE TABLE hold_move_requests (
	id              INTEGER PRIMARY KEY,
	idempotency_key TEXT NOT NULL REFERENCES hold_moves (idempotency_key),
	-- When the request was sent.
	at              INTEGER NOT NULL,
	-- The HTTP status, or 0 when no response arrived.
	status_code     INTEGER NOT NULL CHECK (status_code = 0 OR status_code BETWEEN 100 AND 599),
	outcome         TEXT NOT NULL CHECK (outcome <> ''),
	replayed        INTEGER NOT NULL CHECK (replayed IN (0, 1)),
	-- How long the exchange took, in microseconds.
	duration_us     INTEGER NOT NULL CHECK (duration_us >= 0)
) STRICT;

CREATE INDEX hold_move_requests_by_key ON hold_move_requests (idempotency_key, at, id);
