package settlement_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider/settlement"
)

const header = "balance_transaction_id,created_utc,charge_id,merchant_reference,reporting_category,gross,fee,net,currency,refund_id\n"

// legacyHeader is the header of the reports written before refund_id.
const legacyHeader = "balance_transaction_id,created_utc,charge_id,merchant_reference,reporting_category,gross,fee,net,currency\n"

func TestWriterReader_RoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := settlement.NewWriter(&buf)
	require.NoError(t, err)
	require.NoError(t, w.Write(settlement.Record{BalanceTransactionID: "txn_1", CreatedUTC: "2026-03-14T12:09:26Z", ChargeID: "ch_1",
		MerchantReference: "bookstore-1001-a", ReportingCategory: "charge", Gross: "548.90", Fee: "16.22", Net: "532.68", Currency: "TRY"}))
	require.NoError(t, w.Write(settlement.Record{BalanceTransactionID: "txn_2", CreatedUTC: "2026-03-14T13:00:00Z", ChargeID: "ch_1",
		MerchantReference: "bookstore-refund-1", ReportingCategory: "refund", Gross: "-100.00", Fee: "0.00", Net: "-100.00", Currency: "TRY", RefundID: "re_1"}))
	require.NoError(t, w.Flush())
	require.True(t, strings.HasPrefix(buf.String(), header))

	r, err := settlement.NewReader(&buf)
	require.NoError(t, err)
	first, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, settlement.Line{No: 2, BalanceTransactionID: "txn_1", Created: time.Date(2026, 3, 14, 12, 9, 26, 0, time.UTC),
		ChargeID: "ch_1", MerchantReference: "bookstore-1001-a", Category: "charge", Gross: 54890, Fee: 1622, Net: 53268, Currency: "TRY"}, first)
	refund, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, settlement.Line{No: 3, BalanceTransactionID: "txn_2", Created: time.Date(2026, 3, 14, 13, 0, 0, 0, time.UTC),
		ChargeID: "ch_1", MerchantReference: "bookstore-refund-1", Category: "refund", Gross: -10000, Fee: 0, Net: -10000, Currency: "TRY",
		RefundID: "re_1"}, refund)
	_, err = r.Next()
	require.ErrorIs(t, err, io.EOF)
}

func TestReader_ReadsAReportWithoutRefundID(t *testing.T) {
	r, err := settlement.NewReader(strings.NewReader(legacyHeader +
		"txn_1,2026-03-14T12:00:00Z,ch_1,r,charge,5.00,0.00,5.00,TRY\n" +
		"txn_2,2026-03-14T13:00:00Z,ch_1,r,refund,-5.00,0.00,-5.00,TRY\n" +
		"txn_3,2026-03-14T14:00:00Z,ch_1,r,charge,5.00,0.00,5.00,TRY,re_1\n"))
	require.NoError(t, err)

	charge, err := r.Next()
	require.NoError(t, err)
	refund, err := r.Next()
	require.NoError(t, err)
	_, err = r.Next()

	require.Equal(t, "ch_1", charge.ChargeID)
	require.Equal(t, int64(-500), refund.Gross)
	require.Empty(t, refund.RefundID, "the old report has no refund ids")
	var malformed *settlement.MalformedError
	require.ErrorAs(t, err, &malformed, "a line longer than the old header")
	require.Equal(t, "wrong number of fields", malformed.Reason)
}

func TestReader_MalformedLineIsReportedAndReadingGoesOn(t *testing.T) {
	tests := []struct{ name, line, reason string }{
		{"refund without its id", `txn_1,2026-03-14T12:00:00Z,ch_1,r,refund,-1.00,0.00,-1.00,TRY,`, `refund_id is empty on a refund line`},
		{"refund failure without its id", `txn_1,2026-03-14T12:00:00Z,ch_1,r,refund_failure,1.00,0.00,1.00,TRY,`, `refund_id is empty on a refund_failure line`},
		{"charge with a refund id", `txn_1,2026-03-14T12:00:00Z,ch_1,r,charge,1.00,0.00,1.00,TRY,re_1`, `refund_id is set on a charge line, which is about no refund`},
		{"amount with a comma", `txn_1,2026-03-14T12:00:00Z,ch_1,r,charge,"548,90",0.00,548.90,TRY,`, `gross: invalid amount: "548,90" is not a plain decimal number such as "548.90"`},
		{"too many decimals", `txn_1,2026-03-14T12:00:00Z,ch_1,r,charge,1.234,0.00,1.23,TRY,`, `gross: invalid amount: "1.234" has 3 decimals, but TRY allows 2`},
		{"unknown currency", `txn_1,2026-03-14T12:00:00Z,ch_1,r,charge,1.00,0.00,1.00,ZZZ,`, `currency: invalid currency: "ZZZ" is not an ISO 4217 currency`},
		{"bad time", `txn_1,yesterday,ch_1,r,charge,1.00,0.00,1.00,TRY,`, `created_utc "yesterday" is not an RFC 3339 time`},
		{"no charge id", `txn_1,2026-03-14T12:00:00Z,,r,charge,1.00,0.00,1.00,TRY,`, `charge_id is empty`},
		{"net does not add up", `txn_1,2026-03-14T12:00:00Z,ch_1,r,charge,1.00,0.10,1.00,TRY,`, `net 1.00 is not gross 1.00 less fee 0.10`},
		{"missing column", `txn_1,2026-03-14T12:00:00Z,ch_1,r,charge,1.00,0.00,1.00`, `wrong number of fields`},
		{"bare quote", `txn_1,2026-03-14T12:00:00Z,ch_1,r"x,charge,1.00,0.00,1.00,TRY,`, `bare " in non-quoted-field`},
	}
	good := "txn_9,2026-03-14T12:00:00Z,ch_9,r9,charge,5.00,0.00,5.00,TRY,\n"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := settlement.NewReader(strings.NewReader(header + tt.line + "\n" + good))
			require.NoError(t, err)
			_, err = r.Next()
			var malformed *settlement.MalformedError
			require.ErrorAs(t, err, &malformed)
			require.Equal(t, 2, malformed.Line)
			require.Equal(t, tt.reason, malformed.Reason)
			next, err := r.Next()
			require.NoError(t, err)
			require.Equal(t, "ch_9", next.ChargeID)
			require.Equal(t, 3, next.No)
		})
	}
}

