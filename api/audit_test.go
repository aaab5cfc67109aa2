package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/api/wire"
	"chargeonce/internal/apikey"
	"chargeonce/store"
)

// newNamedKey stores a new API key with this name and these scopes and
// returns it with its record.
func (a *testAPI) newNamedKey(t *testing.T, name string, scopes ...apikey.Scope) (string, apikey.Record) {
	t.Helper()
	key, rec, err := apikey.New(name, scopes, time.Now())
	require.NoError(t, err)
	require.NoError(t, a.store.CreateAPIKey(context.Background(), rec))
	return key.String(), rec
}

// sendAs makes one request with key.
func (a *testAPI) sendAs(t *testing.T, key, method, path, body string) (int, http.Header, []byte) {
	t.Helper()
	contentType := ""
	if body != "" {
		contentType = "application/json"
	}
	return a.sendWith(t, map[string]string{"Authorization": "Bearer " + key, "Content-Type": contentType}, method, path, body)
}

// auditLog reads the whole audit log from the store, newest first.
func auditLog(t *testing.T, a *testAPI) []store.AuditEntry {
	t.Helper()
	entries, err := a.store.AuditLog(context.Background(), 0, store.MaxAuditPage)
	require.NoError(t, err)
	return entries
}

func TestAudit_AnOperatorActionIsAnEntryWithItsKeyActionStatusAndResult(t *testing.T) {
	a := startTestAPI(t)
	key, rec := a.newNamedKey(t, "ops laptop", apikey.ScopeOperator)
	body := `{"url": "` + endpointURL + `", "eventTypes": [], "description": "Shop backend"}`
	start := time.Now().UTC()

	status, header, data := a.sendAs(t, key, http.MethodPost, "/api/webhook-endpoints", body)
	require.Equal(t, http.StatusCreated, status, "body: %s", data)
	location := header.Get("Location")
	status, _, data = a.sendAs(t, key, http.MethodPost, location+"/disable", `{}`)
	require.Equal(t, http.StatusOK, status, "body: %s", data)
	status, header, data = a.sendInvalidWith(t, map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"},
		http.MethodPost, "/api/events/evt_00000000000000000000000000000000/replay", `{"endpointId": "we_x"}`)
	p := requireProblem(t, http.StatusBadRequest, status, header, data)

	entries := auditLog(t, a)
	require.Len(t, entries, 3)
	for _, e := range entries {
		require.WithinRange(t, e.At, start.Add(-time.Second), time.Now().Add(time.Second))
		require.Equal(t, rec.ID, e.KeyID)
		require.Equal(t, "ops laptop", e.KeyName)
		require.Equal(t, store.AuditViaAPI, e.Via)
		require.Equal(t, http.MethodPost, e.Method)
		require.Empty(t, e.IdempotencyKey)
	}
	replay, disable, create := entries[0], entries[1], entries[2]
	require.Greater(t, replay.ID, disable.ID, "newest first")
	require.Greater(t, disable.ID, create.ID)

	require.Equal(t, "create_endpoint", create.Action)
	require.Equal(t, "/api/webhook-endpoints", create.Path)
	require.Equal(t, body, create.Request)
	require.Equal(t, http.StatusCreated, create.Status)
	require.Equal(t, location, create.Result)

	require.Equal(t, "disable_endpoint", disable.Action)
	require.Equal(t, location+"/disable", disable.Path)
	require.Equal(t, `{}`, disable.Request)
	require.Equal(t, http.StatusOK, disable.Status)
	require.Equal(t, "ok", disable.Result)

	require.Equal(t, "replay_event", replay.Action)
	require.Equal(t, http.StatusBadRequest, replay.Status)
	require.Equal(t, p.Detail, replay.Result)
}

