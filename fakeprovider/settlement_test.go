package fakeprovider

import (
	"io"
	"math"
	"math/big"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/webhook"
	"chargeonce/provider/settlement"
)

// reportDay is the test clock's date.
const reportDay = "2026-11-30"

// readReport fetches the CSV report of date and reads every line.
func readReport(t *testing.T, f *fixture, date string) []settlement.Line {
	t.Helper()
	r := f.do(t, get("/v1/settlements/"+date))
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, "text/csv; charset=utf-8", r.header.Get("Content-Type"))
	rd, err := settlement.NewReader(strings.NewReader(string(r.body)))
	require.NoError(t, err)
	var lines []settlement.Line
	for {
		l, err := rd.Next()
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			return lines
		}
		lines = append(lines, l)
	}
}

// charge makes a succeeded charge through the API and returns its id.
func (f *fixture) charge(t *testing.T, key string, amount int64, source string) string {
	t.Helper()
	r := f.do(t, post(key, chargeBody(amount, source, "ref-"+key)))
	require.Contains(t, []int{http.StatusCreated, http.StatusPaymentRequired}, r.status, "body: %s", r.body)
	if r.status == http.StatusPaymentRequired {
		return decode[problem](t, r).ChargeID
	}
	return decode[Charge](t, r).ID
}

func TestSettlementReport_ListsTheDaysSucceededChargesWithFees(t *testing.T) {
	f := newFixture(t, Config{Fee: FeeRule{BasisPoints: 290, FixedMinor: 30}})
	first := f.charge(t, "k1", 54890, "tok_visa")
	f.charge(t, "k2", 1000, "tok_chargeDeclined")
	f.clock.Advance(24 * time.Hour)
	f.charge(t, "k3", 700, "tok_visa")

	lines := readReport(t, f, reportDay)

	require.Equal(t, []settlement.Line{{
		No: 2, BalanceTransactionID: "txn_000001", Created: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
		ChargeID: first, MerchantReference: "ref-k1", Category: settlement.CategoryCharge,
		// 2.9% of 548.90 is 15.9181, rounded to 15.92, plus 0.30.
		Gross: 54890, Fee: 1622, Net: 53268, Currency: "TRY",
	}}, lines)
	require.Len(t, readReport(t, f, "2026-12-01"), 1)
	require.Empty(t, readReport(t, f, "2026-11-29"))
}

func TestSettlementReport_JSONWhenAsked(t *testing.T) {
	f := newFixture(t, Config{})
	id := f.charge(t, "k1", 54890, "tok_visa")
	req := get("/v1/settlements/" + reportDay)
	r, err := f.sendWithAccept(req, "application/json")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.status)
	body := decode[struct {
		Date string              `json:"date"`
		Data []settlement.Record `json:"data"`
	}](t, r)
	require.Equal(t, reportDay, body.Date)
	require.Equal(t, []settlement.Record{{BalanceTransactionID: "txn_000001", CreatedUTC: "2026-11-30T10:00:00Z", ChargeID: id,
		MerchantReference: "ref-k1", ReportingCategory: "charge", Gross: "548.90", Fee: "0.00", Net: "548.90", Currency: "TRY"}}, body.Data)
}

func TestSettlementReport_BadDateIsA400(t *testing.T) {
	f := newFixture(t, Config{})
	for _, date := range []string{"2026-13-01", "30-11-2026", "2026-11-31", "today"} {
		p := requireProblem(t, f.do(t, get("/v1/settlements/"+date)), http.StatusBadRequest, msgReportDate)
		require.Equal(t, "date", p.Param)
	}
}

