package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"chargeonce/api/wire"
	"chargeonce/internal/apikey"
	"chargeonce/internal/syncbuf"
	"chargeonce/store"
)

// auditStore is a store whose AppendAudit keeps the entries in memory, or
// fails with err; any other method of it is never called here.
type auditStore struct {
	store.Store
	mu      sync.Mutex
	entries []store.AuditEntry
	err     error
}

func (s *auditStore) AppendAudit(_ context.Context, e store.AuditEntry) (store.AuditEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return store.AuditEntry{}, s.err
	}
	e.ID = int64(len(s.entries) + 1)
	s.entries = append(s.entries, e)
	return e, nil
}

// auditServer is a server over an auditStore, and its log.
func auditServer(st *auditStore) (*server, *syncbuf.Buffer) {
	logs := &syncbuf.Buffer{}
	return &server{store: st, log: slog.New(slog.NewJSONHandler(logs, nil))}, logs
}

var auditKey = apikey.Record{ID: "3f9c0b8e1d2a4c57", Name: "ops laptop", Scopes: []apikey.Scope{apikey.ScopeOperator}}

// serveAudited sends one request through audited(action, h), as the key
// auditKey, with the via of the request's info, and returns the answer.
func serveAudited(s *server, action, via string, h http.HandlerFunc, method, path, body string, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	for name, values := range header {
		r.Header[name] = values
	}
	r, info := withRequestInfo(r)
	info.keyID, info.key, info.via = auditKey.ID, auditKey, via
	w := httptest.NewRecorder()
	s.audited(action, h)(w, r)
	return w
}

func TestAudited_RecordsTheKeyTheRequestTheStatusAndTheResult(t *testing.T) {
	st := &auditStore{}
	s, _ := auditServer(st)
	body := `{"url": "https://shop.example/events"}`
	var seen string
	created := func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		seen = string(b)
		w.Header().Set("Location", "/api/webhook-endpoints/we_1")
		writeJSON(w, s.log, http.StatusCreated, "application/json", wire.Endpoint{ID: "we_1", Secret: "whsec_secret"})
	}
	before := time.Now().UTC()
	w := serveAudited(s, "create_endpoint", "", created, http.MethodPost, "/api/webhook-endpoints", body,
		http.Header{"Idempotency-Key": {`"k-1"`}})

	require.Equal(t, http.StatusCreated, w.Code)
	require.Contains(t, w.Body.String(), "whsec_secret", "the answer itself is untouched")
	require.Equal(t, body, seen, "the handler reads the whole body")
	require.Len(t, st.entries, 1)
	e := st.entries[0]
	require.WithinRange(t, e.At, before, time.Now().UTC())
	require.Equal(t, time.UTC, e.At.Location())
	e.At = time.Time{}
	require.Equal(t, store.AuditEntry{ID: 1, KeyID: auditKey.ID, KeyName: "ops laptop", Via: store.AuditViaAPI, Action: "create_endpoint",
		Method: http.MethodPost, Path: "/api/webhook-endpoints", Request: body, IdempotencyKey: "k-1",
		Status: http.StatusCreated, Result: "/api/webhook-endpoints/we_1"}, e)
}

func TestAudited_TheResultIsOneLineWithoutTheAnswersBody(t *testing.T) {
	tests := []struct {
		name    string
		handler func(s *server) http.HandlerFunc
		status  int
		result  string
	}{
		{"a 200 without Location", func(s *server) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, s.log, http.StatusOK, "application/json", wire.Endpoint{ID: "we_1", Secret: "whsec_rotated"})
			}
		}, http.StatusOK, "ok"},
		{"nothing written", func(*server) http.HandlerFunc {
			return func(http.ResponseWriter, *http.Request) {}
		}, http.StatusOK, "ok"},
		{"a 202 with Location", func(s *server) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Location", "/api/refunds/r1")
				writeJSON(w, s.log, http.StatusAccepted, "application/json", wire.Refund{ID: "r1"})
			}
		}, http.StatusAccepted, "/api/refunds/r1"},
		{"a problem", func(s *server) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				s.fail(w, r, badRequest("field %q is\nwrong", "note"))
			}
		}, http.StatusBadRequest, `field "note" is wrong`},
		{"a problem without a detail", func(s *server) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) {
				writeProblem(w, s.log, wire.NewProblem(wire.ProblemInternalError, ""))
			}
		}, http.StatusInternalServerError, "An internal error occurred."},
		{"an error that is no problem", func(*server) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "whsec_in_plain_text", http.StatusBadGateway)
			}
		}, http.StatusBadGateway, "502 Bad Gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &auditStore{}
			s, _ := auditServer(st)
			serveAudited(s, "rotate_endpoint_secret", "", tt.handler(s), http.MethodPost, "/api/webhook-endpoints/we_1/rotate-secret", `{}`, nil)
			require.Len(t, st.entries, 1)
			require.Equal(t, tt.status, st.entries[0].Status)
			require.Equal(t, tt.result, st.entries[0].Result)
			require.NotContains(t, st.entries[0].Result, "whsec_")
		})
	}
}

