-- Refunds: refund intents and their request logs, the repair of late
-- charges, and the order statuses partially_refunded and refunded.

ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check
	CHECK (status IN ('placed', 'payment_pending', 'paid', 'partially_refunded', 'refunded'));
-- The charge that paid the order is kept by its refunds.
ALTER TABLE orders DROP CONSTRAINT orders_check;
ALTER TABLE orders ADD CONSTRAINT orders_paid_has_charge
	CHECK ((status IN ('paid', 'partially_refunded', 'refunded')) = (provider_payment_id IS NOT NULL));

CREATE TABLE refunds (
	-- The idempotency key sent with every request of the refund, and the ID
	-- of its workflow. It is ours; the merchant's key is request_key.
	idempotency_key     text PRIMARY KEY CHECK (idempotency_key ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'),
	-- NULL for an operator's refund of a charge that belongs to no order.
	order_id            bigint REFERENCES orders (id),
	charge_id           text NOT NULL CHECK (charge_id <> ''),
	amount_minor        bigint NOT NULL CHECK (amount_minor > 0),
	currency            text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
	reason              text NOT NULL,
	origin              text NOT NULL CHECK (origin IN ('merchant', 'operator', 'late_charge')),
	merchant_reference  text NOT NULL UNIQUE,
	status              text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'not_processed')),
	provider_refund_id  text CHECK (provider_refund_id <> ''),
	failure_reason      text NOT NULL DEFAULT '',
	-- The Idempotency-Key of the API request that asked for the refund, and
	-- the SHA-256 of that request's body; NULL for the repair's refunds.
	request_key         text CHECK (request_key <> ''),
	request_fingerprint text CHECK (request_fingerprint ~ '^[0-9a-f]{64}$'),
	-- False until the workflow is known to run: the refund row is the outbox.
	workflow_started    boolean NOT NULL DEFAULT false,
	created_at          timestamptz NOT NULL,
	last_checked_at     timestamptz,
	-- When the refund left pending; a later failure keeps it.
	settled_at          timestamptz,
	CHECK ((status = 'pending') = (settled_at IS NULL)),
	CHECK (status <> 'succeeded' OR provider_refund_id IS NOT NULL),
	CHECK ((request_key IS NULL) = (request_fingerprint IS NULL)),
	CHECK (origin = 'operator' OR order_id IS NOT NULL)
);

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

-- Matching pages through the succeeded refunds by the provider's refund id,
-- byte by byte.
CREATE INDEX refunds_succeeded_by_provider_id ON refunds (provider_refund_id COLLATE "C") WHERE status = 'succeeded';

CREATE TABLE refund_requests (
	id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	idempotency_key text NOT NULL REFERENCES refunds (idempotency_key),
	-- When the request was sent.
	at              timestamptz NOT NULL,
	-- The HTTP status, or 0 when no response arrived.
	status_code     integer NOT NULL CHECK (status_code = 0 OR status_code BETWEEN 100 AND 599),
	outcome         text NOT NULL CHECK (outcome <> ''),
	replayed        boolean NOT NULL,
	-- How long the exchange took, in microseconds.
	duration_us     bigint NOT NULL CHECK (duration_us >= 0)
);

CREATE INDEX refund_requests_by_key ON refund_requests (idempotency_key, at, id);

-- The succeeded charges found for an attempt that did not settle with them,
-- and what the repair decided: the order adopted the charge, or the charge
-- is refunded. The attempt keeps its own status.
CREATE TABLE late_charges (
	charge_id    text PRIMARY KEY CHECK (charge_id <> ''),
	attempt_key  text NOT NULL REFERENCES payment_attempts (idempotency_key),
	order_id     bigint NOT NULL REFERENCES orders (id),
	amount_minor bigint NOT NULL CHECK (amount_minor > 0),
	currency     text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
	decision     text NOT NULL CHECK (decision IN ('adopted', 'refunded')),
	-- The repair's refund; NULL when refunds of others had returned the
	-- whole charge already.
	refund_key   text REFERENCES refunds (idempotency_key),
	found_at     timestamptz NOT NULL,
	CHECK (decision = 'refunded' OR refund_key IS NULL)
);

CREATE INDEX late_charges_by_order ON late_charges (order_id);