func TestPlantCharge_AppearsInTheReportWithoutARequest(t *testing.T) {
	f := newFixture(t, Config{})
	r := f.do(t, call{method: http.MethodPost, path: "/_admin/charges",
		body: `{"amount":12000,"currency":"TRY","merchant_reference":"bookstore-1001-x","status":"succeeded"}`})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	planted := decode[Charge](t, r)
	require.Equal(t, Charge{ID: "ch_000001", Object: "charge", Amount: 12000, Currency: "TRY", Status: ChargeSucceeded,
		MerchantReference: "bookstore-1001-x", Created: f.clock.Now()}, planted)

	lines := readReport(t, f, reportDay)
	require.Len(t, lines, 1)
	require.Equal(t, planted.ID, lines[0].ChargeID)
	require.Empty(t, f.p.ChargeRequests(), "a planted charge is not a request")
}

func TestPlantCharge_AnnouncesTheChargeWhenAsked(t *testing.T) {
	a := newReceiver(t, always(http.StatusOK))
	f := newFixture(t, Config{Webhooks: webhookConfig(a.srv.URL)})
	_, err := f.p.PlantCharge(PlantedCharge{Amount: 100, Currency: "TRY", MerchantReference: "quiet", Status: ChargeSucceeded})
	require.NoError(t, err)

	r := f.do(t, call{method: http.MethodPost, path: "/_admin/charges",
		body: `{"amount":12000,"currency":"TRY","merchant_reference":"bookstore-1001-x","idempotency_key":"attempt-key-1","status":"succeeded","send_event":true}`})

	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	planted := decode[Charge](t, r)
	require.Equal(t, "attempt-key-1", planted.IdempotencyKey)
	deliveries := awaitDeliveries(t, f.p, 1)
	require.Equal(t, planted.ID, deliveries[0].ChargeID)
	got := a.received()
	require.Len(t, got, 1, "only the charge planted with send_event is announced")
	require.Equal(t, webhook.EventChargeSucceeded, got[0].event.Type)
	require.Equal(t, planted, got[0].event.charge(t))
	// The key is shown, not stored: a request with it is a new charge.
	require.Equal(t, http.StatusCreated, f.do(t, post("attempt-key-1", validBody)).status)
}

func TestPlantCharge_InvalidChargeIsRefusedAndNothingChanges(t *testing.T) {
	tests := []struct{ name, body, param, detail string }{
		{"no amount", `{"currency":"TRY","merchant_reference":"r","status":"succeeded"}`, "amount", msgAmount},
		{"bad currency", `{"amount":1,"currency":"try","merchant_reference":"r","status":"succeeded"}`, "currency", msgCurrency},
		{"no reference", `{"amount":1,"currency":"TRY","status":"succeeded"}`, "merchant_reference", msgReferenceMissing},
		{"bad status", `{"amount":1,"currency":"TRY","merchant_reference":"r","status":"pending"}`, "status", msgPlantedStatus},
		{"long key", `{"amount":1,"currency":"TRY","merchant_reference":"r","status":"succeeded","idempotency_key":"` + strings.Repeat("k", 256) + `"}`, "idempotency_key", msgKeyTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{})
			p := requireProblem(t, f.do(t, call{method: http.MethodPost, path: "/_admin/charges", body: tt.body}), http.StatusBadRequest, tt.detail)
			require.Equal(t, tt.param, p.Param)
			require.Empty(t, f.p.Charges())
		})
	}
}

func TestPlantCharge_SurvivesARestartWithADataFile(t *testing.T) {
	f := newFixture(t, Config{DataFile: filepath.Join(t.TempDir(), "fake.db")})
	_, err := f.p.PlantCharge(PlantedCharge{Amount: 500, Currency: "TRY", MerchantReference: "r", Status: ChargeSucceeded})
	require.NoError(t, err)
	f = f.restart(t, Mode{})
	require.Len(t, readReport(t, f, reportDay), 1)
}

