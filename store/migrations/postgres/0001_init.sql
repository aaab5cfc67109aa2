-- Orders, payment attempts and the provider request log.
--
-- Times are timestamptz, which PostgreSQL keeps to the microsecond; the store
-- truncates every time to the microsecond before writing it, so that what is
-- read back equals what was written.

CREATE TABLE orders (
	-- Order numbers start at 1001 so that they look like order numbers.
	id                  bigint GENERATED ALWAYS AS IDENTITY (START WITH 1001) PRIMARY KEY,
	amount_minor        bigint NOT NULL CHECK (amount_minor > 0),
	currency            text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
	description         text NOT NULL,
	status              text NOT NULL CHECK (status IN ('placed', 'payment_pending', 'paid')),
	-- The provider's charge ID, set when the order is paid.
	provider_payment_id text CHECK (provider_payment_id <> ''),
	created_at          timestamptz NOT NULL,
	updated_at          timestamptz NOT NULL,
	CHECK ((status = 'paid') = (provider_payment_id IS NOT NULL))
);

CREATE TABLE payment_attempts (
	-- The idempotency key sent with every request of the attempt, and the ID
	-- of its workflow.
	idempotency_key     text PRIMARY KEY CHECK (idempotency_key ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'),
	order_id            bigint NOT NULL REFERENCES orders (id),
	amount_minor        bigint NOT NULL CHECK (amount_minor > 0),
	currency            text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
	-- SHA-256 of the card token, in lower-case hex; the token is never stored.
	card_hash           text NOT NULL CHECK (card_hash ~ '^[0-9a-f]{64}$'),
	merchant_reference  text NOT NULL UNIQUE,
	status              text NOT NULL CHECK (status IN ('open', 'succeeded', 'declined', 'abandoned', 'failed')),
	provider_payment_id text CHECK (provider_payment_id <> ''),
	-- False until the workflow is known to run: the attempt row is the outbox.
	workflow_started    boolean NOT NULL DEFAULT false,
	created_at          timestamptz NOT NULL,
	last_checked_at     timestamptz,
	abandon_at          timestamptz NOT NULL,
	-- When the attempt reached its terminal status.
	settled_at          timestamptz,
	CHECK ((status = 'open') = (settled_at IS NULL)),
	CHECK (status <> 'succeeded' OR provider_payment_id IS NOT NULL)
);

-- At most one open attempt per order: a concurrent checkout cannot start a
-- second charge for the same order.
CREATE UNIQUE INDEX payment_attempts_one_open_per_order ON payment_attempts (order_id) WHERE status = 'open';

CREATE INDEX payment_attempts_by_order ON payment_attempts (order_id, created_at);

-- The outbox sweep: open attempts whose workflow was never started.
CREATE INDEX payment_attempts_unstarted ON payment_attempts (created_at) WHERE status = 'open' AND NOT workflow_started;

CREATE TABLE provider_requests (
	id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	idempotency_key text NOT NULL REFERENCES payment_attempts (idempotency_key),
	-- When the request was sent.
	at              timestamptz NOT NULL,
	-- The HTTP status, or 0 when no response arrived.
	status_code     integer NOT NULL CHECK (status_code = 0 OR status_code BETWEEN 100 AND 599),
	outcome         text NOT NULL CHECK (outcome <> ''),
	replayed        boolean NOT NULL,
	-- How long the exchange took, in microseconds.
	duration_us     bigint NOT NULL CHECK (duration_us >= 0)
);

CREATE INDEX provider_requests_by_key ON provider_requests (idempotency_key, at, id);
