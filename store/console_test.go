package store_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/store"
)

// rawExecErr runs SQL behind the store's back, as rawExec does, and returns
// the database's error instead of failing on it.
func rawExecErr(t *testing.T, dsn, query string, args ...any) error {
	t.Helper()
	ctx := context.Background()
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		db, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		defer db.Close()
		_, err = db.ExecContext(ctx, query, args...)
		return err
	}
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, query, args...)
	return err
}

// rawTime is the value a time column of dsn's database holds for t.
func rawTime(dsn string, t time.Time) any {
	if strings.HasPrefix(dsn, "sqlite:") {
		return schemaV2["sqlite"].time(stored(t))
	}
	return schemaV2["postgres"].time(stored(t))
}

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func TestConsole_SessionsAreStoredReadEndedAndPurged(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		first := store.Session{TokenHash: tokenHash("first"), KeyID: "0123456789abcdef", CSRFToken: "csrf-1",
			CreatedAt: base, ExpiresAt: base.Add(time.Hour)}
		require.NoError(t, s.CreateSession(ctx, first))
		got, err := s.Session(ctx, first.TokenHash)
		require.NoError(t, err)
		want := first
		want.CreatedAt, want.ExpiresAt = stored(first.CreatedAt), stored(first.ExpiresAt)
		require.Equal(t, want, got)

		_, err = s.Session(ctx, tokenHash("never signed in"))
		require.ErrorIs(t, err, store.ErrNotFound)
		again := first
		again.CSRFToken = "csrf-other"
		require.ErrorIs(t, s.CreateSession(ctx, again), store.ErrConflict)

		// The second expires exactly when the third is created: it is not
		// expired before then, so it stays; the first is purged.
		second := store.Session{TokenHash: tokenHash("second"), KeyID: "0123456789abcdef", CSRFToken: "csrf-2",
			CreatedAt: base.Add(30 * time.Minute), ExpiresAt: base.Add(2 * time.Hour)}
		third := store.Session{TokenHash: tokenHash("third"), KeyID: "fedcba9876543210", CSRFToken: "csrf-3",
			CreatedAt: base.Add(2 * time.Hour), ExpiresAt: base.Add(3 * time.Hour)}
		require.NoError(t, s.CreateSession(ctx, second))
		require.Equal(t, int64(2), rawCount(t, dsn, `SELECT count(*) FROM console_sessions`))
		require.NoError(t, s.CreateSession(ctx, third))
		_, err = s.Session(ctx, first.TokenHash)
		require.ErrorIs(t, err, store.ErrNotFound, "the expired session is purged")
		got, err = s.Session(ctx, second.TokenHash)
		require.NoError(t, err, "a session is returned expired or not")
		require.Equal(t, stored(second.ExpiresAt), got.ExpiresAt)
		got, err = s.Session(ctx, third.TokenHash)
		require.NoError(t, err)
		require.Equal(t, third.KeyID, got.KeyID)

		require.NoError(t, s.EndSession(ctx, third.TokenHash))
		_, err = s.Session(ctx, third.TokenHash)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NoError(t, s.EndSession(ctx, third.TokenHash), "ending it again is no error")
		require.NoError(t, s.EndSession(ctx, tokenHash("never signed in")))
		_, err = s.Session(ctx, second.TokenHash)
		require.NoError(t, err, "ending one session leaves the others")
	})
}

func TestConsole_BadSessionsAreRefusedAndChangeNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		good := store.Session{TokenHash: tokenHash("t"), KeyID: "0123456789abcdef", CSRFToken: "csrf",
			CreatedAt: base, ExpiresAt: base.Add(time.Hour)}
		for name, change := range map[string]func(*store.Session){
			"upper-case hash": func(x *store.Session) { x.TokenHash = strings.ToUpper(x.TokenHash) },
			"short hash":      func(x *store.Session) { x.TokenHash = x.TokenHash[:63] },
			"no key":          func(x *store.Session) { x.KeyID = "" },
			"no CSRF token":   func(x *store.Session) { x.CSRFToken = "" },
			"no creation":     func(x *store.Session) { x.CreatedAt = time.Time{} },
			"expired at once": func(x *store.Session) { x.ExpiresAt = x.CreatedAt },
			"expired before":  func(x *store.Session) { x.ExpiresAt = x.CreatedAt.Add(-time.Second) },
		} {
			x := good
			change(&x)
			require.Error(t, s.CreateSession(ctx, x), name)
		}
		_, err := s.Session(ctx, "not a hash")
		require.Error(t, err)
		require.NotErrorIs(t, err, store.ErrNotFound)
		require.Error(t, s.EndSession(ctx, "not a hash"))
		require.Zero(t, rawCount(t, dsn, `SELECT count(*) FROM console_sessions`))
	})
}

