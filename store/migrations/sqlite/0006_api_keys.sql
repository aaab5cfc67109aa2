-- The checkout API's keys (internal/apikey). The secret is never stored,
-- only its SHA-256.

CREATE TABLE api_keys (
	-- The key's public id, 16 hex digits.
	id          TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 16),
	name        TEXT NOT NULL,
	secret_hash TEXT NOT NULL CHECK (length(secret_hash) = 64),
	-- Comma-separated, in apikey's canonical order.
	scopes      TEXT NOT NULL CHECK (scopes <> ''),
	created_at  INTEGER NOT NULL,
	-- When the key stops working; NULL while no revocation is set. It may
	-- lie in the future, so that an old and a new key overlap.
	revoked_at  INTEGER
) STRICT;
