package activities_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/activities/activitiestest"
	"chargeonce/fakeprovider"
	"chargeonce/internal/alert"
	"chargeonce/provider"
	"chargeonce/store"
)

// settleDay is the report date of the settlement tests; the fake's clock
// stands at its noon.
const settleDay = "2026-03-14"

var noon = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

// settleActs names the settlement activities; it is never dereferenced.
var settleActs *activities.Settlement

// books is a day of payments at the fake provider.
type books struct {
	env  *activitiestest.Env
	logs *bytes.Buffer
	// clock is the fake's time, in Unix nanoseconds: noon of settleDay
	// unless a test moves it.
	clock *atomic.Int64
}

func newBooks(t *testing.T, fee fakeprovider.FeeRule) *books {
	t.Helper()
	logs := &bytes.Buffer{}
	clock := &atomic.Int64{}
	clock.Store(noon.UnixNano())
	env := activitiestest.New(t, activitiestest.Options{
		Fake:   fakeprovider.Config{Now: func() time.Time { return time.Unix(0, clock.Load()).UTC() }, Fee: fee},
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	return &books{env: env, logs: logs, clock: clock}
}

// now is the fake's time.
func (b *books) now() time.Time { return time.Unix(0, b.clock.Load()).UTC() }

// setNow moves the fake's clock to at.
func (b *books) setNow(at time.Time) { b.clock.Store(at.UnixNano()) }

// pay has the provider charge a new order of amount and records its attempt
// as status (succeeded, or the status of an attempt whose charge we never
// learnt of); it returns the intent and the charge.
func (b *books) pay(t *testing.T, amount chargeonce.Money, status chargeonce.AttemptStatus) (chargeonce.PaymentIntent, string) {
	t.Helper()
	ctx := context.Background()
	intent := b.env.NewIntent(t, "tok_visa", amount, noon.Add(-time.Minute))
	c, err := b.env.Fake.PlantCharge(fakeprovider.PlantedCharge{Amount: amount.Minor, Currency: amount.Currency,
		MerchantReference: intent.MerchantReference, Status: fakeprovider.ChargeSucceeded})
	require.NoError(t, err)
	chargeID := ""
	if status == chargeonce.AttemptSucceeded {
		chargeID = c.ID
	}
	settled, err := b.env.Store.SettleAttempt(ctx, intent.Key, status, chargeID, noon)
	require.NoError(t, err)
	require.True(t, settled.Changed)
	return intent, c.ID
}

func (b *books) alter(t *testing.T, a fakeprovider.Alteration) {
	t.Helper()
	a.Date = settleDay
	require.NoError(t, b.env.Fake.Alter(a))
}

// settle runs StageReport and MatchReport of settleDay as the workflow
// does, at now, on a worker whose grace period is graceDays.
func (b *books) settle(t *testing.T, runID string, graceDays int, now time.Time) activities.MatchReportResult {
	t.Helper()
	return b.settleOn(t, settleDay, runID, graceDays, now)
}

// settleOn is settle for the report of date.
func (b *books) settleOn(t *testing.T, date, runID string, graceDays int, now time.Time) activities.MatchReportResult {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	aenv := suite.NewTestActivityEnvironment()
	s := *b.env.Settlement
	s.GraceDays = graceDays
	s.Now = func() time.Time { return now }
	aenv.RegisterActivity(&s)
	_, err := aenv.ExecuteActivity(settleActs.StageReport, activities.StageReportInput{Date: date})
	require.NoError(t, err)
	val, err := aenv.ExecuteActivity(settleActs.MatchReport, activities.MatchReportInput{Date: date, RunID: runID})
	require.NoError(t, err)
	var res activities.MatchReportResult
	require.NoError(t, val.Get(&res))
	return res
}

// exceptions returns the exceptions of settleDay's result.
func (b *books) exceptions(t *testing.T) []store.SettlementException {
	t.Helper()
	return b.exceptionsOn(t, settleDay)
}

// exceptionsOn returns the exceptions of date's result.
func (b *books) exceptionsOn(t *testing.T, date string) []store.SettlementException {
	t.Helper()
	e, err := b.env.Store.SettlementExceptions(context.Background(), chargeonce.DefaultProvider, date, store.MaxSettlementBatch)
	require.NoError(t, err)
	return e
}

// afterGrace is a time when the grace period of settleDay is over.
var afterGrace = noon.AddDate(0, 0, 10)

var try = func(minor int64) chargeonce.Money { return chargeonce.Money{Minor: minor, Currency: "TRY"} }

func TestMatchReport_HonestBooksHaveNoExceptions(t *testing.T) {
	b := newBooks(t, fakeprovider.FeeRule{BasisPoints: 290, FixedMinor: 30})
	b.pay(t, try(54890), chargeonce.AttemptSucceeded)
	b.pay(t, try(1000), chargeonce.AttemptSucceeded)
	b.pay(t, chargeonce.Money{Minor: 500, Currency: "JPY"}, chargeonce.AttemptSucceeded)

	res := b.settle(t, "run-1", 2, afterGrace)

	require.Equal(t, activities.MatchReportResult{Status: store.SettlementFinal, Lines: 3, Matched: 3,
		ByKind: map[chargeonce.ExceptionKind]int{},
		Totals: []store.SettlementTotal{
			{Currency: "JPY", Lines: 1, Gross: 500, Fee: 45, Net: 455},
			{Currency: "TRY", Lines: 2, Gross: 55890, Fee: 1622 + 59, Net: 55890 - 1622 - 59},
		}}, res)
	require.Empty(t, b.exceptions(t))
}

// A day of the largest charges sums exactly, fees included.
func TestMatchReport_ADayOfTheLargestChargesSumsExactly(t *testing.T) {
	b := newBooks(t, fakeprovider.DefaultFee)
	largest := try(chargeonce.MaxMinor("TRY"))
	for range 3 {
		b.pay(t, largest, chargeonce.AttemptSucceeded)
	}

	res := b.settle(t, "run-1", 2, afterGrace)

	// 2.9% of 99,999,999 is 2,899,999.971, rounded to 2,900,000, plus 30.
	require.Equal(t, activities.MatchReportResult{Status: store.SettlementFinal, Lines: 3, Matched: 3,
		ByKind: map[chargeonce.ExceptionKind]int{},
		Totals: []store.SettlementTotal{{Currency: "TRY", Lines: 3, Gross: 3 * 99_999_999, Fee: 3 * 2_900_030, Net: 3 * (99_999_999 - 2_900_030)}},
	}, res)
}

// Totals that would pass the int64 maximum never wrap around: the line that
// would overflow them is an exception, left out of the totals, and its charge
// is missing; the lines before it sum exactly to the maximum.
func TestMatchReport_ALineThatWouldOverflowTheTotalsIsAnException(t *testing.T) {
	b := newBooks(t, fakeprovider.FeeRule{})
	_, first := b.pay(t, try(54890), chargeonce.AttemptSucceeded)
	b.pay(t, try(1000), chargeonce.AttemptSucceeded)
	over, _ := b.pay(t, try(1), chargeonce.AttemptSucceeded)
	// With the second line's 10.00, the first line's gross brings the
	// total to exactly math.MaxInt64 minor units.
	b.alter(t, fakeprovider.Alteration{ChargeID: first, Action: fakeprovider.AlterChange, Gross: "92233720368547748.07"})

	res := b.settle(t, "run-1", 2, afterGrace)

	require.Equal(t, []store.SettlementTotal{{Currency: "TRY", Lines: 2, Gross: math.MaxInt64, Net: math.MaxInt64}}, res.Totals)
	require.Equal(t, map[chargeonce.ExceptionKind]int{chargeonce.ExceptionAmountMismatch: 1,
		chargeonce.ExceptionMalformedLine: 1, chargeonce.ExceptionMissingInReport: 1}, res.ByKind)
	require.Equal(t, 1, res.Matched)
	var malformed, missing store.SettlementException
	for _, e := range b.exceptions(t) {
		switch e.Kind {
		case chargeonce.ExceptionMalformedLine:
			malformed = e
		case chargeonce.ExceptionMissingInReport:
			missing = e
		}
	}
	require.Contains(t, malformed.Detail, "of 0.01 TRY, cannot be counted (the day's TRY totals would not fit in 64 bits")
	require.Equal(t, over.OrderID, missing.OrderID)
}

func TestMatchReport_FindsEachKindOfException(t *testing.T) {
	tests := []struct {
		name string
		// plant spoils an honest day; it returns what the exception must
		// say: its charge and its order (0 when unknown).
		plant  func(t *testing.T, b *books, intent chargeonce.PaymentIntent, chargeID string) (string, int64)
		kind   chargeonce.ExceptionKind
		detail string
	}{
		{"a charge no attempt made", func(t *testing.T, b *books, _ chargeonce.PaymentIntent, _ string) (string, int64) {
			c, err := b.env.Fake.PlantCharge(fakeprovider.PlantedCharge{Amount: 12000, Currency: "TRY", MerchantReference: "nobody", Status: fakeprovider.ChargeSucceeded})
			require.NoError(t, err)
			return c.ID, 0
		}, chargeonce.ExceptionUnknownCharge, `The provider charged 120.00 TRY as ch_000003 (reference "nobody"), which no payment attempt made: find the customer and refund charge ch_000003 (POST /api/charges/ch_000003/refunds).`},
		{"a double charge, refunded by the repair", func(t *testing.T, b *books, intent chargeonce.PaymentIntent, _ string) (string, int64) {
			c, err := b.env.Fake.PlantCharge(fakeprovider.PlantedCharge{Amount: 54890, Currency: "TRY", MerchantReference: intent.MerchantReference, Status: fakeprovider.ChargeSucceeded})
			require.NoError(t, err)
			return c.ID, intent.OrderID
		}, chargeonce.ExceptionLateChargeRefunded, "was paid by another charge, so charge ch_000003 of 548.90 TRY, for which attempt"},
		{"a charge for an abandoned attempt, adopted by the repair", func(t *testing.T, b *books, _ chargeonce.PaymentIntent, _ string) (string, int64) {
			abandoned, chargeID := b.pay(t, try(700), chargeonce.AttemptAbandoned)
			return chargeID, abandoned.OrderID
		}, chargeonce.ExceptionLateChargeAdopted, "now is paid by charge ch_000003 of 7.00 TRY, although attempt"},
		{"a line dropped", func(t *testing.T, b *books, intent chargeonce.PaymentIntent, chargeID string) (string, int64) {
			b.alter(t, fakeprovider.Alteration{ChargeID: chargeID, Action: fakeprovider.AlterDrop})
			return chargeID, intent.OrderID
		}, chargeonce.ExceptionMissingInReport, "but no settlement report of the 3 days since lists it"},
		{"an amount changed", func(t *testing.T, b *books, intent chargeonce.PaymentIntent, chargeID string) (string, int64) {
			b.alter(t, fakeprovider.Alteration{ChargeID: chargeID, Action: fakeprovider.AlterChange, Gross: "549.00"})
			return chargeID, intent.OrderID
		}, chargeonce.ExceptionAmountMismatch, "at 549.00 TRY, but the order was charged 548.90 TRY"},
		{"a currency changed", func(t *testing.T, b *books, intent chargeonce.PaymentIntent, chargeID string) (string, int64) {
			b.alter(t, fakeprovider.Alteration{ChargeID: chargeID, Action: fakeprovider.AlterChange, Currency: "EUR"})
			return chargeID, intent.OrderID
		}, chargeonce.ExceptionCurrencyMismatch, "in EUR, but the order was charged 548.90 TRY"},
		{"a line duplicated", func(t *testing.T, b *books, intent chargeonce.PaymentIntent, chargeID string) (string, int64) {
			b.alter(t, fakeprovider.Alteration{ChargeID: chargeID, Action: fakeprovider.AlterDuplicate})
			return chargeID, intent.OrderID
		}, chargeonce.ExceptionDuplicateLine, "again on line 3"},
		{"a line malformed", func(t *testing.T, b *books, _ chargeonce.PaymentIntent, chargeID string) (string, int64) {
			b.alter(t, fakeprovider.Alteration{ChargeID: chargeID, Action: fakeprovider.AlterChange, Gross: "548,90"})
			return "", 0
		}, chargeonce.ExceptionMalformedLine, `cannot be read (gross: invalid amount: "548,90" is not a plain decimal number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBooks(t, fakeprovider.FeeRule{})
			intent, chargeID := b.pay(t, try(54890), chargeonce.AttemptSucceeded)
			b.pay(t, try(1000), chargeonce.AttemptSucceeded)
			wantCharge, wantOrder := tt.plant(t, b, intent, chargeID)

			res := b.settle(t, "run-1", 2, afterGrace)

			want := map[chargeonce.ExceptionKind]int{tt.kind: 1}
			if tt.kind == chargeonce.ExceptionMalformedLine {
				// The malformed line hides the charge it was about, which
				// is therefore missing too.
				want[chargeonce.ExceptionMissingInReport] = 1
			}
			require.Equal(t, want, res.ByKind)
			// An exception about the first payment leaves the second matched.
			matched := 1
			if tt.kind == chargeonce.ExceptionUnknownCharge || tt.kind == chargeonce.ExceptionDuplicateLine || tt.kind.Repair() {
				matched = 2
			}
			require.Equal(t, matched, res.Matched)
			got := b.exceptions(t)
			require.Len(t, got, res.Exceptions)
			require.Equal(t, tt.kind, got[0].Kind)
			require.Equal(t, wantCharge, got[0].ChargeID)
			require.Equal(t, wantOrder, got[0].OrderID)
			require.Contains(t, got[0].Detail, tt.detail)
			require.Equal(t, tt.kind == chargeonce.ExceptionUnknownCharge, bytes.Contains(b.logs.Bytes(), []byte(`"alert":"`+string(alert.UnknownCharge)+`"`)),
				"an unknown charge, and only that, raises the alert")
			require.Equal(t, tt.kind == chargeonce.ExceptionLateChargeRefunded, bytes.Contains(b.logs.Bytes(), []byte(`"alert":"`+string(alert.LateChargeRefunded)+`"`)),
				"a late charge refunded, and only that, raises its alert")
		})
	}
}

// The repairs change the books: an adopted charge pays its order, and a
// refunded one has a pending refund of its whole amount, one however often
// the settlement runs; a rerun matches the adopted charge.
func TestMatchReport_RepairsLateChargesOnceAndMatchesThemAfterwards(t *testing.T) {
	ctx := context.Background()
	b := newBooks(t, fakeprovider.FeeRule{})
	paid, _ := b.pay(t, try(54890), chargeonce.AttemptSucceeded)
	second, err := b.env.Fake.PlantCharge(fakeprovider.PlantedCharge{Amount: 54890, Currency: "TRY", MerchantReference: paid.MerchantReference, Status: fakeprovider.ChargeSucceeded})
	require.NoError(t, err)
	abandoned, late := b.pay(t, try(700), chargeonce.AttemptAbandoned)

	first := b.settle(t, "run-1", 2, afterGrace)
	require.Equal(t, map[chargeonce.ExceptionKind]int{chargeonce.ExceptionLateChargeAdopted: 1, chargeonce.ExceptionLateChargeRefunded: 1}, first.ByKind)
	order, _, err := b.env.Store.GetOrder(ctx, abandoned.OrderID)
	require.NoError(t, err)
	require.Equal(t, chargeonce.OrderPaid, order.Status)
	require.Equal(t, late, order.ProviderPaymentID)
	refunds, err := b.env.Store.OrderRefunds(ctx, paid.OrderID)
	require.NoError(t, err)
	require.Len(t, refunds, 1)
	require.Equal(t, second.ID, refunds[0].ChargeID)
	require.Equal(t, try(54890), refunds[0].Amount)
	require.Equal(t, chargeonce.RefundLateCharge, refunds[0].Origin)
	require.Equal(t, chargeonce.RefundPending, refunds[0].Status)

	rerun := b.settle(t, "run-2", 2, afterGrace)
	require.Equal(t, map[chargeonce.ExceptionKind]int{chargeonce.ExceptionLateChargeRefunded: 1}, rerun.ByKind)
	require.Equal(t, 2, rerun.Matched, "the paying charge, and the adopted one")
	refunds, err = b.env.Store.OrderRefunds(ctx, paid.OrderID)
	require.NoError(t, err)
	require.Len(t, refunds, 1, "one refund per late charge however often it is found")
	require.Equal(t, refunds[0].Key, b.exceptions(t)[0].RefundKey)
}

// refund refunds minor units of a paid order at the provider, recorded as
// succeeded, and returns it with the provider's refund id.
func (b *books) refund(t *testing.T, orderID, minor int64) store.Refund {
	t.Helper()
	ctx := context.Background()
	intent := b.env.NewRefund(t, orderID, minor, noon.Add(-time.Minute))
	res := b.env.Client.Refund(ctx, provider.RefundRequestOf(intent))
	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	changed, err := b.env.Store.SettleRefund(ctx, intent.Key, chargeonce.RefundSucceeded, res.Refund.ID, "", noon)
	require.NoError(t, err)
	require.True(t, changed)
	return b.env.Refund(t, intent.Key)
}

func TestMatchReport_RefundLinesMatchSucceededRefundsAndNetTheTotals(t *testing.T) {
	b := newBooks(t, fakeprovider.FeeRule{BasisPoints: 100})
	first, _ := b.pay(t, try(54890), chargeonce.AttemptSucceeded)
	second, _ := b.pay(t, try(1000), chargeonce.AttemptSucceeded)
	b.refund(t, first.OrderID, 10000)
	b.refund(t, first.OrderID, 890)
	b.refund(t, second.OrderID, 0)

	res := b.settle(t, "run-1", 2, afterGrace)

	// The fee of 1% stays with the provider; refunds carry none.
	require.Equal(t, activities.MatchReportResult{Status: store.SettlementFinal, Lines: 5, Matched: 5,
		ByKind: map[chargeonce.ExceptionKind]int{},
		Totals: []store.SettlementTotal{{Currency: "TRY", Lines: 5, Gross: 54890 + 1000 - 10000 - 890 - 1000, Fee: 549 + 10,
			Net: 54890 + 1000 - 549 - 10 - 10000 - 890 - 1000}},
	}, res)
}

func TestMatchReport_FindsEachKindOfRefundException(t *testing.T) {
	tests := []struct {
		name string
		// plant spoils a day with one refund, and returns the refund id
		// the exception must name.
		plant  func(t *testing.T, b *books, r store.Refund) string
		kind   chargeonce.ExceptionKind
		detail string
	}{
		{"a refund no refund intent made", func(t *testing.T, b *books, r store.Refund) string {
			res := b.env.Client.Refund(context.Background(), provider.RefundRequest{Key: "0190a0a0-0000-7000-8000-000000000001",
				ChargeID: r.ChargeID, Amount: 100, Currency: "TRY", MerchantReference: "dashboard"})
			require.Equal(t, provider.Approved, res.Outcome, res.Detail)
			return res.Refund.ID
		}, chargeonce.ExceptionUnknownRefund, `as refund re_000002 (reference "dashboard"), which no refund of ours made`},
		{"a refund line dropped", func(t *testing.T, b *books, r store.Refund) string {
			b.alter(t, fakeprovider.Alteration{RefundID: r.ProviderRefundID, Action: fakeprovider.AlterDrop})
			return r.ProviderRefundID
		}, chargeonce.ExceptionRefundMissingInReport, "but no settlement report of the 3 days since lists it"},
		{"a refund amount changed", func(t *testing.T, b *books, r store.Refund) string {
			b.alter(t, fakeprovider.Alteration{RefundID: r.ProviderRefundID, Action: fakeprovider.AlterChange, Gross: "-20.00"})
			return r.ProviderRefundID
		}, chargeonce.ExceptionRefundAmountMismatch, "The report returns 20.00 TRY for refund re_000001"},
		{"a refund failed after success that we hold as succeeded", func(t *testing.T, b *books, r store.Refund) string {
			_, err := b.env.Fake.SettleRefund(r.ProviderRefundID, fakeprovider.RefundFailed, "lost_or_stolen_card")
			require.NoError(t, err)
			return r.ProviderRefundID
		}, chargeonce.ExceptionRefundAmountMismatch, "The provider reversed refund re_000001"},
		{"a refund line duplicated", func(t *testing.T, b *books, r store.Refund) string {
			b.alter(t, fakeprovider.Alteration{RefundID: r.ProviderRefundID, Action: fakeprovider.AlterDuplicate})
			return r.ProviderRefundID
		}, chargeonce.ExceptionDuplicateLine, "The report lists the refund of refund re_000001 again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBooks(t, fakeprovider.FeeRule{})
			intent, _ := b.pay(t, try(54890), chargeonce.AttemptSucceeded)
			r := b.refund(t, intent.OrderID, 1000)
			wantRefund := tt.plant(t, b, r)

			res := b.settle(t, "run-1", 2, afterGrace)

			require.Equal(t, map[chargeonce.ExceptionKind]int{tt.kind: 1}, res.ByKind)
			got := b.exceptions(t)
			require.Len(t, got, 1)
			require.Equal(t, wantRefund, got[0].RefundID)
			require.Contains(t, got[0].Detail, tt.detail)
		})
	}
}

// A refund that failed after it succeeded, and that we hold as failed,
// balances: its refund line and its reversal net to nothing.
func TestMatchReport_ARefundFailedAfterSuccessBalances(t *testing.T) {
	ctx := context.Background()
	b := newBooks(t, fakeprovider.FeeRule{})
	intent, _ := b.pay(t, try(54890), chargeonce.AttemptSucceeded)
	r := b.refund(t, intent.OrderID, 1000)
	_, err := b.env.Fake.SettleRefund(r.ProviderRefundID, fakeprovider.RefundFailed, "lost_or_stolen_card")
	require.NoError(t, err)
	changed, err := b.env.Store.SettleRefund(ctx, r.Key, chargeonce.RefundFailed, r.ProviderRefundID, "lost_or_stolen_card", noon)
	require.NoError(t, err)
	require.True(t, changed)

	res := b.settle(t, "run-1", 2, afterGrace)

	require.Empty(t, res.ByKind)
	require.Equal(t, 2, res.Matched, "the charge, and the refund with its reversal")
	require.Equal(t, []store.SettlementTotal{{Currency: "TRY", Lines: 3, Gross: 54890, Net: 54890}}, res.Totals)
}

func TestMatchReport_AnUnreportedChargeAwaitsItsGracePeriod(t *testing.T) {
	b := newBooks(t, fakeprovider.FeeRule{})
	_, chargeID := b.pay(t, try(54890), chargeonce.AttemptSucceeded)
	b.alter(t, fakeprovider.Alteration{ChargeID: chargeID, Action: fakeprovider.AlterDrop})

	within := b.settle(t, "run-1", 2, noon.AddDate(0, 0, 2))
	require.Equal(t, store.SettlementProvisional, within.Status)
	require.Equal(t, 1, within.Awaiting)
	require.Zero(t, within.Exceptions)

	after := b.settle(t, "run-2", 2, noon.AddDate(0, 0, 3))
	require.Equal(t, store.SettlementFinal, after.Status)
	require.Equal(t, map[chargeonce.ExceptionKind]int{chargeonce.ExceptionMissingInReport: 1}, after.ByKind)
}

// The grace period is the worker's, not the run's: a run of yesterday
// started with its date alone, as the API starts it, marks the unreported
// attempt missing on a worker without grace and leaves it awaiting on one
// with the default grace, and records the grace period it applied.
func TestMatchReport_TheWorkersGracePeriodDecidesWhetherAnUnreportedChargeIsMissing(t *testing.T) {
	tests := []struct {
		graceDays int
		status    store.SettlementStatus
		awaiting  int
		byKind    map[chargeonce.ExceptionKind]int
	}{
		{0, store.SettlementFinal, 0, map[chargeonce.ExceptionKind]int{chargeonce.ExceptionMissingInReport: 1}},
		{2, store.SettlementProvisional, 1, map[chargeonce.ExceptionKind]int{}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("grace %d days", tt.graceDays), func(t *testing.T) {
			b := newBooks(t, fakeprovider.FeeRule{})
			_, chargeID := b.pay(t, try(54890), chargeonce.AttemptSucceeded)
			b.alter(t, fakeprovider.Alteration{ChargeID: chargeID, Action: fakeprovider.AlterDrop})

			res := b.settle(t, "run-1", tt.graceDays, noon.AddDate(0, 0, 1))

			require.Equal(t, tt.status, res.Status)
			require.Equal(t, tt.awaiting, res.Awaiting)
			require.Equal(t, tt.byKind, res.ByKind)
			run, err := b.env.Store.SettlementRun(context.Background(), chargeonce.DefaultProvider, settleDay)
			require.NoError(t, err)
			require.Equal(t, tt.graceDays, run.GraceDays)
		})
	}
}

func TestMatchReport_ARerunGivesTheSameResultAndDuplicatesNothing(t *testing.T) {
	b := newBooks(t, fakeprovider.FeeRule{BasisPoints: 100})
	_, chargeID := b.pay(t, try(54890), chargeonce.AttemptSucceeded)
	b.pay(t, try(1000), chargeonce.AttemptSucceeded)
	b.alter(t, fakeprovider.Alteration{ChargeID: chargeID, Action: fakeprovider.AlterDuplicate})
	_, err := b.env.Fake.PlantCharge(fakeprovider.PlantedCharge{Amount: 300, Currency: "TRY", MerchantReference: "x", Status: fakeprovider.ChargeSucceeded})
	require.NoError(t, err)

	first := b.settle(t, "run-1", 2, afterGrace)
	firstExceptions := b.exceptions(t)
	// The same run retried, and a new run of the date.
	retried := b.settle(t, "run-1", 2, afterGrace)
	rerun := b.settle(t, "run-2", 2, afterGrace)

	require.Equal(t, first, retried)
	require.Equal(t, first, rerun)
	require.Equal(t, firstExceptions, b.exceptions(t))
	require.Len(t, firstExceptions, 2)
	run, err := b.env.Store.SettlementRun(context.Background(), chargeonce.DefaultProvider, settleDay)
	require.NoError(t, err)
	require.Equal(t, "run-2", run.RunID)
	require.Equal(t, 4, run.Lines)
}

// held is a hold at the fake provider, recorded as its attempt's.
type held struct {
	intent chargeonce.PaymentIntent
	charge provider.Charge
}

// hold has the provider authorize a new order of amount at the fake's
// time, and settles its attempt with the hold.
func (b *books) hold(t *testing.T, amount chargeonce.Money) held {
	t.Helper()
	ctx := context.Background()
	at := b.now()
	intent := b.env.NewHeldIntent(t, "tok_visa", amount, at.Add(-time.Minute), chargeonce.DeadlineVoid)
	res := b.env.Client.Charge(ctx, provider.ChargeRequestOf(intent))
	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	require.True(t, res.Charge.Held())
	settled, err := b.env.Store.SettleAuthorization(ctx, intent.Key, store.NewHold{ChargeID: res.Charge.ID,
		CaptureBefore: res.Charge.CaptureBefore, Deadline: res.Charge.CaptureBefore.Add(-time.Hour), At: at})
	require.NoError(t, err)
	require.True(t, settled.Changed)
	return held{intent: intent, charge: *res.Charge}
}

// captureAtProvider has the provider capture minor units of the hold, at
// the fake's time; our books do not know yet.
func (b *books) captureAtProvider(t *testing.T, h held, minor int64) {
	t.Helper()
	res := b.env.Client.Capture(context.Background(), provider.CaptureRequest{Key: uuid.Must(uuid.NewV7()).String(),
		ChargeID: h.charge.ID, Amount: minor, Currency: h.charge.Currency})
	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
}

// voidAtProvider has the provider void the hold; our books do not know
// yet.
func (b *books) voidAtProvider(t *testing.T, h held) {
	t.Helper()
	res := b.env.Client.Void(context.Background(), provider.VoidRequest{Key: uuid.Must(uuid.NewV7()).String(), ChargeID: h.charge.ID})
	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
}

// end records in our books that the hold ended with status at the fake's
// time, captured minor units taken.
func (b *books) end(t *testing.T, h held, status chargeonce.HoldStatus, captured int64) {
	t.Helper()
	changed, err := b.env.Store.EndHold(context.Background(), h.intent.Key, status, captured, b.now())
	require.NoError(t, err)
	require.True(t, changed)
}

// A hold's charge is settled once, on the day of its capture and for what
// was captured, with the refunds of its capture; an authorization, a void
// and an expiry are in no report, and expected in none.
func TestMatchReport_HoldsAreExpectedOnTheDayOfTheirCapture(t *testing.T) {
	b := newBooks(t, fakeprovider.DefaultFee)
	full := b.hold(t, try(54890))
	b.captureAtProvider(t, full, 54890)
	b.end(t, full, chargeonce.HoldCaptured, 54890)
	b.refund(t, full.intent.OrderID, 1000)
	partial := b.hold(t, try(20000))
	voided := b.hold(t, try(3000))
	b.voidAtProvider(t, voided)
	b.end(t, voided, chargeonce.HoldVoided, 0)
	expired := b.hold(t, try(4000))
	authorized := b.hold(t, try(5000))

	// Before the grace period is over, nothing of the day awaits a line:
	// the partial hold is not captured yet.
	res := b.settle(t, "run-1", 2, noon)
	require.Equal(t, store.SettlementFinal, res.Status)
	require.Equal(t, []int{2, 2, 0, 0}, []int{res.Lines, res.Matched, res.Awaiting, res.Exceptions}, "the capture and its refund")

	nextDay := noon.AddDate(0, 0, 1)
	b.setNow(nextDay)
	b.captureAtProvider(t, partial, 12345)
	b.end(t, partial, chargeonce.HoldCaptured, 12345)
	b.setNow(expired.charge.CaptureBefore.Add(time.Minute))
	got, err := b.env.Client.GetCharge(context.Background(), expired.charge.ID)
	require.NoError(t, err)
	require.Equal(t, provider.StatusExpired, got.Status)
	b.end(t, expired, chargeonce.HoldExpired, 0)
	require.Equal(t, chargeonce.HoldAuthorized, getHold(t, b, authorized).Status, "expired at the provider, not in our books yet")

	for _, day := range []struct {
		date  string
		lines int
		gross int64
	}{{settleDay, 2, 54890 - 1000}, {nextDay.Format(time.DateOnly), 1, 12345}} {
		res := b.settleOn(t, day.date, "run-2", 2, afterGrace)
		require.Equal(t, store.SettlementFinal, res.Status, day.date)
		require.Equal(t, []int{day.lines, day.lines, 0, 0}, []int{res.Lines, res.Matched, res.Awaiting, res.Exceptions}, day.date)
		require.Len(t, res.Totals, 1, day.date)
		require.Equal(t, day.gross, res.Totals[0].Gross, day.date)
		require.Empty(t, b.exceptionsOn(t, day.date), day.date)
	}
}

func getHold(t *testing.T, b *books, h held) store.Hold {
	t.Helper()
	got, err := b.env.Store.GetHold(context.Background(), h.intent.Key)
	require.NoError(t, err)
	return got
}

// A charge line for a hold that our books hold as voided, or as authorized
// still, is money that no capture of ours took.
func TestMatchReport_AChargeOfAHoldNotCapturedIsAnException(t *testing.T) {
	b := newBooks(t, fakeprovider.DefaultFee)
	voided := b.hold(t, try(54890))
	b.captureAtProvider(t, voided, 54890)
	b.end(t, voided, chargeonce.HoldVoided, 0)
	authorized := b.hold(t, try(3000))
	b.captureAtProvider(t, authorized, 2000)

	res := b.settle(t, "run-1", 2, afterGrace)

	require.Equal(t, []int{2, 0, 2}, []int{res.Lines, res.Matched, res.Exceptions})
	require.Equal(t, map[chargeonce.ExceptionKind]int{chargeonce.ExceptionUncapturedCharge: 2}, res.ByKind)
	got := b.exceptions(t)
	require.Len(t, got, 2)
	byCharge := map[string]store.SettlementException{got[0].ChargeID: got[0], got[1].ChargeID: got[1]}
	for _, want := range []struct {
		h        held
		reported int64
		says     string
	}{{voided, 54890, "which we hold as voided"}, {authorized, 2000, "which we hold as authorized still"}} {
		e := byCharge[want.h.charge.ID]
		require.Equal(t, chargeonce.ExceptionUncapturedCharge, e.Kind)
		require.Equal(t, want.h.intent.OrderID, e.OrderID)
		require.Equal(t, want.h.intent.Key, e.AttemptKey)
		require.Equal(t, []int64{want.reported, 0}, []int64{e.ReportedMinor, e.ExpectedMinor})
		require.Contains(t, e.Detail, want.says)
	}
}

// A capture made just before midnight and recorded just after it is in the
// report of the day before its hold ended: matched there, and not missing
// from the day it ended.
func TestMatchReport_ACaptureAroundMidnightIsReportedTheDayBeforeItsHoldEnded(t *testing.T) {
	b := newBooks(t, fakeprovider.DefaultFee)
	h := b.hold(t, try(54890))
	midnight := noon.Truncate(24*time.Hour).AddDate(0, 0, 1)
	b.setNow(midnight.Add(-time.Second))
	b.captureAtProvider(t, h, 30000)
	b.setNow(midnight.Add(time.Second))
	b.end(t, h, chargeonce.HoldCaptured, 30000)

	// The days are settled in order, as the daily runs settle them.
	for _, day := range []struct {
		date  string
		lines int
	}{{settleDay, 1}, {midnight.Format(time.DateOnly), 0}} {
		res := b.settleOn(t, day.date, "run-1", 2, afterGrace)
		require.Equal(t, store.SettlementFinal, res.Status, day.date)
		require.Equal(t, []int{day.lines, day.lines, 0, 0}, []int{res.Lines, res.Matched, res.Awaiting, res.Exceptions}, day.date)
	}
}
