package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/internal/apikey"
	"chargeonce/store"
)

const settledDate = "2026-03-14"

// settleWithExceptions records a final settlement of settledDate with two
// exceptions, and returns them.
func settleWithExceptions(t *testing.T, a *testAPI) []store.SettlementException {
	t.Helper()
	ctx := context.Background()
	exceptions := []store.SettlementException{
		{Seq: 1, Kind: chargeonce.ExceptionUnknownCharge, ChargeID: "ch_000007", MerchantReference: "stranger", LineNo: 4,
			ReportedMinor: 12000, ReportedCurrency: "TRY", Detail: "Refund charge ch_000007."},
		{Seq: 2, Kind: chargeonce.ExceptionUnknownCharge, ChargeID: "ch_000008", MerchantReference: "stranger-2", LineNo: 5,
			ReportedMinor: 5000, ReportedCurrency: "TRY", Detail: "Refund charge ch_000008."},
	}
	require.NoError(t, a.store.AddSettlementExceptions(ctx, chargeonce.DefaultProvider, settledDate, "r1", exceptions))
	require.NoError(t, a.store.FinishSettlementRun(ctx, store.SettlementRun{Provider: chargeonce.DefaultProvider, Date: settledDate, RunID: "r1", Status: store.SettlementFinal,
		Lines: 2, Exceptions: 2, GraceDays: 2, FinishedAt: time.Date(2026, 3, 15, 0, 30, 0, 0, time.UTC),
		Totals: []store.SettlementTotal{{Currency: "TRY", Lines: 2, Gross: 17000, Fee: 0, Net: 17000}}}))
	return exceptions
}

func resolvePath(date, id string) string {
	return "/api/settlements/" + date + "/exceptions/" + id + "/resolve"
}

func resolutions(t *testing.T, a *testAPI) map[string]store.ExceptionResolution {
	t.Helper()
	all, err := a.store.ExceptionResolutions(context.Background(), chargeonce.DefaultProvider, settledDate)
	require.NoError(t, err)
	return all
}

func TestResolve_TheFirstResolutionIsKept(t *testing.T) {
	a := startTestAPI(t)
	exceptions := settleWithExceptions(t, a)
	id := store.ExceptionID(settledDate, exceptions[0])
	key, rec := a.newNamedKey(t, "ops laptop", apikey.ScopeOperator)
	const note = "Refunded ch_000007 to the customer; ticket OPS-812."
	start := time.Now().UTC()

	status, _, data := a.sendAs(t, key, http.MethodPost, resolvePath(settledDate, id), `{"note": "`+note+`"}`)
	require.Equal(t, http.StatusCreated, status, "body: %s", data)
	var created wire.ExceptionResolution
	require.NoError(t, json.Unmarshal(data, &created))
	require.WithinRange(t, created.ResolvedAt, start.Add(-time.Second), time.Now().Add(time.Second))
	require.Equal(t, wire.ExceptionResolution{ExceptionID: id, Provider: chargeonce.DefaultProvider, Date: settledDate, Note: note,
		ResolvedBy: wire.KeyRef{KeyID: rec.ID, KeyName: "ops laptop"}, ResolvedAt: created.ResolvedAt}, created)

	// The same note again, by any key, is answered with the one kept.
	status, _, again := a.send(t, http.MethodPost, resolvePath(settledDate, id), "application/json", `{"note": "`+note+`"}`)
	require.Equal(t, http.StatusOK, status, "body: %s", again)
	require.JSONEq(t, string(data), string(again))

	status, header, conflict := a.send(t, http.MethodPost, resolvePath(settledDate, id), "application/json", `{"note": "Written off."}`)
	p := requireProblem(t, http.StatusConflict, status, header, conflict)
	require.Equal(t, string(wire.ProblemAlreadyResolved), p.Type)
	require.Contains(t, p.Detail, rec.ID)
	require.Contains(t, p.Detail, "ops laptop")
	require.Contains(t, p.Detail, created.ResolvedAt.Format(time.RFC3339))

	all := resolutions(t, a)
	require.Len(t, all, 1)
	require.Equal(t, note, all[id].Note)

	entries := auditLog(t, a)
	require.Len(t, entries, 3)
	var got []string
	for _, e := range entries {
		require.Equal(t, "resolve_exception", e.Action)
		got = append(got, http.StatusText(e.Status))
	}
	require.Equal(t, []string{"Conflict", "OK", "Created"}, got)
	require.Equal(t, rec.ID, entries[2].KeyID)
	require.Equal(t, p.Detail, entries[0].Result)
}

