package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/store"
)

const day = "2026-03-14"

// paidAttempt checks out a new order at created and settles it succeeded
// with chargeID.
func paidAttempt(t *testing.T, s store.Store, created time.Time, chargeID string) store.Attempt {
	t.Helper()
	a, _ := checkout(t, s, newOrder(t, s).ID, card("visa"), created)
	require.True(t, settle(t, s, a.Key, chargeonce.AttemptSucceeded, chargeID))
	got, err := s.GetAttempt(context.Background(), a.Key)
	require.NoError(t, err)
	got.Requests = nil
	return got
}

// storedAttempt reads an attempt as the settlement's queries return it,
// without a hold.
func storedAttempt(t *testing.T, s store.Store, key string) store.ReportedAttempt {
	t.Helper()
	a, err := s.GetAttempt(context.Background(), key)
	require.NoError(t, err)
	a.Requests = nil
	return store.ReportedAttempt{Attempt: a, Expected: a.Amount}
}

func line(no int, chargeID string, gross int64) store.SettlementLine {
	return store.SettlementLine{Provider: chargeonce.DefaultProvider, Date: day, LineNo: no, BalanceTransactionID: fmt.Sprintf("txn_%d", no), Created: base,
		ChargeID: chargeID, MerchantReference: "ref-" + chargeID, Category: "charge", Gross: gross, Net: gross, Currency: "TRY"}
}

func TestStore_SettlementLinesPageByChargeID(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		malformed := store.SettlementLine{Provider: chargeonce.DefaultProvider, Date: day, LineNo: 5, Problem: "gross is not an amount", Raw: "x,y"}
		want := []store.SettlementLine{malformed, line(3, "ch_a", 100), line(6, "ch_a", 100), line(2, "ch_b", 200), line(4, "ch_c", 300)}
		require.NoError(t, s.AddSettlementLines(ctx, []store.SettlementLine{want[3], want[1], want[4], want[0], want[2]}))
		for i := range want[1:] {
			want[i+1].Created = stored(base)
		}

		var got []store.SettlementLine
		after := store.LineCursor{}
		for {
			page, err := s.SettlementLines(ctx, chargeonce.DefaultProvider, day, after, 2)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			last := page[len(page)-1]
			after = store.LineCursor{ChargeID: last.ChargeID, LineNo: last.LineNo}
		}
		require.Equal(t, want, got)

		reported, err := s.ReportedCharges(ctx, chargeonce.DefaultProvider, day, day, []string{"ch_a", "ch_z", "ch_c"})
		require.NoError(t, err)
		require.Equal(t, []string{"ch_a", "ch_c"}, reported)
		none, err := s.ReportedCharges(ctx, chargeonce.DefaultProvider, "2026-03-15", "2026-03-16", []string{"ch_a"})
		require.NoError(t, err)
		require.Empty(t, none)

		require.NoError(t, s.ClearSettlementLines(ctx, chargeonce.DefaultProvider, day))
		page, err := s.SettlementLines(ctx, chargeonce.DefaultProvider, day, store.LineCursor{}, 10)
		require.NoError(t, err)
		require.Empty(t, page)
	})
}

func TestStore_SucceededAttemptsOfADayPageByChargeID(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		from := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
		to := from.AddDate(0, 0, 1)
		c := storedAttempt(t, s, paidAttempt(t, s, from.Add(time.Hour), "ch_c").Key)
		a := storedAttempt(t, s, paidAttempt(t, s, to.Add(-time.Microsecond), "ch_a").Key)
		paidAttempt(t, s, to, "ch_b")                          // the next day
		paidAttempt(t, s, from.Add(-time.Microsecond), "ch_0") // the day before
		declined, _ := checkout(t, s, newOrder(t, s).ID, card("visa"), from.Add(time.Hour))
		require.True(t, settle(t, s, declined.Key, chargeonce.AttemptDeclined, "ch_d"))

		first, err := s.SucceededAttempts(ctx, chargeonce.DefaultProvider, from, to, "", 1)
		require.NoError(t, err)
		require.Equal(t, []store.ReportedAttempt{a}, first)
		rest, err := s.SucceededAttempts(ctx, chargeonce.DefaultProvider, from, to, "ch_a", 10)
		require.NoError(t, err)
		require.Equal(t, []store.ReportedAttempt{c}, rest)

		byCharge, err := s.AttemptsByCharge(ctx, chargeonce.DefaultProvider, []string{"ch_a", "ch_d", "ch_nope"})
		require.NoError(t, err)
		require.Equal(t, []store.ReportedAttempt{storedAttempt(t, s, declined.Key), a}, byCharge, "every status, oldest first")
		byRef, err := s.AttemptsByReference(ctx, chargeonce.DefaultProvider, []string{c.MerchantReference})
		require.NoError(t, err)
		require.Equal(t, []store.ReportedAttempt{c}, byRef)
	})
}