func TestAudited_KeepsTheStartOfALongBodyAndTheHandlerReadsItWhole(t *testing.T) {
	st := &auditStore{}
	s, _ := auditServer(st)
	// A two-byte character straddles the cut, which falls between
	// characters.
	body := `{"note": "` + strings.Repeat("ğ", store.MaxAuditRequest) + `"}`
	var seen int
	read := func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		seen = len(b)
		w.WriteHeader(http.StatusNoContent)
	}
	serveAudited(s, "resolve_exception", "", read, http.MethodPost, "/api/settlements/2026-03-14/exceptions/0123456789abcdef/resolve", body, nil)

	require.Equal(t, len(body), seen)
	require.Len(t, st.entries, 1)
	kept := st.entries[0].Request
	require.LessOrEqual(t, len(kept), store.MaxAuditRequest)
	require.Greater(t, len(kept), store.MaxAuditRequest-len(cutMark)-utf8.UTFMax)
	require.True(t, strings.HasSuffix(kept, "…(cut)"), kept[len(kept)-20:])
	require.True(t, strings.HasPrefix(body, strings.TrimSuffix(kept, cutMark)))
	require.True(t, utf8.ValidString(kept))

	// A body of exactly the bound is kept whole.
	exact := strings.Repeat("a", store.MaxAuditRequest)
	serveAudited(s, "resolve_exception", "", read, http.MethodPost, "/", exact, nil)
	require.Equal(t, exact, st.entries[1].Request)
}

func TestAuditText_KeepsValidUTF8WithoutNUL(t *testing.T) {
	require.Equal(t, "a\uFFFDb\uFFFDc", auditText([]byte("a\xffb\x00c"), false))
	require.Equal(t, "", auditText(nil, false))
}

func TestAudited_TheConsolesRequestsSayVia(t *testing.T) {
	st := &auditStore{}
	s, _ := auditServer(st)
	serveAudited(s, "disable_endpoint", store.AuditViaConsole, func(http.ResponseWriter, *http.Request) {}, http.MethodPost, "/api/webhook-endpoints/we_1/disable", `{}`, nil)
	require.Len(t, st.entries, 1)
	require.Equal(t, store.AuditViaConsole, st.entries[0].Via)
}

func TestAudited_AFailedAppendIsLoggedAndLeavesTheAnswer(t *testing.T) {
	st := &auditStore{err: errors.New("disk full")}
	s, logs := auditServer(st)
	w := serveAudited(s, "replay_event", "", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, s.log, http.StatusAccepted, "application/json", wire.ReplayAnswer{EventID: "evt_1"})
	}, http.MethodPost, "/api/events/evt_1/replay", `{}`, nil)

	require.Equal(t, http.StatusAccepted, w.Code)
	require.Contains(t, w.Body.String(), `"eventId":"evt_1"`)
	require.Contains(t, logs.String(), `"level":"ERROR","msg":"audit entry not stored","action":"replay_event"`)
	require.Contains(t, logs.String(), "disk full")
}

func TestAudited_APanicIsAnEntryOf500(t *testing.T) {
	st := &auditStore{}
	s, _ := auditServer(st)
	require.Panics(t, func() {
		serveAudited(s, "void_order", "", func(http.ResponseWriter, *http.Request) { panic("boom") }, http.MethodPost, "/api/orders/1/void", `{}`, nil)
	})
	require.Len(t, st.entries, 1)
	require.Equal(t, http.StatusInternalServerError, st.entries[0].Status)
}

func TestAuditPage_ReadsBeforeAndLimit(t *testing.T) {
	for _, tt := range []struct {
		query  string
		before int64
		limit  int
		// badParameter is the parameter that the problem names.
		badParameter string
	}{
		{query: "", limit: defaultAuditPage},
		{query: "limit=1", limit: 1},
		{query: "limit=200&before=9", before: 9, limit: 200},
		{query: "before=9223372036854775807", before: 9223372036854775807, limit: defaultAuditPage},
		{query: "limit=0", badParameter: "limit"},
		{query: "limit=201", badParameter: "limit"},
		{query: "limit=01", badParameter: "limit"},
		{query: "limit=x", badParameter: "limit"},
		{query: "limit=", badParameter: "limit"},
		{query: "limit=1&limit=2", badParameter: "limit"},
		{query: "before=0", badParameter: "before"},
		{query: "before=-1", badParameter: "before"},
		{query: "before=%2B1", badParameter: "before"},
		{query: "before=9223372036854775808", badParameter: "before"},
		{query: "before=1&before=2", badParameter: "before"},
	} {
		t.Run(tt.query, func(t *testing.T) {
			before, limit, err := auditPage(httptest.NewRequest(http.MethodGet, "/api/audit-log?"+tt.query, nil))
			if tt.badParameter == "" {
				require.NoError(t, err)
				require.Equal(t, tt.before, before)
				require.Equal(t, tt.limit, limit)
				return
			}
			var pe *problemError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, wire.ProblemInvalidRequest, pe.typ)
			require.Contains(t, pe.detail, "the query parameter "+tt.badParameter+" ")
		})
	}
}