func TestResolve_TheSettlementShowsEachExceptionsIDAndResolution(t *testing.T) {
	a := startTestAPI(t)
	exceptions := settleWithExceptions(t, a)
	first, second := store.ExceptionID(settledDate, exceptions[0]), store.ExceptionID(settledDate, exceptions[1])
	require.Regexp(t, `^[0-9a-f]{16}$`, first)
	require.NotEqual(t, first, second)

	var before wire.Settlement
	getJSON(t, a, "/api/settlements/"+settledDate, &before)
	require.Equal(t, 2, before.OpenExceptions)
	require.Len(t, before.Exceptions, 2)
	require.Equal(t, first, before.Exceptions[0].ID)
	require.Nil(t, before.Exceptions[0].Resolution)

	var resolved wire.ExceptionResolution
	postJSON(t, a, resolvePath(settledDate, second), `{"note": "Written off."}`, http.StatusCreated, &resolved)

	status, _, data := a.send(t, http.MethodGet, "/api/settlements/"+settledDate, "", "")
	require.Equal(t, http.StatusOK, status)
	var after wire.Settlement
	require.NoError(t, json.Unmarshal(data, &after))
	require.Equal(t, 1, after.OpenExceptions)
	require.Equal(t, first, after.Exceptions[0].ID)
	require.Nil(t, after.Exceptions[0].Resolution)
	require.Equal(t, second, after.Exceptions[1].ID)
	require.Equal(t, &resolved, after.Exceptions[1].Resolution)
	require.Contains(t, string(data), `"id":"`+first+`","resolution":null`)
}

func TestResolve_AnExceptionTheSettlementDoesNotListIs404(t *testing.T) {
	a := startTestAPI(t)
	exceptions := settleWithExceptions(t, a)

	status, header, data := a.send(t, http.MethodPost, resolvePath(settledDate, "0123456789abcdef"), "application/json", `{"note": "done"}`)
	p := requireProblem(t, http.StatusNotFound, status, header, data)
	require.Contains(t, p.Detail, "has no exception 0123456789abcdef")

	// An exception's id names its date too.
	status, header, data = a.send(t, http.MethodPost, resolvePath("2026-03-13", store.ExceptionID(settledDate, exceptions[0])), "application/json", `{"note": "done"}`)
	p = requireProblem(t, http.StatusNotFound, status, header, data)
	require.Contains(t, p.Detail, "2026-03-13 has not been settled yet")
	require.Empty(t, resolutions(t, a))
}

func TestResolve_BadRequestsAre400AndStoreNothing(t *testing.T) {
	a := startTestAPI(t)
	exceptions := settleWithExceptions(t, a)
	path := resolvePath(settledDate, store.ExceptionID(settledDate, exceptions[0]))
	for _, tt := range []struct{ name, path, body, detail string }{
		{"empty note", path, `{"note": ""}`, `field "note" is blank`},
		{"a tab", path, `{"note": " \t "}`, `field "note" must not contain control characters`},
		{"spaces only", path, `{"note": "   "}`, `field "note" is blank`},
		{"no-break spaces only", path, `{"note": "\u00a0\u2003"}`, `field "note" is blank`},
		{"a format character", path, `{"note": "ok \u202eexe"}`, "invisible format characters"},
		{"a control character", path, `{"note": "a\u0000b"}`, "control characters"},
		{"too long", path, `{"note": "` + strings.Repeat("ş", store.MaxResolutionNote+1) + `"}`, "at most 1000"},
		{"no note", path, `{}`, `field "note" is required`},
		{"null note", path, `{"note": null}`, `field "note" must not be null`},
		{"unknown field", path, `{"note": "done", "by": "me"}`, `unknown field "by"`},
		{"bad date", resolvePath("2026-02-30", "0123456789abcdef"), `{"note": "done"}`, "the settlement date"},
		{"upper-case id", resolvePath(settledDate, "0123456789ABCDEF"), `{"note": "done"}`, "16 lower-case hex digits"},
		{"short id", resolvePath(settledDate, "0123456789abcde"), `{"note": "done"}`, "16 lower-case hex digits"},
		{"id not hex", resolvePath(settledDate, "0123456789abcdeg"), `{"note": "done"}`, "16 lower-case hex digits"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, header, data := a.sendInvalid(t, http.MethodPost, tt.path, "application/json", tt.body)
			p := requireProblem(t, http.StatusBadRequest, status, header, data)
			require.Equal(t, string(wire.ProblemInvalidRequest), p.Type)
			require.Contains(t, p.Detail, tt.detail)
			require.Empty(t, resolutions(t, a))
		})
	}

	// A note of the most characters is taken.
	status, _, data := a.send(t, http.MethodPost, path, "application/json", `{"note": "`+strings.Repeat("ş", store.MaxResolutionNote)+`"}`)
	require.Equal(t, http.StatusCreated, status, "body: %s", data)
}