func auditEntry(at time.Time, action string) store.AuditEntry {
	return store.AuditEntry{At: at, KeyID: "0123456789abcdef", KeyName: "ops", Via: store.AuditViaConsole,
		Action: action, Method: "POST", Path: "/console/orders/1001/refund",
		Request: "{\"amount\": 100,\n\t\"reason\": \"damaged \u2014 \U0001F4E6\"}\x01", IdempotencyKey: "idem-" + action,
		Status: 201, Result: "created refund re_1"}
}

func TestConsole_AuditLogAppendsAndPagesNewestFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		page, err := s.AuditLog(ctx, 0, 10)
		require.NoError(t, err)
		require.Empty(t, page)

		var appended []store.AuditEntry
		for i, action := range []string{"refund_order", "resolve_exception", "revoke_key", "mark_paid", "replay_event"} {
			e := auditEntry(base.Add(time.Duration(i)*time.Second), action)
			if i == 1 {
				e.Via, e.IdempotencyKey, e.Status, e.Result = store.AuditViaAPI, "", 409, "the exception is resolved already"
			}
			got, err := s.AppendAudit(ctx, e)
			require.NoError(t, err)
			if i > 0 {
				require.Greater(t, got.ID, appended[i-1].ID)
			}
			want := e
			want.ID, want.At = got.ID, stored(e.At)
			require.Equal(t, want, got)
			appended = append(appended, got)
		}

		page, err = s.AuditLog(ctx, 0, 10)
		require.NoError(t, err)
		require.Equal(t, []store.AuditEntry{appended[4], appended[3], appended[2], appended[1], appended[0]}, page)

		var paged []store.AuditEntry
		before := int64(0)
		for {
			page, err := s.AuditLog(ctx, before, 2)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), 2)
			if len(page) == 0 {
				break
			}
			paged = append(paged, page...)
			before = page[len(page)-1].ID
		}
		require.Equal(t, []store.AuditEntry{appended[4], appended[3], appended[2], appended[1], appended[0]}, paged)
		page, err = s.AuditLog(ctx, appended[2].ID, 200)
		require.NoError(t, err)
		require.Equal(t, []store.AuditEntry{appended[1], appended[0]}, page)

		for _, limit := range []int{0, -1, store.MaxAuditPage + 1} {
			_, err := s.AuditLog(ctx, 0, limit)
			require.Error(t, err, "limit %d", limit)
		}
	})
}

func TestConsole_BadAuditEntriesAreRefusedAndChangeNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		for name, change := range map[string]func(*store.AuditEntry){
			"unknown via":        func(e *store.AuditEntry) { e.Via = "web" },
			"no via":             func(e *store.AuditEntry) { e.Via = "" },
			"no action":          func(e *store.AuditEntry) { e.Action = "" },
			"no method":          func(e *store.AuditEntry) { e.Method = "" },
			"no path":            func(e *store.AuditEntry) { e.Path = "" },
			"no key":             func(e *store.AuditEntry) { e.KeyID = "" },
			"no time":            func(e *store.AuditEntry) { e.At = time.Time{} },
			"long request":       func(e *store.AuditEntry) { e.Request = strings.Repeat("x", store.MaxAuditRequest+1) },
			"request not UTF-8":  func(e *store.AuditEntry) { e.Request = "{\"a\": \"\xff\"}" },
			"request with a NUL": func(e *store.AuditEntry) { e.Request = "a\x00b" },
			"result not UTF-8":   func(e *store.AuditEntry) { e.Result = "\xc3" },
			"status 99":          func(e *store.AuditEntry) { e.Status = 99 },
			"status 600":         func(e *store.AuditEntry) { e.Status = 600 },
		} {
			e := auditEntry(base, "refund_order")
			change(&e)
			_, err := s.AppendAudit(ctx, e)
			require.Error(t, err, name)
		}
		require.Zero(t, rawCount(t, dsn, `SELECT count(*) FROM audit_log`))

		// The longest request body, in bytes, is kept whole.
		e := auditEntry(base, "refund_order")
		e.Request = strings.Repeat("\u00e9", store.MaxAuditRequest/2)
		got, err := s.AppendAudit(ctx, e)
		require.NoError(t, err)
		require.Equal(t, e.Request, got.Request)
	})
}

