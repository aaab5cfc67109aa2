-- Merchant events: the merchant's endpoints, the outbox of events that the
-- settlements of attempts and refunds write in their own transaction, one
-- delivery of each event per endpoint that wants it, and the log of every
-- try.

-- The last sequence number given to an event of the order. The transaction
-- that writes an event bumps it, which takes the order's row lock, so that
-- the numbers of one order have no gaps however its changes interleave.
ALTER TABLE orders ADD COLUMN event_sequence INTEGER NOT NULL DEFAULT 0 CHECK (event_sequence >= 0);

CREATE TABLE event_endpoints (
	-- we_ and 32 hex digits.
	id                         TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 35 AND id GLOB 'we_*'),
	url                        TEXT NOT NULL CHECK (url <> ''),
	-- The types it wants, each between commas (",payment.succeeded,"), so
	-- that a LIKE finds one; empty means every type.
	event_types                TEXT NOT NULL,
	description                TEXT NOT NULL,
	-- whsec_ secrets: the current one, and the one it replaced, which
	-- signs beside it until previous_secret_expires_at.
	secret                     TEXT NOT NULL CHECK (secret GLOB 'whsec_*'),
	previous_secret            TEXT CHECK (previous_secret GLOB 'whsec_*'),
	previous_secret_expires_at INTEGER,
	disabled_at                INTEGER,
	disabled_reason            TEXT NOT NULL DEFAULT '',
	created_at                 INTEGER NOT NULL,
	CHECK ((previous_secret IS NULL) = (previous_secret_expires_at IS NULL)),
	CHECK ((disabled_at IS NULL) = (disabled_reason = ''))
) STRICT;

CREATE TABLE merchant_events (
	-- evt_ and 32 hex digits; also the webhook-id of every try.
	id             TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 36 AND id GLOB 'evt_*'),
	order_id       INTEGER NOT NULL REFERENCES orders (id),
	sequence       INTEGER NOT NULL CHECK (sequence > 0),
	type           TEXT NOT NULL CHECK (type IN ('payment.succeeded', 'payment.declined', 'payment.abandoned',
		'payment.not_processed', 'refund.succeeded', 'refund.failed', 'refund.not_processed')),
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

CREATE TABLE event_deliveries (
	id               INTEGER PRIMARY KEY,
	event_id         TEXT NOT NULL REFERENCES merchant_events (id),
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

-- The dispatchers' claim: pending deliveries by the time they are due.
CREATE INDEX event_deliveries_due ON event_deliveries (next_attempt_at, id) WHERE status = 'pending';

-- An endpoint's failing deliveries, for its failing-since time.
CREATE INDEX event_deliveries_failing ON event_deliveries (endpoint_id, first_failed_at) WHERE status = 'pending';

CREATE TABLE event_delivery_attempts (
	id              INTEGER PRIMARY KEY,
	delivery_id     INTEGER NOT NULL REFERENCES event_deliveries (id),
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

CREATE INDEX event_delivery_attempts_by_endpoint ON event_delivery_attempts (endpoint_id, at, id);