// A hold's charge is expected once: on the day a capture ended the hold,
// for what it captured. A hold not captured is expected on no day, and the
// lookups by charge and reference say what its hold is.
func TestStore_SucceededAttemptsExpectAHoldOnTheDayOfItsCapture(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		from := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
		to := from.AddDate(0, 0, 1)
		// Every hold is authorized on the day, at base.
		type held struct {
			status   chargeonce.HoldStatus
			captured int64
			ended    time.Time
		}
		ends := map[string]held{
			"full":       {chargeonce.HoldCaptured, try.Minor, to.Add(-time.Microsecond)},
			"partial":    {chargeonce.HoldCaptured, 100, to},
			"voided":     {chargeonce.HoldVoided, 0, base.Add(time.Hour)},
			"expired":    {chargeonce.HoldExpired, 0, base.Add(time.Hour)},
			"authorized": {chargeonce.HoldAuthorized, 0, time.Time{}},
		}
		holds := map[string]store.ReportedAttempt{}
		for name, h := range ends {
			_, a, _ := authorizedOrder(t, s)
			if h.status != chargeonce.HoldAuthorized {
				changed, err := s.EndHold(ctx, a.Key, h.status, h.captured, h.ended)
				require.NoError(t, err)
				require.True(t, changed)
			}
			holds[name] = store.ReportedAttempt{Attempt: storedAttempt(t, s, a.Key).Attempt, Hold: h.status,
				Expected: chargeonce.Money{Minor: h.captured, Currency: try.Currency}}
		}
		plain := storedAttempt(t, s, paidAttempt(t, s, from.Add(time.Hour), "ch_plain").Key)

		day, err := s.SucceededAttempts(ctx, chargeonce.DefaultProvider, from, to, "", 10)
		require.NoError(t, err)
		require.Equal(t, []store.ReportedAttempt{holds["full"], plain}, day, "by charge id")
		next, err := s.SucceededAttempts(ctx, chargeonce.DefaultProvider, to, to.AddDate(0, 0, 1), "", 10)
		require.NoError(t, err)
		require.Equal(t, []store.ReportedAttempt{holds["partial"]}, next)
		before, err := s.SucceededAttempts(ctx, chargeonce.DefaultProvider, from.AddDate(0, 0, -1), from, "", 10)
		require.NoError(t, err)
		require.Empty(t, before)

		for name, want := range holds {
			byCharge, err := s.AttemptsByCharge(ctx, chargeonce.DefaultProvider, []string{want.ProviderPaymentID})
			require.NoError(t, err)
			require.Equal(t, []store.ReportedAttempt{want}, byCharge, name)
			byRef, err := s.AttemptsByReference(ctx, chargeonce.DefaultProvider, []string{want.MerchantReference})
			require.NoError(t, err)
			require.Equal(t, []store.ReportedAttempt{want}, byRef, name)
			require.Equal(t, name != "full" && name != "partial", want.Uncaptured(), name)
		}
	})
}

func exception(seq int, kind chargeonce.ExceptionKind) store.SettlementException {
	return store.SettlementException{Seq: seq, Kind: kind, ChargeID: fmt.Sprintf("ch_%d", seq), MerchantReference: "ref",
		OrderID: 1001, AttemptKey: "k", LineNo: seq + 1, ReportedMinor: 100, ReportedCurrency: "TRY",
		ExpectedMinor: 90, ExpectedCurrency: "TRY", Detail: "Refund it."}
}

