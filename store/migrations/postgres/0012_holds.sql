-- Holds: manual capture. A checkout of capture mode manual only authorizes
-- the order's amount, which leaves a hold on the card; a capture or a void
-- (a hold move) ends it, or the hold's deadline does. The orders gain the
-- statuses authorized, captured, voided and expired; an authorized order
-- names its hold's charge, and keeps naming it once the hold ended.

ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check
	CHECK (status IN ('placed', 'payment_pending', 'paid', 'partially_refunded', 'refunded',
		'authorized', 'captured', 'voided', 'expired'));
-- The charge that paid the order, or whose hold it authorized, is kept by
-- its refunds and by the end of its hold.
ALTER TABLE orders DROP CONSTRAINT orders_paid_has_charge;
ALTER TABLE orders ADD CONSTRAINT orders_settled_has_charge
	CHECK ((status NOT IN ('placed', 'payment_pending')) = (provider_payment_id IS NOT NULL));

-- Every attempt before holds took the money at once. What the hold's
-- deadline does is a manual capture's alone, and never missing from one.
ALTER TABLE payment_attempts ADD COLUMN capture_mode text NOT NULL DEFAULT 'automatic'
	CHECK (capture_mode IN ('automatic', 'manual'));
ALTER TABLE payment_attempts ADD COLUMN on_deadline text CHECK (on_deadline IN ('void', 'capture'));
ALTER TABLE payment_attempts ADD CONSTRAINT payment_attempts_manual_has_deadline_action
	CHECK ((capture_mode = 'manual') = (on_deadline IS NOT NULL));

-- The hold of a manual capture's attempt that succeeded, and how it ended.
CREATE TABLE holds (
	attempt_key    text PRIMARY KEY REFERENCES payment_attempts (idempotency_key),
	order_id       bigint NOT NULL REFERENCES orders (id),
	-- The provider's id of the hold: the attempt's provider_payment_id.
	charge_id      text NOT NULL CHECK (charge_id <> ''),
	-- What was authorized: the attempt's amount.
	amount_minor   bigint NOT NULL CHECK (amount_minor > 0),
	currency       text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
	-- What a capture took; 0 unless captured.
	captured_minor bigint NOT NULL DEFAULT 0,
	status         text NOT NULL CHECK (status IN ('authorized', 'captured', 'voided', 'expired')),
	-- When the provider said the hold expires; NULL when it did not say.
	capture_before timestamptz,
	-- When chargeonce ends the hold if nobody did, and how.
	deadline       timestamptz NOT NULL,
	on_deadline    text NOT NULL CHECK (on_deadline IN ('void', 'capture')),
	authorized_at  timestamptz NOT NULL,
	ended_at       timestamptz,
	CHECK ((status = 'authorized') = (ended_at IS NULL)),
	CHECK ((status = 'captured') = (captured_minor > 0)),
	CHECK (captured_minor BETWEEN 0 AND amount_minor)
);

-- An order authorized once is never offered for payment again, so it has
-- one hold at most.
CREATE UNIQUE INDEX holds_one_per_order ON holds (order_id);

-- The captures and voids of holds: each is the outbox of its workflow, as a
-- refund is.
CREATE TABLE hold_moves (
	-- The idempotency key sent with every request of the move, and the ID
	-- of its workflow. It is ours; the merchant's key is request_key.
	idempotency_key     text PRIMARY KEY CHECK (idempotency_key ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'),
	kind                text NOT NULL CHECK (kind IN ('capture', 'void')),
	order_id            bigint NOT NULL REFERENCES orders (id),
	attempt_key         text NOT NULL REFERENCES holds (attempt_key),
	charge_id           text NOT NULL CHECK (charge_id <> ''),
	-- What a capture takes; what a void releases: the hold's amount.
	amount_minor        bigint NOT NULL CHECK (amount_minor > 0),
	currency            text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
	origin              text NOT NULL CHECK (origin IN ('merchant', 'deadline')),
	provider            text NOT NULL CHECK (provider <> ''),
	merchant_reference  text NOT NULL UNIQUE,
	status              text NOT NULL CHECK (status IN ('pending', 'succeeded', 'declined', 'failed', 'not_processed')),
	-- The provider's hold decline code of a declined move.
	decline_code        text NOT NULL DEFAULT '',
	-- The Idempotency-Key of the API request that asked for the move, and
	-- the SHA-256 of that request's body; NULL for the deadline's moves.
	request_key         text CHECK (request_key <> ''),
	request_fingerprint text CHECK (request_fingerprint ~ '^[0-9a-f]{64}$'),
	-- False until the workflow is known to run: the move row is the outbox.
	workflow_started    boolean NOT NULL DEFAULT false,
	created_at          timestamptz NOT NULL,
	last_checked_at     timestamptz,
	settled_at          timestamptz,
	CHECK ((status = 'pending') = (settled_at IS NULL)),
	CHECK (status = 'declined' OR decline_code = ''),
	CHECK ((request_key IS NULL) = (request_fingerprint IS NULL)),
	CHECK (origin = 'merchant' OR request_key IS NULL)
);

-- A hold is captured or voided once: at most one of its moves is pending
-- or succeeded.
CREATE UNIQUE INDEX hold_moves_one_holding_per_hold ON hold_moves (attempt_key) WHERE status IN ('pending', 'succeeded');

-- A request key names one move, until that move is not_processed.
CREATE UNIQUE INDEX hold_moves_one_per_request_key ON hold_moves (request_key) WHERE status <> 'not_processed';

CREATE INDEX hold_moves_by_order ON hold_moves (order_id, created_at);

-- The outbox sweep: pending moves whose workflow was never started.
CREATE INDEX hold_moves_unstarted ON hold_moves (created_at) WHERE status = 'pending' AND NOT workflow_started;

CREATE TABLE hold_move_requests (
	id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	idempotency_key text NOT NULL REFERENCES hold_moves (idempotency_key),
	-- When the request was sent.
	at              timestamptz NOT NULL,
	-- The HTTP status, or 0 when no response arrived.
	status_code     integer NOT NULL CHECK (status_code = 0 OR status_code BETWEEN 100 AND 599),
	outcome         text NOT NULL CHECK (outcome <> ''),
	replayed        boolean NOT NULL,
	-- How long the exchange took, in microseconds.
	duration_us     bigint NOT NULL CHECK (duration_us >= 0)
);

CREATE INDEX hold_move_requests_by_key ON hold_move_requests (idempotency_key, at, id);

-- The merchant events of holds.
ALTER TABLE merchant_events DROP CONSTRAINT merchant_events_type_check;
ALTER TABLE merchant_events ADD CONSTRAINT merchant_events_type_check CHECK (type IN ('payment.succeeded', 'payment.declined',
	'payment.abandoned', 'payment.not_processed', 'payment.authorized', 'payment.captured', 'payment.voided',
	'payment.authorization_expired', 'refund.succeeded', 'refund.failed', 'refund.not_processed'));
