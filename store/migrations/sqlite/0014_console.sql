-- The operator's console: the sessions of signed-in operators, the audit
-- log of every operator action, and what a person decided about each
-- settlement exception.
--
-- Times are INTEGER microseconds since the Unix epoch, in UTC.

-- One operator signed in. The cookie's token is never stored, only its
-- SHA-256, so that reading the table signs no one in. key_id names the API
-- key that signed in, with no reference to api_keys: every request checks
-- the key again, so that revoking it ends the session.
CREATE TABLE console_sessions (
	token_hash TEXT PRIMARY KEY NOT NULL CHECK (length(token_hash) = 64 AND token_hash NOT GLOB '*[^0-9a-f]*'),
	key_id     TEXT NOT NULL CHECK (key_id <> ''),
	-- Every form of the session carries it.
	csrf_token TEXT NOT NULL CHECK (csrf_token <> ''),
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL CHECK (expires_at > created_at)
) STRICT;

-- Creating a session deletes the expired ones, by this index.
CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);

-- Every operator action: who, what, when, the request and the result. The
-- log is append-only: the triggers below refuse to update or delete a row,
-- so that neither a bug nor a careless statement rewrites history. Its key
-- names are copied in, not referenced, so that the log outlives its keys.
CREATE TABLE audit_log (
	-- AUTOINCREMENT never reuses an id, so the ids order the entries.
	id              INTEGER PRIMARY KEY AUTOINCREMENT,
	at              INTEGER NOT NULL,
	key_id          TEXT NOT NULL CHECK (key_id <> ''),
	key_name        TEXT NOT NULL,
	via             TEXT NOT NULL CHECK (via IN ('api', 'console')),
	action          TEXT NOT NULL CHECK (action <> ''),
	method          TEXT NOT NULL CHECK (method <> ''),
	path            TEXT NOT NULL CHECK (path <> ''),
	-- The request body, at most 8 KiB (store.MaxAuditRequest); the caller
	-- cuts a longer one.
	request         TEXT NOT NULL CHECK (length(CAST(request AS BLOB)) <= 8192),
	-- Empty when the request had no Idempotency-Key.
	idempotency_key TEXT NOT NULL,
	status          INTEGER NOT NULL CHECK (status BETWEEN 100 AND 599),
	result          TEXT NOT NULL
) STRICT;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
	SELECT RAISE(ABORT, 'audit_log is append-only');
END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
	SELECT RAISE(ABORT, 'audit_log is append-only');
END;

-- What a person decided about one settlement exception, named by its
-- store.ExceptionID, which survives a rerun of the date. There is no
-- reference to the exceptions: a rerun replaces them, and the resolution
-- stays. The first resolution is kept.
CREATE TABLE settlement_resolutions (
	report_date  TEXT NOT NULL CHECK (report_date GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
	exception_id TEXT NOT NULL CHECK (length(exception_id) = 16 AND exception_id NOT GLOB '*[^0-9a-f]*'),
	note         TEXT NOT NULL CHECK (note <> ''),
	key_id       TEXT NOT NULL CHECK (key_id <> ''),
	key_name     TEXT NOT NULL,
	resolved_at  INTEGER NOT NULL,
	PRIMARY KEY (report_date, exception_id)
) STRICT;