func TestStore_FinishingARunReplacesThePreviousOne(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		_, err := s.SettlementRun(ctx, chargeonce.DefaultProvider, day)
		require.ErrorIs(t, err, store.ErrNotFound)

		firstRun := []store.SettlementException{exception(1, chargeonce.ExceptionUnknownCharge), exception(2, chargeonce.ExceptionAmountMismatch)}
		require.NoError(t, s.AddSettlementExceptions(ctx, chargeonce.DefaultProvider, day, "run-1", firstRun))
		run := store.SettlementRun{Provider: chargeonce.DefaultProvider, Date: day, RunID: "run-1", Status: store.SettlementFinal, Lines: 3, Matched: 2, Exceptions: 2,
			Totals: []store.SettlementTotal{{Currency: "TRY", Lines: 3, Gross: 300, Fee: 9, Net: 291}}, GraceDays: 2, FinishedAt: base}
		require.NoError(t, s.FinishSettlementRun(ctx, run))

		// A run that dies half way leaves exceptions that are not the date's.
		require.NoError(t, s.AddSettlementExceptions(ctx, chargeonce.DefaultProvider, day, "run-2", []store.SettlementException{exception(1, chargeonce.ExceptionDuplicateLine)}))
		got, err := s.SettlementRun(ctx, chargeonce.DefaultProvider, day)
		require.NoError(t, err)
		run.FinishedAt = stored(base)
		run.ByKind = map[chargeonce.ExceptionKind]int{chargeonce.ExceptionUnknownCharge: 1, chargeonce.ExceptionAmountMismatch: 1}
		require.Equal(t, run, got)
		listed, err := s.SettlementExceptions(ctx, chargeonce.DefaultProvider, day, 10)
		require.NoError(t, err)
		require.Equal(t, firstRun, listed)

		// The rerun replaces the result, and leaves no row of the others.
		rerun := []store.SettlementException{exception(1, chargeonce.ExceptionMissingInReport)}
		require.NoError(t, s.AddSettlementExceptions(ctx, chargeonce.DefaultProvider, day, "run-3", rerun))
		require.NoError(t, s.FinishSettlementRun(ctx, store.SettlementRun{Provider: chargeonce.DefaultProvider, Date: day, RunID: "run-3", Status: store.SettlementProvisional,
			Exceptions: 1, Awaiting: 1, FinishedAt: base}))
		listed, err = s.SettlementExceptions(ctx, chargeonce.DefaultProvider, day, 10)
		require.NoError(t, err)
		require.Equal(t, rerun, listed)
		require.Equal(t, int64(1), rawCount(t, dsn, `SELECT count(*) FROM settlement_exceptions`))
		got, err = s.SettlementRun(ctx, chargeonce.DefaultProvider, day)
		require.NoError(t, err)
		require.Equal(t, store.SettlementProvisional, got.Status)
		require.Equal(t, []store.SettlementTotal{}, got.Totals)
	})
}