func TestConsole_DatabaseRefusesToRewriteTheAuditLog(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		e, err := s.AppendAudit(ctx, auditEntry(base, "refund_order"))
		require.NoError(t, err)

		err = rawExecErr(t, dsn, `UPDATE audit_log SET result = 'nothing happened' WHERE id = $1`, e.ID)
		require.ErrorContains(t, err, "audit_log is append-only")
		err = rawExecErr(t, dsn, `DELETE FROM audit_log WHERE id = $1`, e.ID)
		require.ErrorContains(t, err, "audit_log is append-only")
		if !strings.HasPrefix(dsn, "sqlite:") {
			err = rawExecErr(t, dsn, `TRUNCATE audit_log`)
			require.ErrorContains(t, err, "audit_log is append-only")
		}

		page, err := s.AuditLog(ctx, 0, 10)
		require.NoError(t, err)
		require.Equal(t, []store.AuditEntry{e}, page, "the entry is as it was")
	})
}

func TestConsole_FirstResolutionOfAnExceptionIsKept(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		resolved, err := s.ExceptionResolutions(ctx, chargeonce.DefaultProvider, day)
		require.NoError(t, err)
		require.Empty(t, resolved)

		first := store.ExceptionResolution{Provider: chargeonce.DefaultProvider, Date: day, ExceptionID: store.ExceptionID(day, exception(1, chargeonce.ExceptionUnknownCharge)),
			Note: "Refunded by hand, ticket 42 \u2014 caf\u00e9", KeyID: "0123456789abcdef", KeyName: "ops", At: base}
		got, created, err := s.ResolveException(ctx, first)
		require.NoError(t, err)
		require.True(t, created)
		want := first
		want.At = stored(first.At)
		require.Equal(t, want, got)

		again := first
		again.Note, again.KeyID, again.KeyName, again.At = "Something else", "fedcba9876543210", "other", base.Add(time.Hour)
		got, created, err = s.ResolveException(ctx, again)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, want, got, "the first resolution is kept")

		// Another exception of the date, and one of another date.
		other := first
		other.ExceptionID = store.ExceptionID(day, exception(2, chargeonce.ExceptionAmountMismatch))
		_, created, err = s.ResolveException(ctx, other)
		require.NoError(t, err)
		require.True(t, created)
		nextDay := first
		nextDay.Date = "2026-03-15"
		_, created, err = s.ResolveException(ctx, nextDay)
		require.NoError(t, err)
		require.True(t, created, "the same exception ID on another date is another exception")

		resolved, err = s.ExceptionResolutions(ctx, chargeonce.DefaultProvider, day)
		require.NoError(t, err)
		wantOther := other
		wantOther.At = stored(other.At)
		require.Equal(t, map[string]store.ExceptionResolution{first.ExceptionID: want, other.ExceptionID: wantOther}, resolved)
		resolved, err = s.ExceptionResolutions(ctx, chargeonce.DefaultProvider, "2026-03-15")
		require.NoError(t, err)
		require.Len(t, resolved, 1)
		require.Equal(t, "2026-03-15", resolved[first.ExceptionID].Date)
		_, err = s.ExceptionResolutions(ctx, chargeonce.DefaultProvider, "2026-3-15")
		require.Error(t, err)
	})
}

func TestConsole_BadResolutionsAreRefusedAndChangeNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		good := store.ExceptionResolution{Provider: chargeonce.DefaultProvider, Date: day, ExceptionID: "0123456789abcdef", Note: "Refunded by hand.",
			KeyID: "0123456789abcdef", KeyName: "ops", At: base}
		for name, change := range map[string]func(*store.ExceptionResolution){
			"no date":              func(r *store.ExceptionResolution) { r.Date = "" },
			"not a date":           func(r *store.ExceptionResolution) { r.Date = "2026-02-30" },
			"upper-case ID":        func(r *store.ExceptionResolution) { r.ExceptionID = "0123456789ABCDEF" },
			"short ID":             func(r *store.ExceptionResolution) { r.ExceptionID = "0123456789abcde" },
			"empty note":           func(r *store.ExceptionResolution) { r.Note = "" },
			"blank note":           func(r *store.ExceptionResolution) { r.Note = " \u00a0 " },
			"note with a newline":  func(r *store.ExceptionResolution) { r.Note = "one\ntwo" },
			"note with a NUL":      func(r *store.ExceptionResolution) { r.Note = "one\x00two" },
			"note not UTF-8":       func(r *store.ExceptionResolution) { r.Note = "caf\xe9" },
			"note too long":        func(r *store.ExceptionResolution) { r.Note = strings.Repeat("\u00e9", store.MaxResolutionNote+1) },
			"invisible formatting": func(r *store.ExceptionResolution) { r.Note = "ok\u200bok" },
			"no key":               func(r *store.ExceptionResolution) { r.KeyID = "" },
			"no time":              func(r *store.ExceptionResolution) { r.At = time.Time{} },
		} {
			r := good
			change(&r)
			_, _, err := s.ResolveException(ctx, r)
			require.Error(t, err, name)
		}
		require.Zero(t, rawCount(t, dsn, `SELECT count(*) FROM settlement_resolutions`))

		// The bound counts characters, not bytes.
		longest := good
		longest.Note = strings.Repeat("\u00e9", store.MaxResolutionNote)
		got, created, err := s.ResolveException(ctx, longest)
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, longest.Note, got.Note)
	})
}

