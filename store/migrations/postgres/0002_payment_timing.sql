-- The payment timing that the workers publish and every checkout reads.
--
-- The worker owns the timing: it checks the abandon deadline against the
-- provider's key retention, then publishes the timing here, in the database
-- the API and the workers already share. Every checkout and every outbox
-- sweep start reads it from here, so the deadline of a new attempt and the
-- timing of its workflow are the ones that were checked.

CREATE TABLE payment_timing (
	-- There is one timing in force: the table holds at most one row.
	id           integer PRIMARY KEY CHECK (id = 1),
	-- The timing as JSON text, as the workflows encode it; the store does
	-- not read it.
	timing       text NOT NULL CHECK (timing <> ''),
	published_at timestamptz NOT NULL
);
