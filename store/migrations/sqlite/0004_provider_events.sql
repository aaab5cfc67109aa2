-- The events the provider sent (signed webhooks), each kept once by its
-- webhook-id: a duplicate delivery finds its row and does nothing more, and
-- an event for no known attempt stays here for the books.

CREATE TABLE provider_events (
	-- The sender's webhook-id, the same on every delivery of one event.
	id                 TEXT PRIMARY KEY NOT NULL CHECK (id <> ''),
	-- charge.succeeded or charge.failed.
	type               TEXT NOT NULL CHECK (type <> ''),
	charge_id          TEXT NOT NULL CHECK (charge_id <> ''),
	merchant_reference TEXT NOT NULL CHECK (merchant_reference <> ''),
	-- The verified body as received.
	payload            TEXT NOT NULL,
	received_at        INTEGER NOT NULL,
	-- What handling the event did (signaled, settled, unknown_reference);
	-- NULL until it is handled, so that a redelivery of an event whose
	-- handling failed is handled again.
	result             TEXT CHECK (result <> ''),
	handled_at         INTEGER,
	CHECK ((result IS NULL) = (handled_at IS NULL))
) STRICT;

CREATE INDEX provider_events_merchant_reference ON provider_events (merchant_reference);