func TestConsole_SettlementRunsNewestFirstWithTheirKinds(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		runs, err := s.SettlementRuns(ctx, 10)
		require.NoError(t, err)
		require.Empty(t, runs)

		finish := func(date, runID string, exceptions ...store.SettlementException) {
			t.Helper()
			if len(exceptions) > 0 {
				require.NoError(t, s.AddSettlementExceptions(ctx, chargeonce.DefaultProvider, date, runID, exceptions))
			}
			require.NoError(t, s.FinishSettlementRun(ctx, store.SettlementRun{Provider: chargeonce.DefaultProvider, Date: date, RunID: runID, Status: store.SettlementFinal,
				Lines: 4, Matched: 3, Exceptions: len(exceptions),
				Totals: []store.SettlementTotal{{Currency: "TRY", Lines: 4, Gross: 400, Fee: 12, Net: 388}}, FinishedAt: base}))
		}
		finish("2026-03-12", "run-12", exception(1, chargeonce.ExceptionMissingInReport))
		finish("2026-03-14", "run-14", exception(1, chargeonce.ExceptionUnknownCharge), exception(2, chargeonce.ExceptionUnknownCharge),
			exception(3, chargeonce.ExceptionAmountMismatch))
		finish("2026-03-13", "run-13")
		// A run of the 14th that did not finish: its exceptions are not the date's.
		require.NoError(t, s.AddSettlementExceptions(ctx, chargeonce.DefaultProvider, "2026-03-14", "run-unfinished",
			[]store.SettlementException{exception(1, chargeonce.ExceptionDuplicateLine)}))

		runs, err = s.SettlementRuns(ctx, 10)
		require.NoError(t, err)
		var dates []string
		for _, run := range runs {
			dates = append(dates, run.Date)
			one, err := s.SettlementRun(ctx, chargeonce.DefaultProvider, run.Date)
			require.NoError(t, err)
			require.Equal(t, one, run, "as SettlementRun reads it")
		}
		require.Equal(t, []string{"2026-03-14", "2026-03-13", "2026-03-12"}, dates)
		require.Equal(t, map[chargeonce.ExceptionKind]int{chargeonce.ExceptionUnknownCharge: 2, chargeonce.ExceptionAmountMismatch: 1}, runs[0].ByKind)
		require.Equal(t, map[chargeonce.ExceptionKind]int{}, runs[1].ByKind)
		require.Equal(t, map[chargeonce.ExceptionKind]int{chargeonce.ExceptionMissingInReport: 1}, runs[2].ByKind)
		require.Equal(t, "run-14", runs[0].RunID)
		require.Equal(t, 3, runs[0].Exceptions)

		runs, err = s.SettlementRuns(ctx, 2)
		require.NoError(t, err)
		require.Len(t, runs, 2)
		require.Equal(t, "2026-03-13", runs[1].Date)
		for _, limit := range []int{0, store.MaxConsolePage + 1} {
			_, err := s.SettlementRuns(ctx, limit)
			require.Error(t, err, "limit %d", limit)
		}
	})
}

