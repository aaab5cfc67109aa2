package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const sessionColumns = `token_hash, key_id, csrf_token, created_at, expires_at`

// validText reports why s cannot be stored in a text column of both
// databases: it must be UTF-8, and PostgreSQL refuses the NUL character.
func validText(what, s string) error {
	switch {
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not valid UTF-8", what)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%s holds a NUL character", what)
	}
	return nil
}

func (s *db) CreateSession(ctx context.Context, x Session) error {
	switch {
	case !validHexSHA256(x.TokenHash):
		return errors.New("store: create session: the token hash is not a lower-case hex SHA-256")
	case x.KeyID == "":
		return errors.New("store: create session: the key ID is missing")
	case x.CSRFToken == "":
		return errors.New("store: create session: the CSRF token is missing")
	case x.CreatedAt.IsZero():
		return errors.New("store: create session: the creation time is missing")
	case !storedTime(x.ExpiresAt).After(storedTime(x.CreatedAt)):
		return fmt.Errorf("store: create session: it expires at %s, not after its creation at %s",
			x.ExpiresAt.Format(time.RFC3339Nano), x.CreatedAt.Format(time.RFC3339Nano))
	}
	if err := errors.Join(validText("the key ID", x.KeyID), validText("the CSRF token", x.CSRFToken)); err != nil {
		return fmt.Errorf("store: create session: %w", err)
	}
	err := s.txs.inTx(ctx, true, func(q querier) error {
		if _, err := q.exec(ctx, `DELETE FROM console_sessions WHERE expires_at < $1`, s.t(x.CreatedAt)); err != nil {
			return err
		}
		_, err := q.exec(ctx, `INSERT INTO console_sessions (`+sessionColumns+`) VALUES ($1, $2, $3, $4, $5)`,
			x.TokenHash, x.KeyID, x.CSRFToken, s.t(x.CreatedAt), s.t(x.ExpiresAt))
		if s.d.uniqueViolation(err) {
			return fmt.Errorf("%w: a session with this token hash exists", ErrConflict)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("store: create session: %w", err)
	}
	return nil
}

func (s *db) Session(ctx context.Context, tokenHash string) (Session, error) {
	if !validHexSHA256(tokenHash) {
		return Session{}, errors.New("store: session: the token hash is not a lower-case hex SHA-256")
	}
	var x Session
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		x, err = queryOne(ctx, q, scanSession, `SELECT `+sessionColumns+` FROM console_sessions WHERE token_hash = $1`, tokenHash)
		return err
	})
	if err != nil {
		return Session{}, fmt.Errorf("store: session: %w", err)
	}
	return x, nil
}