func TestStore_BadSettlementInputIsRefusedAndChangesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		good := store.SettlementRun{Provider: chargeonce.DefaultProvider, Date: day, RunID: "r", Status: store.SettlementFinal, FinishedAt: base}
		badRuns := map[string]store.SettlementRun{
			"bad date":          {Date: "2026-02-30", RunID: "r", Status: store.SettlementFinal, FinishedAt: base},
			"no run id":         {Date: day, Status: store.SettlementFinal, FinishedAt: base},
			"unknown status":    {Date: day, RunID: "r", Status: "done", FinishedAt: base},
			"no time":           {Date: day, RunID: "r", Status: store.SettlementFinal},
			"negative count":    {Date: day, RunID: "r", Status: store.SettlementFinal, Matched: -1, FinishedAt: base},
			"exceptions differ": {Date: day, RunID: "r", Status: store.SettlementFinal, Exceptions: 1, FinishedAt: base},
		}
		for name, run := range badRuns {
			require.Error(t, s.FinishSettlementRun(ctx, run), name)
		}
		require.Error(t, s.AddSettlementExceptions(ctx, chargeonce.DefaultProvider, day, "r", []store.SettlementException{{Seq: 1, Kind: "lost", Detail: "x"}}))
		require.Error(t, s.AddSettlementExceptions(ctx, chargeonce.DefaultProvider, day, "r", []store.SettlementException{{Seq: 0, Kind: chargeonce.ExceptionDuplicateLine, Detail: "x"}}))
		require.Error(t, s.AddSettlementExceptions(ctx, chargeonce.DefaultProvider, day, "r", []store.SettlementException{{Seq: 1, Kind: chargeonce.ExceptionDuplicateLine}}))
		require.Error(t, s.AddSettlementLines(ctx, []store.SettlementLine{{Provider: chargeonce.DefaultProvider, Date: day, LineNo: 1}}))
		require.Error(t, s.AddSettlementLines(ctx, make([]store.SettlementLine, store.MaxSettlementBatch+1)))
		_, err := s.SettlementLines(ctx, chargeonce.DefaultProvider, day, store.LineCursor{}, 0)
		require.Error(t, err)
		_, err = s.SucceededAttempts(ctx, chargeonce.DefaultProvider, base, base, "", store.MaxSettlementBatch+1)
		require.Error(t, err)
		require.Equal(t, int64(0), rawCount(t, dsn, `SELECT count(*) FROM settlement_runs`))
		require.Equal(t, int64(0), rawCount(t, dsn, `SELECT count(*) FROM settlement_exceptions`))
		require.Equal(t, int64(0), rawCount(t, dsn, `SELECT count(*) FROM settlement_lines`))
		require.NoError(t, s.FinishSettlementRun(ctx, good))
	})
}

func TestStore_SettlementPagesOrderChargeIDsByteByByte(t *testing.T) {
	ids := []string{"ch_a", "ch_B", "ch-1", "ch_0", "CH_z", "ch__"}
	want := slices.Sorted(slices.Values(ids))
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		from := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
		var lines []store.SettlementLine
		for i, id := range ids {
			lines = append(lines, line(i+2, id, 100))
			paidAttempt(t, s, from.Add(time.Hour), id)
		}
		require.NoError(t, s.AddSettlementLines(ctx, lines))

		var gotLines, gotAttempts []string
		after := store.LineCursor{}
		afterCharge := ""
		for range ids {
			page, err := s.SettlementLines(ctx, chargeonce.DefaultProvider, day, after, 1)
			require.NoError(t, err)
			require.Len(t, page, 1)
			gotLines = append(gotLines, page[0].ChargeID)
			after = store.LineCursor{ChargeID: page[0].ChargeID, LineNo: page[0].LineNo}
			attempts, err := s.SucceededAttempts(ctx, chargeonce.DefaultProvider, from, from.AddDate(0, 0, 1), afterCharge, 1)
			require.NoError(t, err)
			require.Len(t, attempts, 1)
			gotAttempts = append(gotAttempts, attempts[0].ProviderPaymentID)
			afterCharge = attempts[0].ProviderPaymentID
		}
		require.Equal(t, want, gotLines)
		require.Equal(t, want, gotAttempts)
	})
}

