package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

const settledDay = `{"provider": "backup", "date": "2026-03-14", "status": "final", "finishedAt": "2026-03-15T00:30:00Z", "graceDays": 2,
	"lines": 3, "matched": 2, "awaiting": 0,
	"totals": [{"currency": "TRY", "lines": 3, "gross": "678.90", "fee": "19.00", "net": "659.90"}],
	"exceptionCounts": {"unknown_charge": 1},
	"exceptions": [{"kind": "unknown_charge", "chargeId": "ch_000007", "merchantReference": "shop-1001-x", "orderId": 1001,
		"line": 4, "reported": {"amount": "120.00", "currency": "TRY"}, "detail": "Refund charge ch_000007."}]}`

func TestSettlement_RunPrintsTheDayAsTables(t *testing.T) {
	var asked string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = r.Method + " " + r.URL.RequestURI()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, settledDay)
	}))
	defer srv.Close()

	code, stdout, stderr := runStarter(t, nil, "settlement", "run", "--date", "2026-03-14", "--provider", "backup", "--api", srv.URL)

	require.Equal(t, exitPaid, code, "stderr: %s", stderr)
	require.Equal(t, "POST /api/settlements/2026-03-14/run?provider=backup", asked)
	require.Equal(t, `settlement of 2026-03-14 at backup: final (grace 2 days), run at 2026-03-15T00:30:00Z
  3 lines, 2 matched, 0 awaiting their report, exceptions: 1

CURRENCY  LINES  GROSS   FEE    NET
TRY       3      678.90  19.00  659.90

KIND            CHARGE     ORDER  LINE  REPORTED    EXPECTED
unknown_charge  ch_000007  1001   4     120.00 TRY  -

1. unknown_charge: Refund charge ch_000007.
`, stdout)
}

func TestSettlement_ShowOfAnUnsettledDayExits1WithTheReason(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"title": "The resource does not exist.", "status": 404, "detail": "2026-03-14 has not been settled yet"}`)
	}))
	defer srv.Close()

	code, stdout, stderr := runStarter(t, nil, "settlement", "show", "--date", "2026-03-14", "--api", srv.URL)

	require.Equal(t, exitOther, code)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "2026-03-14 has not been settled yet (HTTP 404)")
}

func TestSettlement_ADateOutsideTheWindowIsAUsageErrorAndAsksNothing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the API was asked %s %s", r.Method, r.URL.Path)
	}))
	defer srv.Close()

	code, stdout, stderr := runStarter(t, nil, "settlement", "run", "--date", "0000-01-01", "--api", srv.URL)

	require.Equal(t, exitUsage, code)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "--date 0000-01-01 is before 2000-01-01: no settlement is that old")

	code, stdout, stderr = runStarter(t, nil, "settlement", "show", "--date", "2026-03-14", "--provider", "Backup!", "--api", srv.URL)

	require.Equal(t, exitUsage, code)
	require.Empty(t, stdout)
	require.Contains(t, stderr, `--provider: provider name "Backup!" must be a lower-case letter`)
}
