-- The operator's console: the sessions of signed-in operators, the audit
-- log of every operator action, and what a person decided about each
-- settlement exception.

-- One operator signed in. The cookie's token is never stored, only its
-- SHA-256, so that reading the table signs no one in. key_id names the API
-- key that signed in, with no reference to api_keys: every request checks
-- the key again, so that revoking it ends the session.
CREATE TABLE console_sessions (
	token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
	key_id     text NOT NULL CHECK (key_id <> ''),
	-- Every form of the session carries it.
	csrf_token text NOT NULL CHECK (csrf_token <> ''),
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL CHECK (expires_at > created_at)
);

-- Creating a session deletes the expired ones, by this index.
CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);

-- Every operator action: who, what, when, the request and the result. The
-- log is append-only: the triggers below refuse to update, delete or
-- truncate, so that neither a bug nor a careless statement rewrites
-- history. Its key names are copied in, not referenced, so that the log
-- outlives its keys.
CREATE TABLE audit_log (
	-- The ids order the entries.
	id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at              timestamptz NOT NULL,
	key_id          text NOT NULL CHECK (key_id <> ''),
	key_name        text NOT NULL,
	via             text NOT NULL CHECK (via IN ('api', 'console')),
	action          text NOT NULL CHECK (action <> ''),
	method          text NOT NULL CHECK (method <> ''),
	path            text NOT NULL CHECK (path <> ''),
	-- The request body, at most 8 KiB (store.MaxAuditRequest); the caller
	-- cuts a longer one.
	request         text NOT NULL CHECK (octet_length(request) <= 8192),
	-- Empty when the request had no Idempotency-Key.
	idempotency_key text NOT NULL,
	status          integer NOT NULL CHECK (status BETWEEN 100 AND 599),
	result          text NOT NULL
);

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'audit_log is append-only';
END;
$$;

CREATE TRIGGER audit_log_no_update_or_delete BEFORE UPDATE OR DELETE ON audit_log
	FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

-- TRUNCATE fires no row triggers, so it has one of its own.
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
	FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- What a person decided about one settlement exception, named by its
-- store.ExceptionID, which survives a rerun of the date. There is no
-- reference to the exceptions: a rerun replaces them, and the resolution
-- stays. The first resolution is kept.
CREATE TABLE settlement_resolutions (
	report_date  text NOT NULL CHECK (report_date ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
	exception_id text NOT NULL CHECK (exception_id ~ '^[0-9a-f]{16}$'),
	note         text NOT NULL CHECK (note <> ''),
	key_id       text NOT NULL CHECK (key_id <> ''),
	key_name     text NOT NULL,
	resolved_at  timestamptz NOT NULL,
	PRIMARY KEY (report_date, exception_id)
);