// The refund lines of a day page by refund id, and the succeeded refunds of
// the day by the provider's refund id; both are found by id and reference,
// and the grace period's reports say which refunds they list.
func TestStore_RefundLinesAndSucceededRefundsPageByRefundID(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		refundLine := func(no int, refundID, category string, gross int64) store.SettlementLine {
			l := line(no, "ch_x", gross)
			l.RefundID, l.Category, l.Created = refundID, category, stored(base)
			return l
		}
		want := []store.SettlementLine{refundLine(4, "re_a", "refund", -100), refundLine(6, "re_a", "refund_failure", 100),
			refundLine(2, "re_b", "refund", -200), refundLine(5, "re_c", "refund", -300)}
		charge := line(3, "ch_x", 1000)
		require.NoError(t, s.AddSettlementLines(ctx, []store.SettlementLine{want[3], charge, want[1], want[0], want[2]}))
		var got []store.SettlementLine
		after := store.LineCursor{}
		for {
			page, err := s.RefundLines(ctx, chargeonce.DefaultProvider, day, after, 3)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			last := page[len(page)-1]
			after = store.LineCursor{RefundID: last.RefundID, LineNo: last.LineNo}
		}
		require.Equal(t, want, got, "the charge line is no refund's")
		reported, err := s.ReportedRefunds(ctx, chargeonce.DefaultProvider, day, day, []string{"re_c", "re_z", "re_a"})
		require.NoError(t, err)
		require.Equal(t, []string{"re_a", "re_c"}, reported)

		var keys []string
		for _, id := range []string{"re_2", "re_10", "re_1"} {
			o, _ := paidOrder(t, s)
			f, _ := startRefund(t, s, newRefund(t, o.ID, 100, ""))
			changed, err := s.SettleRefund(ctx, f.Key, chargeonce.RefundSucceeded, id, "", base)
			require.NoError(t, err)
			require.True(t, changed)
			keys = append(keys, f.Key)
		}
		o, _ := paidOrder(t, s)
		pending, _ := startRefund(t, s, newRefund(t, o.ID, 100, ""))
		var ids []string
		last := ""
		for {
			page, err := s.SucceededRefunds(ctx, chargeonce.DefaultProvider, base.Add(-time.Hour), base.Add(time.Hour), last, 2)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			for _, f := range page {
				ids = append(ids, f.ProviderRefundID)
			}
			last = page[len(page)-1].ProviderRefundID
		}
		require.Equal(t, []string{"re_1", "re_10", "re_2"}, ids, "byte by byte, and no pending refund")
		none, err := s.SucceededRefunds(ctx, chargeonce.DefaultProvider, base.Add(time.Hour), base.Add(2*time.Hour), "", 10)
		require.NoError(t, err)
		require.Empty(t, none)

		byID, err := s.RefundsByProviderID(ctx, chargeonce.DefaultProvider, []string{"re_10", "re_nope"})
		require.NoError(t, err)
		require.Len(t, byID, 1)
		require.Equal(t, keys[1], byID[0].Key)
		byRef, err := s.RefundsByReference(ctx, chargeonce.DefaultProvider, []string{pending.MerchantReference})
		require.NoError(t, err)
		require.Len(t, byRef, 1)
		require.Equal(t, chargeonce.RefundPending, byRef[0].Status)
	})
}

// LateCharges reads what RecordLateCharge decided, and an exception keeps
// the refund it names.
func TestStore_LateChargesAndRefundExceptionsReadBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		o, _ := paidOrder(t, s)
		_, attempts := getOrder(t, s, o.ID)
		decision, refund, err := s.RecordLateCharge(ctx, store.LateCharge{AttemptKey: attempts[0].Key, ChargeID: "ch_late",
			Amount: o.Amount, RefundKey: newKey(t), ReferencePrefix: "bookstore", Now: base})
		require.NoError(t, err)
		require.Equal(t, chargeonce.LateChargeRefunded, decision)

		late, err := s.LateCharges(ctx, []string{"ch_late", "ch_other"})
		require.NoError(t, err)
		require.Equal(t, []store.RecordedLateCharge{{ChargeID: "ch_late", AttemptKey: attempts[0].Key, OrderID: o.ID, Amount: o.Amount,
			Decision: chargeonce.LateChargeRefunded, RefundKey: refund.Key, FoundAt: stored(base)}}, late)

		e := store.SettlementException{Seq: 1, Kind: chargeonce.ExceptionLateChargeRefunded, ChargeID: "ch_late", OrderID: o.ID,
			RefundKey: refund.Key, RefundID: "re_1", Detail: "refunded"}
		require.NoError(t, s.AddSettlementExceptions(ctx, chargeonce.DefaultProvider, day, "run-1", []store.SettlementException{e}))
		require.NoError(t, s.FinishSettlementRun(ctx, store.SettlementRun{Provider: chargeonce.DefaultProvider, Date: day, RunID: "run-1", Status: store.SettlementFinal,
			Exceptions: 1, FinishedAt: base}))
		got, err := s.SettlementExceptions(ctx, chargeonce.DefaultProvider, day, 10)
		require.NoError(t, err)
		require.Equal(t, []store.SettlementException{e}, got)
	})
}

