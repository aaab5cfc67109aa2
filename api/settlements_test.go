package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/store"
)

func TestAPI_BadSettlementDatesAre400AndChangeNothing(t *testing.T) {
	tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	tests := []struct{ date, detail string }{
		{"2026-02-30", `the settlement date "2026-02-30" is not a date such as 2026-03-14`},
		{"14-03-2026", `the settlement date "14-03-2026" is not a date`},
		{"yesterday", `the settlement date "yesterday" is not a date`},
		{tomorrow, "is in the future: the provider has no report for it yet"},
		{"0000-01-01", "the settlement date 0000-01-01 is before 2000-01-01: no settlement is that old"},
		{"1999-12-31", "is before 2000-01-01"},
	}
	a := startTestAPI(t)
	for _, tt := range tests {
		for _, call := range []struct{ method, path string }{
			{http.MethodGet, "/api/settlements/" + tt.date},
			{http.MethodPost, "/api/settlements/" + tt.date + "/run"},
		} {
			t.Run(call.method+" "+tt.date, func(t *testing.T) {
				before := a.snapshot(t)
				status, header, body := a.sendInvalid(t, call.method, call.path, "", "")
				p := requireProblem(t, http.StatusBadRequest, status, header, body)
				require.Contains(t, p.Detail, tt.detail)
				require.Equal(t, before, a.snapshot(t))
			})
		}
	}
}

func TestAPI_UnsettledDateIs404WithWhatToDo(t *testing.T) {
	a := startTestAPI(t)
	status, header, body := a.send(t, http.MethodGet, "/api/settlements/2026-03-14", "", "")
	p := requireProblem(t, http.StatusNotFound, status, header, body)
	require.Equal(t, "2026-03-14 has not been settled yet at provider default: POST /api/settlements/2026-03-14/run settles it now", p.Detail)

	status, header, body = a.send(t, http.MethodGet, "/api/settlements/2026-03-14?provider=backup", "", "")
	p = requireProblem(t, http.StatusNotFound, status, header, body)
	require.Equal(t, "2026-03-14 has not been settled yet at provider backup: POST /api/settlements/2026-03-14/run?provider=backup settles it now", p.Detail)
}

func TestAPI_SettlementShowsTheRecordedRun(t *testing.T) {
	a := startTestAPI(t)
	ctx := context.Background()
	finished := time.Date(2026, 3, 15, 0, 30, 0, 0, time.UTC)
	exception := store.SettlementException{
		Seq: 1, Kind: chargeonce.ExceptionUnknownCharge, ChargeID: "ch_000007", MerchantReference: "shop-1001-x", OrderID: 1001,
		AttemptKey: "0190a0a0-0000-7000-8000-000000000001", LineNo: 4, ReportedMinor: 12000, ReportedCurrency: "TRY",
		ExpectedMinor: 54890, ExpectedCurrency: "TRY", Detail: "Refund charge ch_000007.",
	}
	require.NoError(t, a.store.AddSettlementExceptions(ctx, chargeonce.DefaultProvider, "2026-03-14", "r1", []store.SettlementException{exception}))
	require.NoError(t, a.store.FinishSettlementRun(ctx, store.SettlementRun{Provider: chargeonce.DefaultProvider, Date: "2026-03-14", RunID: "r1", Status: store.SettlementFinal,
		Lines: 3, Matched: 2, Exceptions: 1, GraceDays: 2, FinishedAt: finished,
		Totals: []store.SettlementTotal{{Currency: "TRY", Lines: 3, Gross: 67890, Fee: 1900, Net: 65990}}}))

	status, _, body := a.send(t, http.MethodGet, "/api/settlements/2026-03-14", "", "")

	require.Equal(t, http.StatusOK, status, "body: %s", body)
	require.JSONEq(t, `{
		"provider": "default", "date": "2026-03-14", "status": "final", "finishedAt": "2026-03-15T00:30:00Z", "graceDays": 2,
		"lines": 3, "matched": 2, "awaiting": 0,
		"totals": [{"currency": "TRY", "lines": 3, "gross": "678.90", "fee": "19.00", "net": "659.90"}],
		"exceptionCounts": {"unknown_charge": 1},
		"exceptions": [{"kind": "unknown_charge", "chargeId": "ch_000007", "merchantReference": "shop-1001-x", "orderId": 1001,
			"idempotencyKey": "0190a0a0-0000-7000-8000-000000000001", "line": 4,
			"reported": {"amount": "120.00", "currency": "TRY"}, "expected": {"amount": "548.90", "currency": "TRY"},
			"detail": "Refund charge ch_000007.", "id": "`+store.ExceptionID("2026-03-14", exception)+`", "resolution": null}],
		"openExceptions": 1
	}`, string(body))
}
