package activities_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/activities/activitiestest"
	"chargeonce/fakeprovider"
	"chargeonce/internal/alert"
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
}

func newBooks(t *testing.T, fee fakeprovider.FeeRule) *books {
	t.Helper()
	logs := &bytes.Buffer{}
	env := activitiestest.New(t, activitiestest.Options{
		Fake:   fakeprovider.Config{Now: func() time.Time { return noon }, Fee: fee},
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	return &books{env: env, logs: logs}
}

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
	changed, err := b.env.Store.SettleAttempt(ctx, intent.Key, status, chargeID, noon)
	require.NoError(t, err)
	require.True(t, changed)
	return intent, c.ID
}

func (b *books) alter(t *testing.T, a fakeprovider.Alteration) {
	t.Helper()
	a.Date = settleDay
	require.NoError(t, b.env.Fake.Alter(a))
}

// settle runs StageReport and MatchReport as the workflow does, at now, on
// a worker whose grace period is graceDays.
func (b *books) settle(t *testing.T, runID string, graceDays int, now time.Time) activities.MatchReportResult {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	aenv := suite.NewTestActivityEnvironment()
	s := *b.env.Settlement
	s.GraceDays = graceDays
	s.Now = func() time.Time { return now }
	aenv.RegisterActivity(&s)
	_, err := aenv.ExecuteActivity(settleActs.StageReport, activities.StageReportInput{Date: settleDay})
	require.NoError(t, err)
	val, err := aenv.ExecuteActivity(settleActs.MatchReport, activities.MatchReportInput{Date: settleDay, RunID: runID})
	require.NoError(t, err)
	var res activities.MatchReportResult
	require.NoError(t, val.Get(&res))
	return res
}

func (b *books) exceptions(t *testing.T) []store.SettlementException {
	t.Helper()
	e, err := b.env.Store.SettlementExceptions(context.Background(), settleDay, store.MaxSettlementBatch)
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
		}, chargeonce.ExceptionUnknownCharge, `The provider charged 120.00 TRY as ch_000003 (reference "nobody"), which no payment attempt made: find the customer and refund charge ch_000003.`},
		{"a double charge", func(t *testing.T, b *books, intent chargeonce.PaymentIntent, _ string) (string, int64) {
			c, err := b.env.Fake.PlantCharge(fakeprovider.PlantedCharge{Amount: 54890, Currency: "TRY", MerchantReference: intent.MerchantReference, Status: fakeprovider.ChargeSucceeded})
			require.NoError(t, err)
			return c.ID, intent.OrderID
		}, chargeonce.ExceptionUnknownCharge, "was charged twice"},
		{"a charge for an abandoned attempt", func(t *testing.T, b *books, _ chargeonce.PaymentIntent, _ string) (string, int64) {
			abandoned, chargeID := b.pay(t, try(700), chargeonce.AttemptAbandoned)
			return chargeID, abandoned.OrderID
		}, chargeonce.ExceptionUnknownCharge, "settled abandoned, yet the provider charged 7.00 TRY"},
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
			if tt.kind == chargeonce.ExceptionUnknownCharge || tt.kind == chargeonce.ExceptionDuplicateLine {
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
		})
	}
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
			run, err := b.env.Store.SettlementRun(context.Background(), settleDay)
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
	run, err := b.env.Store.SettlementRun(context.Background(), settleDay)
	require.NoError(t, err)
	require.Equal(t, "run-2", run.RunID)
	require.Equal(t, 4, run.Lines)
}