func TestReader_WrongHeaderRefusesTheReport(t *testing.T) {
	for _, body := range []string{"", "id,amount\n", strings.TrimSuffix(legacyHeader, ",currency\n") + "\n", legacyHeader[:len(legacyHeader)-1] + ",refund\n"} {
		_, err := settlement.NewReader(strings.NewReader(body))
		require.Error(t, err, "%q", body)
	}
}

func TestParseDate_OnlyCalendarDates(t *testing.T) {
	d, err := settlement.ParseDate("2026-03-14")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC), d)
	for _, bad := range []string{"2026-02-30", "2026-3-14", "14-03-2026", "2026-03-14T00:00:00Z", ""} {
		_, err := settlement.ParseDate(bad)
		require.Error(t, err, bad)
	}
}

func TestParseSettlementDate_FromEarliestDateToToday(t *testing.T) {
	now := time.Date(2026, 3, 14, 0, 30, 0, 0, time.UTC)
	for _, good := range []string{"2000-01-01", "2026-03-13", "2026-03-14"} {
		_, err := settlement.ParseSettlementDate(good, now)
		require.NoError(t, err, good)
	}
	for bad, want := range map[string]string{
		"0000-01-01": "0000-01-01 is before 2000-01-01: no settlement is that old",
		"1999-12-31": "1999-12-31 is before 2000-01-01: no settlement is that old",
		"2026-03-15": "2026-03-15 is in the future: the provider has no report for it yet",
		"2026-02-30": `"2026-02-30" is not a date such as 2026-03-14 (year-month-day, UTC)`,
	} {
		_, err := settlement.ParseSettlementDate(bad, now)
		require.EqualError(t, err, want, bad)
	}
}

func TestClient_OpenStreamsTheReport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/settlements/2026-03-14":
			require.Equal(t, "text/csv", r.Header.Get("Accept"))
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			_, _ = io.WriteString(w, header+"txn_1,2026-03-14T12:00:00Z,ch_1,r,charge,5.00,0.00,5.00,TRY,\n")
		default:
			http.Error(w, "no such report", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c := &settlement.Client{BaseURL: srv.URL, HTTP: srv.Client()}

	report, err := c.Open(context.Background(), "2026-03-14")
	require.NoError(t, err)
	defer report.Close()
	line, err := report.Next()
	require.NoError(t, err)
	require.Equal(t, "ch_1", line.ChargeID)

	_, err = c.Open(context.Background(), "2026-03-15")
	var status *settlement.StatusError
	require.True(t, errors.As(err, &status), "%v", err)
	require.Equal(t, http.StatusNotFound, status.Status)
	require.ErrorIs(t, err, settlement.ErrUnreadable)

	_, err = c.Open(context.Background(), "March 14")
	require.Error(t, err)
}

// FuzzReader feeds the reader any report: it never panics, and every line
// it reads adds up and names a refund exactly when it is about one.
func FuzzReader(f *testing.F) {
	f.Add(header + "txn_1,2026-03-14T12:00:00Z,ch_1,r,charge,5.00,0.30,4.70,TRY,\n")
	f.Add(header + "txn_2,2026-03-14T13:00:00Z,ch_1,r,refund,-5.00,0.00,-5.00,TRY,re_1\n")
	f.Add(legacyHeader + "txn_3,2026-03-14T14:00:00Z,ch_1,r,refund_failure,5.00,0.00,5.00,JPY\n")
	f.Add(header + "txn_4,2026-03-14T14:00:00Z,ch_1,r,charge,\"1,0\",0,1,TRY,re\"\n")
	f.Fuzz(func(t *testing.T, report string) {
		r, err := settlement.NewReader(strings.NewReader(report))
		if err != nil {
			return
		}
		for range 1000 {
			line, err := r.Next()
			var malformed *settlement.MalformedError
			switch {
			case errors.Is(err, io.EOF):
				return
			case errors.As(err, &malformed):
				continue
			case err != nil:
				return
			}
			require.Equal(t, line.Gross, line.Net+line.Fee)
			if line.RefundID != "" {
				require.Contains(t, []string{settlement.CategoryRefund, settlement.CategoryRefundFailure}, line.Category)
			}
		}
	})
}