func TestAlterSettlement_SimulatesTheProvidersMistakes(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		gross []int64
		// malformed counts the lines that no longer read.
		malformed int
	}{
		{"drop", `{"action":"drop"}`, []int64{700}, 0},
		{"duplicate", `{"action":"duplicate"}`, []int64{54890, 54890, 700}, 0},
		{"change the amount", `{"action":"change","gross":"549.00"}`, []int64{54900, 700}, 0},
		{"change the currency", `{"action":"change","currency":"EUR"}`, []int64{54890, 700}, 0},
		{"malform the amount", `{"action":"change","gross":"548,90"}`, []int64{700}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{})
			id := f.charge(t, "k1", 54890, "tok_visa")
			f.charge(t, "k2", 700, "tok_visa")
			body := `{"date":"` + reportDay + `","charge_id":"` + id + `",` + strings.TrimPrefix(tt.body, "{")
			r := f.do(t, call{method: http.MethodPost, path: "/_admin/settlements", body: body})
			require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)

			raw := f.do(t, get("/v1/settlements/"+reportDay))
			rd, err := settlement.NewReader(strings.NewReader(string(raw.body)))
			require.NoError(t, err)
			var gross []int64
			malformed := 0
			for {
				l, err := rd.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					malformed++
					continue
				}
				gross = append(gross, l.Gross)
			}
			require.Equal(t, tt.gross, gross)
			require.Equal(t, tt.malformed, malformed)
		})
	}
}

func TestAlterSettlement_InvalidAlterationIsRefused(t *testing.T) {
	tests := []struct{ name, body, param, detail string }{
		{"bad date", `{"date":"2026-11-31","charge_id":"ch_000001","action":"drop"}`, "date", msgReportDate},
		{"bad action", `{"date":"2026-11-30","charge_id":"ch_000001","action":"shred"}`, "action", msgAlterationAction},
		{"empty change", `{"date":"2026-11-30","charge_id":"ch_000001","action":"change"}`, "action", msgAlterationChange},
		{"unknown charge", `{"date":"2026-11-30","charge_id":"ch_999999","action":"drop"}`, "charge_id", msgAlterationNoCharge},
		{"charge of another day", `{"date":"2026-11-29","charge_id":"ch_000001","action":"drop"}`, "charge_id", msgAlterationNoCharge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{})
			f.charge(t, "k1", 54890, "tok_visa")
			p := requireProblem(t, f.do(t, call{method: http.MethodPost, path: "/_admin/settlements", body: tt.body}), http.StatusBadRequest, tt.detail)
			require.Equal(t, tt.param, p.Param)
			require.Len(t, readReport(t, f, reportDay), 1)
		})
	}
}

func TestFeeRule_RoundsHalfUpAndNeverExceedsTheCharge(t *testing.T) {
	rule := FeeRule{BasisPoints: 250, FixedMinor: 30}
	require.Equal(t, int64(30+3), rule.Fee(120))                  // 2.5% of 120 is 3
	require.Equal(t, int64(1), FeeRule{BasisPoints: 250}.Fee(20)) // 0.5 rounds up to 1
	require.Equal(t, int64(0), FeeRule{BasisPoints: 250}.Fee(19)) // 0.475 rounds down
	require.Equal(t, int64(10), rule.Fee(10))                     // capped at the charge
	require.Error(t, FeeRule{BasisPoints: -1}.Validate())
	require.Error(t, FeeRule{FixedMinor: -1}.Validate())
	require.Error(t, Config{Fee: FeeRule{BasisPoints: 10001}}.Validate())
}

// The fee is exact where amount*BasisPoints does not fit in int64: the
// largest amounts are compared with the same rule in big integers.
func TestFeeRule_ExactForTheLargestAmounts(t *testing.T) {
	rules := []FeeRule{DefaultFee, {BasisPoints: 10000}, {BasisPoints: 9999, FixedMinor: math.MaxInt64}, {BasisPoints: 1}}
	for _, rule := range rules {
		for _, amount := range []int64{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 / 290, 99_999_999, 1} {
			want := new(big.Int).Mul(big.NewInt(amount), big.NewInt(rule.BasisPoints))
			want.Add(want, big.NewInt(5000)).Quo(want, big.NewInt(10000)).Add(want, big.NewInt(rule.FixedMinor))
			if want.Cmp(big.NewInt(amount)) > 0 {
				want.SetInt64(amount)
			}
			require.Equal(t, want.Int64(), rule.Fee(amount), "%+v on %d", rule, amount)
		}
	}
}