// A request that the key or its scope does not allow is no action: it is
// not in the log. Nor are the reads.
func TestAudit_RefusedRequestsAndReadsAreNoEntries(t *testing.T) {
	a := startTestAPI(t)
	checkoutOnly := a.newKey(t, apikey.ScopeCheckout)
	body := `{"url": "` + endpointURL + `"}`

	status, header, data := a.sendInvalidWith(t, map[string]string{"Content-Type": "application/json"}, http.MethodPost, "/api/webhook-endpoints", body)
	requireProblem(t, http.StatusUnauthorized, status, header, data)
	status, header, data = a.sendAs(t, "ck_0000000000000000_"+strings.Repeat("0", 64), http.MethodPost, "/api/webhook-endpoints", body)
	requireProblem(t, http.StatusUnauthorized, status, header, data)
	status, header, data = a.sendAs(t, checkoutOnly, http.MethodPost, "/api/webhook-endpoints", body)
	requireProblem(t, http.StatusForbidden, status, header, data)
	status, header, data = a.sendAs(t, checkoutOnly, http.MethodPost, "/api/settlements/2026-03-14/run", `{}`)
	requireProblem(t, http.StatusForbidden, status, header, data)
	status, header, data = a.sendAs(t, checkoutOnly, http.MethodGet, "/api/audit-log", "")
	requireProblem(t, http.StatusForbidden, status, header, data)

	var list wire.EndpointList
	getJSON(t, a, "/api/webhook-endpoints", &list)
	status, _, _ = a.send(t, http.MethodGet, "/api/settlements/2026-03-14", "", "")
	require.Equal(t, http.StatusNotFound, status)
	var log wire.AuditLog
	getJSON(t, a, "/api/audit-log", &log)

	require.Empty(t, auditLog(t, a))
	require.Empty(t, log.Entries)
}

// The answers that show an endpoint's secret are audited without it.
func TestAudit_TheLogNeverHoldsASecret(t *testing.T) {
	a := startTestAPI(t)
	e, _ := createEndpoint(t, a, `{"url": "`+endpointURL+`", "eventTypes": [], "description": ""}`)
	var rotated wire.Endpoint
	postJSON(t, a, "/api/webhook-endpoints/"+e.ID+"/rotate-secret", `{"keepPreviousFor": "1h"}`, http.StatusOK, &rotated)
	require.NotEmpty(t, rotated.Secret)

	entries := auditLog(t, a)
	require.Len(t, entries, 2)
	require.Equal(t, "rotate_endpoint_secret", entries[0].Action)
	require.Equal(t, "ok", entries[0].Result)
	require.Equal(t, `{"keepPreviousFor": "1h"}`, entries[0].Request)
	require.Equal(t, "create_endpoint", entries[1].Action)
	status, _, data := a.send(t, http.MethodGet, "/api/audit-log", "", "")
	require.Equal(t, http.StatusOK, status)
	for _, secret := range []string{e.Secret, rotated.Secret} {
		require.NotContains(t, fmt.Sprint(entries), secret)
		require.NotContains(t, string(data), secret)
	}
	require.NotContains(t, string(data), "whsec_")
}

// Each request is an entry, a repeat under the same Idempotency-Key too,
// with its key.
func TestAudit_EveryRequestIsAnEntryWithItsIdempotencyKey(t *testing.T) {
	a := startTestAPI(t)
	id, _ := createOrder(t, a, `{"amount": "10.00", "currency": "TRY"}`)
	for range 2 {
		status, header, data := a.sendWith(t, map[string]string{"Authorization": "Bearer " + a.key, "Idempotency-Key": strconv.Quote("void-1")},
			http.MethodPost, fmt.Sprintf("/api/orders/%d/void", id), "")
		requireProblem(t, http.StatusConflict, status, header, data)
	}
	entries := auditLog(t, a)
	require.Len(t, entries, 2)
	for _, e := range entries {
		require.Equal(t, "void_order", e.Action)
		require.Equal(t, "void-1", e.IdempotencyKey)
		require.Equal(t, http.StatusConflict, e.Status)
		require.Contains(t, e.Result, "never authorized")
		require.Empty(t, e.Request)
	}

	var log wire.AuditLog
	getJSON(t, a, "/api/audit-log", &log)
	require.Len(t, log.Entries, 2)
	require.NotNil(t, log.Entries[0].IdempotencyKey)
	require.Equal(t, "void-1", *log.Entries[0].IdempotencyKey)
}

// A body over the bound is kept cut in the log, and the handler still
// reads all of it: the answer is about the description's length, not a
// body cut short.
func TestAudit_ALongBodyIsKeptCut(t *testing.T) {
	a := startTestAPI(t)
	body := `{"url": "` + endpointURL + `", "description": "` + strings.Repeat("d", store.MaxAuditRequest) + `"}`
	status, header, data := a.sendInvalid(t, http.MethodPost, "/api/webhook-endpoints", "application/json", body)
	p := requireProblem(t, http.StatusBadRequest, status, header, data)
	require.Contains(t, p.Detail, "at most 500")

	entries := auditLog(t, a)
	require.Len(t, entries, 1)
	kept := entries[0].Request
	require.LessOrEqual(t, len(kept), store.MaxAuditRequest)
	require.True(t, strings.HasSuffix(kept, "…(cut)"))
	require.True(t, strings.HasPrefix(body, strings.TrimSuffix(kept, "…(cut)")))
}