func TestConsole_AttemptOutcomesByDayProviderStatusAndCurrency(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		_, err := s.OldestOpenAttempt(ctx)
		require.ErrorIs(t, err, store.ErrNotFound)

		day1 := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
		day2 := day1.Add(24 * time.Hour)
		usd := chargeonce.Money{Minor: 1000, Currency: "USD"}
		attempt := func(amount chargeonce.Money, provider string, created time.Time, status chargeonce.AttemptStatus) store.Attempt {
			t.Helper()
			o, err := s.CreateOrder(ctx, amount, "Collected works")
			require.NoError(t, err)
			n := newAttempt(t, o.ID, card("visa"), created)
			n.Provider = provider
			_, a, _, err := s.GetOrStartAttempt(ctx, n)
			require.NoError(t, err)
			if status != chargeonce.AttemptOpen {
				charge := ""
				if status == chargeonce.AttemptSucceeded {
					charge = "ch_" + strings.ReplaceAll(a.Key, "-", "")
				}
				require.True(t, settle(t, s, a.Key, status, charge))
			}
			return a
		}
		// Before since: not counted, and not open.
		attempt(try, chargeonce.DefaultProvider, day1.Add(-time.Hour), chargeonce.AttemptSucceeded)
		attempt(try, chargeonce.DefaultProvider, base, chargeonce.AttemptSucceeded)
		attempt(try, chargeonce.DefaultProvider, base.Add(time.Hour), chargeonce.AttemptDeclined)
		attempt(try, chargeonce.DefaultProvider, base.Add(2*time.Hour), chargeonce.AttemptSucceeded)
		// The last microsecond of the first day and the first of the second.
		lastOfDay1 := attempt(usd, "second", day2.Add(-time.Microsecond), chargeonce.AttemptOpen)
		attempt(usd, "second", day2, chargeonce.AttemptOpen)

		outcomes, err := s.AttemptOutcomes(ctx, day1)
		require.NoError(t, err)
		require.Equal(t, []store.AttemptOutcome{
			{Day: day1, Provider: chargeonce.DefaultProvider, Status: chargeonce.AttemptDeclined, Currency: "TRY", Count: 1, Minor: try.Minor},
			{Day: day1, Provider: chargeonce.DefaultProvider, Status: chargeonce.AttemptSucceeded, Currency: "TRY", Count: 2, Minor: 2 * try.Minor},
			{Day: day1, Provider: "second", Status: chargeonce.AttemptOpen, Currency: "USD", Count: 1, Minor: usd.Minor},
			{Day: day2, Provider: "second", Status: chargeonce.AttemptOpen, Currency: "USD", Count: 1, Minor: usd.Minor},
		}, outcomes)
		for _, o := range outcomes {
			require.Equal(t, time.UTC, o.Day.Location())
		}

		outcomes, err = s.AttemptOutcomes(ctx, day2)
		require.NoError(t, err)
		require.Equal(t, []store.AttemptOutcome{
			{Day: day2, Provider: "second", Status: chargeonce.AttemptOpen, Currency: "USD", Count: 1, Minor: usd.Minor},
		}, outcomes)
		outcomes, err = s.AttemptOutcomes(ctx, day2.Add(time.Microsecond))
		require.NoError(t, err)
		require.Empty(t, outcomes)

		oldest, err := s.OldestOpenAttempt(ctx)
		require.NoError(t, err)
		want, err := s.GetAttempt(ctx, lastOfDay1.Key)
		require.NoError(t, err)
		want.Requests = nil
		require.Equal(t, want, oldest)
	})
}

