-- The providers that the payment workers reach, which the API checks its
-- routing against at start: an attempt sent to a provider that no worker
-- reaches would fail.
--
-- Each worker replaces the set at its start, so the set is the one of the
-- worker that started last.

CREATE TABLE worker_providers (
	name         text PRIMARY KEY CHECK (name <> ''),
	published_at timestamptz NOT NULL
);

-- Why each attempt went to its provider, for people: the routing rule that
-- chose it, or a failover from another provider. Attempts stored before
-- have none.
ALTER TABLE payment_attempts ADD COLUMN routed_by text;
