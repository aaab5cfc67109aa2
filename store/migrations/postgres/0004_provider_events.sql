-- The events the provider sent (signed webhooks), each kept once by its
-- webhook-id: a duplicate delivery finds its row and does nothing more, and
-- an event for no known attempt stays here for the books.

CREATE TABLE provider_events (
	-- The sender's webhook-id, the same on every delivery of one event.
	id                 text PRIMARY KEY CHECK (id <> ''),
	-- charge.succeeded or charge.failed.
	type               text NOT NULL CHECK (type <> ''),
	charge_id          text NOT NULL CHECK (charge_id <> ''),
	merchant_reference text NOT NULL CHECK (merchant_reference <> ''),
	-- The verified body as received.
	payload            text NOT NULL,
	received_at        timestamptz NOT NULL,
	-- What handling the event did (signaled, settled, unknown_reference);
	-- NULL until it is handled, so that a redelivery of an event whose
	-- handling failed is handled again.
	result             text CHECK (result <> ''),
	handled_at         timestamptz,
	CHECK ((result IS NULL) = (handled_at IS NULL))
);

CREATE INDEX provider_events_merchant_reference ON provider_events (merchant_reference);