// appendEntries appends n entries to the log and returns their ids, oldest
// first.
func appendEntries(t *testing.T, a *testAPI, n int) []int64 {
	t.Helper()
	var ids []int64
	for i := range n {
		e, err := a.store.AppendAudit(context.Background(), store.AuditEntry{At: time.Date(2026, 3, 15, 9, 0, i, 0, time.UTC),
			KeyID: "3f9c0b8e1d2a4c57", KeyName: "ops laptop", Via: store.AuditViaAPI, Action: "run_settlement",
			Method: http.MethodPost, Path: "/api/settlements/2026-03-14/run", Request: "{}", Status: http.StatusOK, Result: "ok"})
		require.NoError(t, err)
		ids = append(ids, e.ID)
	}
	return ids
}

func TestAuditLog_PagesNewestFirst(t *testing.T) {
	a := startTestAPI(t)
	ids := appendEntries(t, a, 5)

	page := func(query string) ([]int64, *int64) {
		t.Helper()
		var log wire.AuditLog
		getJSON(t, a, "/api/audit-log"+query, &log)
		var got []int64
		for _, e := range log.Entries {
			got = append(got, e.ID)
		}
		return got, log.NextBefore
	}
	got, next := page("?limit=2")
	require.Equal(t, []int64{ids[4], ids[3]}, got)
	require.NotNil(t, next)
	require.Equal(t, ids[3], *next)
	got, next = page(fmt.Sprintf("?limit=2&before=%d", *next))
	require.Equal(t, []int64{ids[2], ids[1]}, got)
	require.NotNil(t, next)
	got, next = page(fmt.Sprintf("?limit=2&before=%d", *next))
	require.Equal(t, []int64{ids[0]}, got)
	require.Nil(t, next, "a page that is not full is the last")

	got, next = page("")
	require.Len(t, got, 5, "the default limit takes them all")
	require.Nil(t, next)
	got, next = page("?limit=5")
	require.Len(t, got, 5)
	require.NotNil(t, next, "a full page may have a next one")
	got, next = page(fmt.Sprintf("?limit=5&before=%d", *next))
	require.Empty(t, got)
	require.Nil(t, next)

	status, _, data := a.send(t, http.MethodGet, fmt.Sprintf("/api/audit-log?limit=1&before=%d", ids[2]), "", "")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, fmt.Sprintf(`{"entries": [{"id": %d, "at": "2026-03-15T09:00:01Z", "keyId": "3f9c0b8e1d2a4c57", "keyName": "ops laptop",
		"via": "api", "action": "run_settlement", "method": "POST", "path": "/api/settlements/2026-03-14/run", "request": "{}",
		"idempotencyKey": null, "status": 200, "result": "ok"}], "nextBefore": %d}`, ids[1], ids[1]), string(data))
}

func TestAuditLog_BadParametersAre400NamingThem(t *testing.T) {
	a := startTestAPI(t)
	for _, tt := range []struct{ query, parameter string }{
		{"limit=0", "limit"},
		{"limit=201", "limit"},
		{"limit=ten", "limit"},
		{"limit=1&limit=2", "limit"},
		{"before=0", "before"},
		{"before=-5", "before"},
		{"before=abc", "before"},
		{"before=99999999999999999999", "before"},
	} {
		t.Run(tt.query, func(t *testing.T) {
			status, header, data := a.sendInvalid(t, http.MethodGet, "/api/audit-log?"+tt.query, "", "")
			p := requireProblem(t, http.StatusBadRequest, status, header, data)
			require.Contains(t, p.Detail, "the query parameter "+tt.parameter)
		})
	}
}

// A path that holds what no text column may is kept readable, not lost.
func TestAudit_APathWithANULIsKept(t *testing.T) {
	a := startTestAPI(t)
	status, header, data := a.sendInvalid(t, http.MethodPost, "/api/events/evt_%00/replay", "application/json", `{"endpointId": "we_x"}`)
	requireProblem(t, http.StatusBadRequest, status, header, data)
	entries := auditLog(t, a)
	require.Len(t, entries, 1)
	require.Equal(t, "/api/events/evt_\uFFFD/replay", entries[0].Path)
	require.Equal(t, http.StatusBadRequest, entries[0].Status)
}