// The schema takes an exception of every kind.
func TestStore_EveryExceptionKindIsStored(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		var all []store.SettlementException
		for i, k := range chargeonce.ExceptionKinds {
			all = append(all, exception(i+1, k))
		}
		require.NoError(t, s.AddSettlementExceptions(ctx, chargeonce.DefaultProvider, day, "run-1", all))
		require.NoError(t, s.FinishSettlementRun(ctx, store.SettlementRun{Provider: chargeonce.DefaultProvider, Date: day, RunID: "run-1", Status: store.SettlementFinal,
			Exceptions: len(all), FinishedAt: base}))
		listed, err := s.SettlementExceptions(ctx, chargeonce.DefaultProvider, day, store.MaxSettlementBatch)
		require.NoError(t, err)
		require.Equal(t, all, listed)
	})
}

// Two providers' books of one date are apart: each has its own staged
// lines, its own run and exceptions, and its own resolutions, so that
// settling one provider's report neither replaces nor reads the other's.
func TestStore_EachProvidersBooksOfADayAreApart(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		const other = "backup"
		alpha, beta := line(2, "ch_a", 100), line(2, "ch_backup_a", 300)
		beta.Provider = other
		require.NoError(t, s.AddSettlementLines(ctx, []store.SettlementLine{alpha, beta}))
		for provider, want := range map[string]store.SettlementLine{chargeonce.DefaultProvider: alpha, other: beta} {
			got, err := s.SettlementLines(ctx, provider, day, store.LineCursor{}, 10)
			require.NoError(t, err)
			want.Created = stored(want.Created)
			require.Equal(t, []store.SettlementLine{want}, got, "the same line number at %s", provider)
		}
		reported, err := s.ReportedCharges(ctx, other, day, day, []string{"ch_a", "ch_backup_a"})
		require.NoError(t, err)
		require.Equal(t, []string{"ch_backup_a"}, reported, "the other provider's report does not show the charge")

		finish := func(provider, runID string, exceptions ...store.SettlementException) {
			t.Helper()
			require.NoError(t, s.AddSettlementExceptions(ctx, provider, day, runID, exceptions))
			require.NoError(t, s.FinishSettlementRun(ctx, store.SettlementRun{Provider: provider, Date: day, RunID: runID,
				Status: store.SettlementFinal, Lines: 1, Exceptions: len(exceptions), FinishedAt: base}))
		}
		finish(chargeonce.DefaultProvider, "run-a", exception(1, chargeonce.ExceptionUnknownCharge))
		finish(other, "run-b", exception(1, chargeonce.ExceptionMissingInReport), exception(2, chargeonce.ExceptionAmountMismatch))
		// A rerun of the first provider's day keeps the other's exceptions.
		finish(chargeonce.DefaultProvider, "run-a2", exception(1, chargeonce.ExceptionDuplicateLine))
		listed, err := s.SettlementExceptions(ctx, other, day, 10)
		require.NoError(t, err)
		require.Len(t, listed, 2)
		run, err := s.SettlementRun(ctx, other, day)
		require.NoError(t, err)
		require.Equal(t, map[chargeonce.ExceptionKind]int{chargeonce.ExceptionMissingInReport: 1, chargeonce.ExceptionAmountMismatch: 1}, run.ByKind)
		require.NoError(t, s.ClearSettlementLines(ctx, chargeonce.DefaultProvider, day))
		left, err := s.SettlementLines(ctx, other, day, store.LineCursor{}, 10)
		require.NoError(t, err)
		require.Len(t, left, 1, "clearing one provider's report keeps the other's")

		runs, err := s.SettlementRuns(ctx, 10)
		require.NoError(t, err)
		var names []string
		for _, r := range runs {
			names = append(names, r.Provider+" "+r.Date)
		}
		require.Equal(t, []string{other + " " + day, chargeonce.DefaultProvider + " " + day}, names)
		require.Equal(t, map[chargeonce.ExceptionKind]int{chargeonce.ExceptionDuplicateLine: 1}, runs[1].ByKind)

		// One exception id, resolved at one provider, is open at the other.
		id := store.ExceptionID(day, exception(1, chargeonce.ExceptionUnknownCharge))
		_, created, err := s.ResolveException(ctx, store.ExceptionResolution{Provider: other, Date: day, ExceptionID: id,
			Note: "Found the customer.", KeyID: "key_1", At: base})
		require.NoError(t, err)
		require.True(t, created)
		mine, err := s.ExceptionResolutions(ctx, chargeonce.DefaultProvider, day)
		require.NoError(t, err)
		require.Empty(t, mine)
		theirs, err := s.ExceptionResolutions(ctx, other, day)
		require.NoError(t, err)
		require.Contains(t, theirs, id)

		_, err = s.SettlementRun(ctx, "", day)
		require.ErrorContains(t, err, "the provider is missing")
		require.ErrorContains(t, s.AddSettlementLines(ctx, []store.SettlementLine{{Date: day, LineNo: 2}}), "the provider is missing")
	})
}