func (s *db) EndSession(ctx context.Context, tokenHash string) error {
	if !validHexSHA256(tokenHash) {
		return errors.New("store: end session: the token hash is not a lower-case hex SHA-256")
	}
	err := s.txs.inTx(ctx, true, func(q querier) error {
		_, err := q.exec(ctx, `DELETE FROM console_sessions WHERE token_hash = $1`, tokenHash)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: end session: %w", err)
	}
	return nil
}

func scanSession(r rows) (Session, error) {
	var (
		x                Session
		created, expires timestamp
	)
	if err := r.Scan(&x.TokenHash, &x.KeyID, &x.CSRFToken, &created, &expires); err != nil {
		return Session{}, err
	}
	var err error
	if x.CreatedAt, err = created.required("created_at"); err != nil {
		return Session{}, errCorrupt("session", x.KeyID, err)
	}
	if x.ExpiresAt, err = expires.required("expires_at"); err != nil {
		return Session{}, errCorrupt("session", x.KeyID, err)
	}
	return x, nil
}

const auditColumns = `id, at, key_id, key_name, via, action, method, path, request, idempotency_key, status, result`

func (e AuditEntry) validate() error {
	switch {
	case e.Via != AuditViaAPI && e.Via != AuditViaConsole:
		return fmt.Errorf("via %q is neither %q nor %q", e.Via, AuditViaAPI, AuditViaConsole)
	case e.Action == "":
		return errors.New("the action is missing")
	case e.Method == "":
		return errors.New("the method is missing")
	case e.Path == "":
		return errors.New("the path is missing")
	case e.KeyID == "":
		return errors.New("the key ID is missing")
	case e.At.IsZero():
		return errors.New("the time is missing")
	case len(e.Request) > MaxAuditRequest:
		return fmt.Errorf("the request body of %d bytes is longer than %d", len(e.Request), MaxAuditRequest)
	case e.Status < 100 || e.Status > 599:
		return fmt.Errorf("status %d is not an HTTP status", e.Status)
	}
	// The request body is kept as it came, whatever it holds, as long as a
	// text column can hold it.
	return errors.Join(validText("the key ID", e.KeyID), validText("the key name", e.KeyName),
		validText("the action", e.Action), validText("the method", e.Method), validText("the path", e.Path),
		validText("the request body", e.Request), validText("the idempotency key", e.IdempotencyKey),
		validText("the result", e.Result))
}

func (s *db) AppendAudit(ctx context.Context, e AuditEntry) (AuditEntry, error) {
	if err := e.validate(); err != nil {
		return AuditEntry{}, fmt.Errorf("store: append to the audit log: %w", err)
	}
	var stored AuditEntry
	err := s.txs.inTx(ctx, true, func(q querier) error {
		var err error
		stored, err = queryOne(ctx, q, scanAudit, `INSERT INTO audit_log
			(at, key_id, key_name, via, action, method, path, request, idempotency_key, status, result)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING `+auditColumns,
			s.t(e.At), e.KeyID, e.KeyName, e.Via, e.Action, e.Method, e.Path, e.Request, e.IdempotencyKey, e.Status, e.Result)
		return err
	})
	if err != nil {
		return AuditEntry{}, fmt.Errorf("store: append to the audit log: %w", err)
	}
	return stored, nil
}

func (s *db) AuditLog(ctx context.Context, before int64, limit int) ([]AuditEntry, error) {
	if limit <= 0 || limit > MaxAuditPage {
		return nil, fmt.Errorf("store: audit log: limit %d is not between 1 and %d", limit, MaxAuditPage)
	}
	query, args := `SELECT `+auditColumns+` FROM audit_log ORDER BY id DESC LIMIT $1`, []any{limit}
	if before > 0 {
		query, args = `SELECT `+auditColumns+` FROM audit_log WHERE id < $2 ORDER BY id DESC LIMIT $1`, []any{limit, before}
	}
	var entries []AuditEntry
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		entries, err = queryAll(ctx, q, scanAudit, query, args...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: audit log: %w", err)
	}
	return entries, nil
}

func scanAudit(r rows) (AuditEntry, error) {
	var (
		e  AuditEntry
		at timestamp
	)
	if err := r.Scan(&e.ID, &at, &e.KeyID, &e.KeyName, &e.Via, &e.Action, &e.Method, &e.Path, &e.Request,
		&e.IdempotencyKey, &e.Status, &e.Result); err != nil {
		return AuditEntry{}, err
	}
	var err error
	if e.At, err = at.required("at"); err != nil {
		return AuditEntry{}, errCorrupt("audit entry", e.ID, err)
	}
	return e, nil
}

func (r ExceptionResolution) validate() error {
	if err := validBooks(r.Provider, r.Date); err != nil {
		return err
	}
	switch {
	case !ValidExceptionID(r.ExceptionID):
		return fmt.Errorf("exception ID %q is not 16 lower-case hex digits", r.ExceptionID)
	case r.KeyID == "":
		return errors.New("the key ID is missing")
	case r.At.IsZero():
		return errors.New("the time is missing")
	}
	if err := CheckResolutionNote(r.Note); err != nil {
		return fmt.Errorf("the note %w", err)
	}
	return errors.Join(validText("the key ID", r.KeyID), validText("the key name", r.KeyName))
}

const resolutionColumns = `provider, report_date, exception_id, note, key_id, key_name, resolved_at`

func (s *db) ResolveException(ctx context.Context, r ExceptionResolution) (ExceptionResolution, bool, error) {
	if err := r.validate(); err != nil {
		return ExceptionResolution{}, false, fmt.Errorf("store: resolve exception: %w", err)
	}
	var (
		stored  ExceptionResolution
		created bool
	)
	err := s.txs.inTx(ctx, true, func(q querier) error {
		// A concurrent resolution that committed first wins; this one then
		// inserts nothing and reads it.
		n, err := q.exec(ctx, `INSERT INTO settlement_resolutions (`+resolutionColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (provider, report_date, exception_id) DO NOTHING`,
			r.Provider, r.Date, r.ExceptionID, r.Note, r.KeyID, r.KeyName, s.t(r.At))
		if err != nil {
			return err
		}
		created = n == 1
		stored, err = queryOne(ctx, q, scanResolution, `SELECT `+resolutionColumns+` FROM settlement_resolutions
			WHERE provider = $1 AND report_date = $2 AND exception_id = $3`, r.Provider, r.Date, r.ExceptionID)
		return err
	})
	if err != nil {
		return ExceptionResolution{}, false, fmt.Errorf("store: resolve exception %s of %s at %s: %w", r.ExceptionID, r.Date, r.Provider, err)
	}
	return stored, created, nil
}

func (s *db) ExceptionResolutions(ctx context.Context, provider, date string) (map[string]ExceptionResolution, error) {
	if err := validBooks(provider, date); err != nil {
		return nil, fmt.Errorf("store: exception resolutions: %w", err)
	}
	var all []ExceptionResolution
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		all, err = queryAll(ctx, q, scanResolution, `SELECT `+resolutionColumns+` FROM settlement_resolutions
			WHERE provider = $1 AND report_date = $2`, provider, date)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: exception resolutions of %s at %s: %w", date, provider, err)
	}
	byID := make(map[string]ExceptionResolution, len(all))
	for _, r := range all {
		byID[r.ExceptionID] = r
	}
	return byID, nil
}

func scanResolution(r rows) (ExceptionResolution, error) {
	var (
		x  ExceptionResolution
		at timestamp
	)
	if err := r.Scan(&x.Provider, &x.Date, &x.ExceptionID, &x.Note, &x.KeyID, &x.KeyName, &at); err != nil {
		return ExceptionResolution{}, err
	}
	var err error
	if x.At, err = at.required("resolved_at"); err != nil {
		return ExceptionResolution{}, errCorrupt("resolution", x.ExceptionID, err)
	}
	return x, nil
}

func (s *db) SettlementRuns(ctx context.Context, limit int) ([]SettlementRun, error) {
	if limit <= 0 || limit > MaxConsolePage {
		return nil, fmt.Errorf("store: settlement runs: limit %d is not between 1 and %d", limit, MaxConsolePage)
	}
	var runs []SettlementRun
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		runs, err = queryAll(ctx, q, scanRun, `SELECT `+runColumns+` FROM settlement_runs
			ORDER BY report_date DESC, provider LIMIT $1`, limit)
		if err != nil {
			return err
		}
		return countByKind(ctx, q, runs)
	})
	if err != nil {
		return nil, fmt.Errorf("store: settlement runs: %w", err)
	}
	return runs, nil
}

func (s *db) AttemptOutcomes(ctx context.Context, since time.Time) ([]AttemptOutcome, error) {
	type row struct {
		day int64
		o   AttemptOutcome
	}
	var found []row
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		// CAST, not ::, which SQLite does not know: PostgreSQL sums
		// bigints into a numeric.
		found, err = queryAll(ctx, q, func(r rows) (row, error) {
			var x row
			return x, r.Scan(&x.day, &x.o.Provider, &x.o.Status, &x.o.Currency, &x.o.Count, &x.o.Minor)
		}, `SELECT `+s.d.epochDay("created_at")+`, provider, status, currency, count(*), CAST(sum(amount_minor) AS BIGINT)
			FROM payment_attempts WHERE created_at >= $1
			GROUP BY 1, provider, status, currency
			ORDER BY 1, provider`+s.d.byteOrder+`, status, currency`, s.t(since))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: attempt outcomes: %w", err)
	}
	outcomes := make([]AttemptOutcome, len(found))
	for i, x := range found {
		if !x.o.Status.Valid() {
			return nil, fmt.Errorf("store: attempt outcomes: %w", errCorrupt("attempts of day", x.day, fmt.Errorf("unknown status %q", x.o.Status)))
		}
		outcomes[i] = x.o
		outcomes[i].Day = time.Unix(x.day*86400, 0).UTC()
	}
	return outcomes, nil
}

func (s *db) OldestOpenAttempt(ctx context.Context) (Attempt, error) {
	var a Attempt
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		a, err = queryOne(ctx, q, scanAttempt, `SELECT `+attemptColumns+` FROM payment_attempts
			WHERE status = 'open' ORDER BY created_at, idempotency_key LIMIT 1`)
		return err
	})
	if err != nil {
		return Attempt{}, fmt.Errorf("store: oldest open attempt: %w", err)
	}
	return a, nil
}

func (q OrderQuery) validate() error {
	switch {
	case q.Limit <= 0 || q.Limit > MaxConsolePage:
		return fmt.Errorf("limit %d is not between 1 and %d", q.Limit, MaxConsolePage)
	case q.ID < 0:
		return fmt.Errorf("order ID %d is negative", q.ID)
	case q.Before < 0:
		return fmt.Errorf("before %d is negative", q.Before)
	case q.Status != "" && !q.Status.Valid():
		return fmt.Errorf("unknown order status %q", q.Status)
	case !q.From.IsZero() && !q.To.IsZero() && !storedTime(q.To).After(storedTime(q.From)):
		return fmt.Errorf("the period from %s to %s is empty",
			q.From.Format(time.RFC3339Nano), q.To.Format(time.RFC3339Nano))
	}
	return validText("the reference", q.Reference)
}

func (s *db) SearchOrders(ctx context.Context, oq OrderQuery) ([]Order, error) {
	if err := oq.validate(); err != nil {
		return nil, fmt.Errorf("store: search orders: %w", err)
	}
	var (
		where []string
		args  []any
	)
	add := func(cond string, arg any) {
		args = append(args, arg)
		where = append(where, strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	if oq.ID > 0 {
		add(`id = $?`, oq.ID)
	}
	if oq.Reference != "" {
		add(`id IN (SELECT order_id FROM payment_attempts WHERE merchant_reference = $?)`, oq.Reference)
	}
	if oq.Status != "" {
		add(`status = $?`, string(oq.Status))
	}
	if !oq.From.IsZero() {
		add(`created_at >= $?`, s.t(oq.From))
	}
	if !oq.To.IsZero() {
		add(`created_at < $?`, s.t(oq.To))
	}
	if oq.Before > 0 {
		add(`id < $?`, oq.Before)
	}
	query := `SELECT ` + orderColumns + ` FROM orders`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	args = append(args, oq.Limit)
	query += ` ORDER BY id DESC LIMIT $` + strconv.Itoa(len(args))
	var orders []Order
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		orders, err = queryAll(ctx, q, scanOrder, query, args...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: search orders: %w", err)
	}
	return orders, nil
}

func (s *db) OpenRefunds(ctx context.Context, limit int) ([]Refund, error) {
	if limit <= 0 || limit > MaxConsolePage {
		return nil, fmt.Errorf("store: open refunds: limit %d is not between 1 and %d", limit, MaxConsolePage)
	}
	var refunds []Refund
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		refunds, err = queryAll(ctx, q, scanRefund, `SELECT `+refundColumns+` FROM refunds
			WHERE status = 'pending' ORDER BY created_at, idempotency_key LIMIT $1`, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: open refunds: %w", err)
	}
	return refunds, nil
}