func orderIDs(orders []store.Order) []int64 {
	ids := make([]int64, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	return ids
}

func TestConsole_SearchOrdersByEachFieldAndPages(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		placed := newOrder(t, s)
		pending := newOrder(t, s)
		open, _ := checkout(t, s, pending.ID, card("visa"), base)
		paid := newOrder(t, s)
		a, _ := checkout(t, s, paid.ID, card("visa"), base)
		require.True(t, settle(t, s, a.Key, chargeonce.AttemptSucceeded, "ch_paid"))
		later := newOrder(t, s)
		// Creation times of one's choosing: an hour apart, the last a day later.
		created := map[int64]time.Time{placed.ID: base, pending.ID: base.Add(time.Hour), paid.ID: base.Add(2 * time.Hour),
			later.ID: base.Add(26 * time.Hour)}
		for id, at := range created {
			rawExec(t, dsn, `UPDATE orders SET created_at = $1 WHERE id = $2`, rawTime(dsn, at), id)
		}

		search := func(q store.OrderQuery) []int64 {
			t.Helper()
			if q.Limit == 0 {
				q.Limit = 10
			}
			orders, err := s.SearchOrders(ctx, q)
			require.NoError(t, err)
			return orderIDs(orders)
		}
		all := []int64{later.ID, paid.ID, pending.ID, placed.ID}
		require.Equal(t, all, search(store.OrderQuery{}))
		byID, err := s.SearchOrders(ctx, store.OrderQuery{ID: paid.ID, Limit: 1})
		require.NoError(t, err)
		want, _ := getOrder(t, s, paid.ID)
		require.Equal(t, []store.Order{want}, byID)
		require.Empty(t, search(store.OrderQuery{ID: 999}))

		require.Equal(t, []int64{pending.ID}, search(store.OrderQuery{Reference: open.MerchantReference}))
		require.Equal(t, []int64{paid.ID}, search(store.OrderQuery{Reference: a.MerchantReference}))
		require.Empty(t, search(store.OrderQuery{Reference: "bookstore-unknown"}))
		require.Empty(t, search(store.OrderQuery{Reference: a.MerchantReference, ID: pending.ID}), "every field must match")

		require.Equal(t, []int64{paid.ID}, search(store.OrderQuery{Status: chargeonce.OrderPaid}))
		require.Equal(t, []int64{pending.ID}, search(store.OrderQuery{Status: chargeonce.OrderPaymentPending}))
		require.Equal(t, []int64{later.ID, placed.ID}, search(store.OrderQuery{Status: chargeonce.OrderPlaced}))
		require.Empty(t, search(store.OrderQuery{Status: chargeonce.OrderRefunded}))

		require.Equal(t, []int64{pending.ID}, search(store.OrderQuery{From: created[pending.ID], To: created[paid.ID]}), "[From, To)")
		require.Equal(t, []int64{later.ID, paid.ID}, search(store.OrderQuery{From: created[paid.ID]}))
		require.Equal(t, []int64{placed.ID}, search(store.OrderQuery{To: created[pending.ID]}))
		require.Equal(t, []int64{paid.ID, pending.ID}, search(store.OrderQuery{From: created[pending.ID], To: created[later.ID]}))

		require.Equal(t, all[:2], search(store.OrderQuery{Limit: 2}))
		require.Equal(t, all[2:], search(store.OrderQuery{Before: paid.ID, Limit: 2}))
		require.Empty(t, search(store.OrderQuery{Before: placed.ID}))
		require.Equal(t, []int64{placed.ID}, search(store.OrderQuery{Status: chargeonce.OrderPlaced, Before: later.ID}))

		for name, q := range map[string]store.OrderQuery{
			"no limit":       {},
			"limit too big":  {Limit: store.MaxConsolePage + 1},
			"unknown status": {Status: "lost", Limit: 10},
			"negative ID":    {ID: -1, Limit: 10},
			"negative page":  {Before: -1, Limit: 10},
			"empty period":   {From: base, To: base, Limit: 10},
			"reversed":       {From: base, To: base.Add(-time.Hour), Limit: 10},
		} {
			_, err := s.SearchOrders(ctx, q)
			require.Error(t, err, name)
		}
	})
}

func TestConsole_OpenRefundsOldestFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		refunds, err := s.OpenRefunds(ctx, 10)
		require.NoError(t, err)
		require.Empty(t, refunds)

		start := func(at time.Time) store.Refund {
			t.Helper()
			o, _ := paidOrder(t, s)
			n := newRefund(t, o.ID, 100, "")
			n.Now = at
			f, d := startRefund(t, s, n)
			require.Equal(t, store.RefundCreated, d)
			return f
		}
		newer := start(base.Add(2 * time.Minute))
		older := start(base.Add(time.Minute))
		settled := start(base)
		require.True(t, settleRefund(t, s, settled.Key, chargeonce.RefundSucceeded, "re_settled"))

		refunds, err = s.OpenRefunds(ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []string{older.Key, newer.Key}, refundKeys(refunds))
		for _, f := range refunds {
			require.Equal(t, chargeonce.RefundPending, f.Status)
			require.Nil(t, f.Requests)
		}
		require.Equal(t, stored(base.Add(time.Minute)), refunds[0].CreatedAt)
		require.Equal(t, older.Amount, refunds[0].Amount)
		require.Equal(t, older.MerchantReference, refunds[0].MerchantReference)

		refunds, err = s.OpenRefunds(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, []string{older.Key}, refundKeys(refunds))
		for _, limit := range []int{0, store.MaxConsolePage + 1} {
			_, err := s.OpenRefunds(ctx, limit)
			require.Error(t, err, "limit %d", limit)
		}
	})
}