// TestStore_MigrationGivesTheSettledBooksToTheDefaultProvider migrates a
// database of version 15, when one provider's books were settled, to the
// current schema: its lines, run, exceptions and resolutions are the
// default provider's, and the other providers' books of the day are empty.
func TestStore_MigrationGivesTheSettledBooksToTheDefaultProvider(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		_, at := schemaAt(t, dsn, 15)
		rawExec(t, dsn, `INSERT INTO settlement_lines (report_date, line_no, balance_transaction_id, charge_id, merchant_reference,
				reporting_category, gross_minor, fee_minor, net_minor, currency, problem, raw)
			VALUES ($1, 2, 'txn_2', 'ch_a', 'ref-ch_a', 'charge', 100, 0, 100, 'TRY', '', '')`, day)
		rawExec(t, dsn, `INSERT INTO settlement_exceptions (report_date, run_id, seq, kind, charge_id, merchant_reference, order_id,
				attempt_key, line_no, reported_minor, reported_currency, expected_minor, expected_currency, detail)
			VALUES ($1, 'run-1', 1, 'unknown_charge', 'ch_a', 'ref-ch_a', 0, '', 2, 100, 'TRY', 0, '', 'Find the customer.')`, day)
		rawExec(t, dsn, `INSERT INTO settlement_runs (report_date, run_id, status, lines, matched, awaiting, exceptions, totals, grace_days, finished_at)
			VALUES ($1, 'run-1', 'final', 1, 0, 0, 1, '[]', 2, $2)`, day, at)
		rawExec(t, dsn, `INSERT INTO settlement_resolutions (report_date, exception_id, note, key_id, key_name, resolved_at)
			VALUES ($1, '0123456789abcdef', 'Refunded by hand.', 'key_1', 'ops', $2)`, day, at)

		s := openStore(t, dsn)
		ctx := context.Background()
		lines, err := s.SettlementLines(ctx, chargeonce.DefaultProvider, day, store.LineCursor{}, 10)
		require.NoError(t, err)
		require.Len(t, lines, 1)
		require.Equal(t, chargeonce.DefaultProvider, lines[0].Provider)
		run, err := s.SettlementRun(ctx, chargeonce.DefaultProvider, day)
		require.NoError(t, err)
		require.Equal(t, map[chargeonce.ExceptionKind]int{chargeonce.ExceptionUnknownCharge: 1}, run.ByKind)
		resolved, err := s.ExceptionResolutions(ctx, chargeonce.DefaultProvider, day)
		require.NoError(t, err)
		require.Contains(t, resolved, "0123456789abcdef")
		_, err = s.SettlementRun(ctx, "backup", day)
		require.ErrorIs(t, err, store.ErrNotFound)
		// Every new row names its provider: the column has no default.
		require.Error(t, rawExecErr(t, dsn, `INSERT INTO settlement_runs (report_date, run_id, status, lines, matched, awaiting,
				exceptions, totals, grace_days, finished_at) VALUES ('2026-03-15', 'run-2', 'final', 0, 0, 0, 0, '[]', 2, $1)`, at))
	})
}
