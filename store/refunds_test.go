package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/store"
)

// paidOrder is an order of try paid by the charge it returns.
func paidOrder(t *testing.T, s store.Store) (store.Order, string) {
	t.Helper()
	order := newOrder(t, s)
	a, _ := checkout(t, s, order.ID, card("visa"), base)
	charge := "ch_" + strings.ReplaceAll(a.Key, "-", "")
	require.True(t, settle(t, s, a.Key, chargeonce.AttemptSucceeded, charge))
	o, _ := getOrder(t, s, order.ID)
	return o, charge
}

// fingerprint stands for the API's fingerprint of a request body.
func fingerprint(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

func newRefund(t *testing.T, orderID, amount int64, requestKey string) store.NewRefund {
	t.Helper()
	n := store.NewRefund{
		OrderID:         orderID,
		Amount:          amount,
		Reason:          "damaged in transit",
		Origin:          chargeonce.RefundByMerchant,
		Key:             newKey(t),
		ReferencePrefix: "bookstore",
		Now:             base,
	}
	if requestKey != "" {
		n.RequestKey, n.RequestFingerprint = requestKey, fingerprint(requestKey)
	}
	return n
}

func startRefund(t *testing.T, s store.Store, n store.NewRefund) (store.Refund, store.RefundDecision) {
	t.Helper()
	f, d, err := s.StartRefund(context.Background(), n)
	require.NoError(t, err)
	return f, d
}

func settleRefund(t *testing.T, s store.Store, key string, status chargeonce.RefundStatus, refundID string) bool {
	t.Helper()
	changed, err := s.SettleRefund(context.Background(), key, status, refundID, "", base.Add(time.Minute))
	require.NoError(t, err)
	return changed
}

func TestStore_RefundIsStoredPendingBeforeAnyRequest(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		order, charge := paidOrder(t, s)
		n := newRefund(t, order.ID, 1500, "req-1")

		f, d := startRefund(t, s, n)
		require.Equal(t, store.RefundCreated, d)
		want := store.Refund{
			RefundIntent: chargeonce.RefundIntent{
				Key:               n.Key,
				OrderID:           order.ID,
				ChargeID:          charge,
				Amount:            chargeonce.Money{Minor: 1500, Currency: "TRY"},
				Reason:            "damaged in transit",
				MerchantReference: chargeonce.RefundReference("bookstore", n.Key),
				Origin:            chargeonce.RefundByMerchant,
				CreatedAt:         stored(base),
				Provider:          chargeonce.DefaultProvider,
			},
			Status:             chargeonce.RefundPending,
			RequestKey:         "req-1",
			RequestFingerprint: fingerprint("req-1"),
		}
		require.Equal(t, want, f)
		require.NoError(t, f.Validate(), "a stored refund is an intent that can be sent")

		got, err := s.GetRefund(ctx, n.Key)
		require.NoError(t, err)
		require.Equal(t, want, got)
		got, err = s.RefundByReference(ctx, want.MerchantReference)
		require.NoError(t, err)
		require.Equal(t, want, got)
		all, err := s.OrderRefunds(ctx, order.ID)
		require.NoError(t, err)
		require.Equal(t, []store.Refund{want}, all)

		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPaid, o.Status, "a pending refund returns nothing yet")
	})
}

func TestStore_RefundRequestLogChecksAndOutbox(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		order, _ := paidOrder(t, s)
		first, _ := startRefund(t, s, newRefund(t, order.ID, 100, ""))
		later := newRefund(t, order.ID, 100, "")
		later.Now = base.Add(time.Second)
		second, _ := startRefund(t, s, later)

		open, oldest, err := s.OpenRefundStats(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, open)
		require.Equal(t, stored(base), oldest)

		page, err := s.UnstartedRefunds(ctx, base.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, []string{first.Key, second.Key}, refundKeys(page), "oldest first")
		page, err = s.UnstartedRefunds(ctx, base.Add(time.Second), 10)
		require.NoError(t, err)
		require.Equal(t, []string{first.Key}, refundKeys(page), "only those created before the cut")
		require.NoError(t, s.MarkRefundWorkflowStarted(ctx, first.Key))
		page, err = s.UnstartedRefunds(ctx, base.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, []string{second.Key}, refundKeys(page))
		_, err = s.UnstartedRefunds(ctx, base, 0)
		require.Error(t, err)

		requests := []chargeonce.ProviderRequest{
			{Key: first.Key, At: stored(base.Add(time.Millisecond)), Outcome: "timeout", Duration: 3 * time.Second},
			{Key: first.Key, At: stored(base.Add(4 * time.Second)), StatusCode: 201, Outcome: "approved", Replayed: true, Duration: 9 * time.Millisecond},
		}
		for _, i := range []int{1, 0} {
			require.Equal(t, 1, logRequest(t, s, chargeonce.OperationRefund, requests[i]), "the earlier request, logged later, takes the first place")
		}
		logRequest(t, s, chargeonce.OperationRefund, chargeonce.ProviderRequest{Key: second.Key, At: base, StatusCode: 503, Outcome: "unavailable"})
		require.NoError(t, s.MarkRefundChecked(ctx, first.Key, base.Add(5*time.Second)))

		got, err := s.GetRefund(ctx, first.Key)
		require.NoError(t, err)
		require.Equal(t, requests, got.Requests, "ordered by when each was sent")
		require.True(t, got.WorkflowStarted)
		require.Equal(t, stored(base.Add(5*time.Second)), *got.LastCheckedAt)
		all, err := s.OrderRefunds(ctx, order.ID)
		require.NoError(t, err)
		require.Nil(t, all[0].Requests, "lists carry no request logs")

		require.True(t, settleRefund(t, s, first.Key, chargeonce.RefundSucceeded, "re_1"))
		require.True(t, settleRefund(t, s, second.Key, chargeonce.RefundNotProcessed, ""))
		open, oldest, err = s.OpenRefundStats(ctx)
		require.NoError(t, err)
		require.Zero(t, open)
		require.True(t, oldest.IsZero())
		page, err = s.UnstartedRefunds(ctx, base.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Empty(t, page, "a settled refund leaves the outbox")

		// Not a refund: a payment attempt's key is another table's.
		a, _ := checkout(t, s, newOrder(t, s).ID, card("visa"), base)
		refunds, err := s.Requests(chargeonce.OperationRefund)
		require.NoError(t, err)
		_, err = refunds.Begin(ctx, a.Key, base)
		require.ErrorIs(t, err, store.ErrNotFound)
		unknown := newKey(t)
		require.ErrorIs(t, s.MarkRefundWorkflowStarted(ctx, unknown), store.ErrNotFound)
		require.ErrorIs(t, s.MarkRefundChecked(ctx, unknown, base), store.ErrNotFound)
		_, err = s.GetRefund(ctx, unknown)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.RefundByReference(ctx, "bookstore-refund-00000000000000000000000000000000")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.OrderRefunds(ctx, 999999)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.SettleRefund(ctx, unknown, chargeonce.RefundFailed, "", "", base)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func refundKeys(refunds []store.Refund) []string {
	ks := make([]string, len(refunds))
	for i, f := range refunds {
		ks[i] = f.Key
	}
	return ks
}

// TestStore_PartialRefundThenTheRest: a partial refund makes the order
// partially_refunded once it succeeds, the rest (no amount) takes what
// remains, and nothing more can be refunded then.
func TestStore_PartialRefundThenTheRest(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		order, _ := paidOrder(t, s)

		part, _ := startRefund(t, s, newRefund(t, order.ID, 4890, ""))
		require.True(t, settleRefund(t, s, part.Key, chargeonce.RefundSucceeded, "re_part"))
		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPartiallyRefunded, o.Status)
		require.Equal(t, stored(base.Add(time.Minute)), o.UpdatedAt)

		rest, _ := startRefund(t, s, newRefund(t, order.ID, 0, ""))
		require.Equal(t, chargeonce.Money{Minor: 50000, Currency: "TRY"}, rest.Amount, "the rest is what remains")
		_, _, err := s.StartRefund(ctx, newRefund(t, order.ID, 1, ""))
		require.ErrorIs(t, err, store.ErrRefundExceedsCharge, "a pending refund holds its amount")
		_, _, err = s.StartRefund(ctx, newRefund(t, order.ID, 0, ""))
		require.ErrorIs(t, err, store.ErrRefundExceedsCharge, "no rest remains")

		require.True(t, settleRefund(t, s, rest.Key, chargeonce.RefundSucceeded, "re_rest"))
		o, _ = getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderRefunded, o.Status)

		_, d := checkout(t, s, order.ID, card("visa"), base.Add(time.Hour))
		require.Equal(t, store.DecisionAlreadyPaid, d, "a refunded order is never offered for payment again")
		require.Equal(t, int64(2), rawCount(t, dsn, `SELECT count(*) FROM refunds`))
	})
}

// TestStore_FailedRefundFreesItsAmount: a refund the provider refused holds
// nothing, so the amount can be refunded again.
func TestStore_FailedRefundFreesItsAmount(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		order, _ := paidOrder(t, s)
		whole, _ := startRefund(t, s, newRefund(t, order.ID, 0, ""))
		changed, err := s.SettleRefund(ctx, whole.Key, chargeonce.RefundFailed, "", "charge_not_refundable", base.Add(time.Minute))
		require.NoError(t, err)
		require.True(t, changed)
		got, err := s.GetRefund(ctx, whole.Key)
		require.NoError(t, err)
		require.Equal(t, chargeonce.RefundFailed, got.Status)
		require.Equal(t, "charge_not_refundable", got.FailureReason)
		require.Equal(t, stored(base.Add(time.Minute)), *got.SettledAt)
		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPaid, o.Status)

		again, d := startRefund(t, s, newRefund(t, order.ID, 0, ""))
		require.Equal(t, store.RefundCreated, d)
		require.Equal(t, order.Amount, again.Amount)
	})
}

// TestStore_ConcurrentRefundsNeverPassTheCharge races ten refunds of 100.00
// against one order of 548.90: five fit, the other five are refused, and the
// refunds that hold never sum to more than the charge. Half of them are an
// operator's refunds of the order's charge, which must take turns with the
// order's all the same.
//
// SQLite runs one writer at a time. On PostgreSQL the race is held open: a
// transaction of the test locks the refunds table, so that every refund
// reaches the database and waits, at its lock or at the table, before the
// first of them can read what the charge has refunded; then it lets them
// all go. Without the store's locks, all ten would read nothing refunded.
func TestStore_ConcurrentRefundsNeverPassTheCharge(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		const callers = 10
		s := openStore(t, withConns(dsn, callers))
		order, charge := paidOrder(t, s)
		release := holdTable(t, dsn, "refunds")

		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			n := newRefund(t, order.ID, 10000, "")
			if i%2 == 1 {
				n.OrderID, n.ChargeID, n.Origin = 0, charge, chargeonce.RefundByOperator
			}
			wg.Go(func() {
				_, _, errs[i] = s.StartRefund(context.Background(), n)
			})
		}
		release(callers)
		wg.Wait()

		created := 0
		for _, err := range errs {
			if err == nil {
				created++
				continue
			}
			require.ErrorIs(t, err, store.ErrRefundExceedsCharge)
		}
		require.Equal(t, 5, created)
		require.Equal(t, int64(50000), rawCount(t, dsn, `SELECT sum(amount_minor) FROM refunds WHERE charge_id = $1`, charge))
		refunds, err := s.OrderRefunds(context.Background(), order.ID)
		require.NoError(t, err)
		require.Len(t, refunds, 5, "an operator's refund of an order's charge belongs to the order")
	})
}

// withConns lets a PostgreSQL store open a connection for each of n
// callers, so that all of them wait in the database rather than for the
// pool.
func withConns(dsn string, n int) string {
	if strings.HasPrefix(dsn, "sqlite:") {
		return dsn
	}
	return dsn + "&pool_max_conns=" + strconv.Itoa(n+2)
}

// holdTable locks a table on PostgreSQL until release(waiters) is called,
// which first waits until that many other sessions of the database wait
// for a lock. On SQLite, whose writers take turns anyway, it does nothing.
func holdTable(t *testing.T, dsn, table string) (release func(waiters int)) {
	t.Helper()
	if strings.HasPrefix(dsn, "sqlite:") {
		return func(int) {}
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(ctx) })
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `LOCK TABLE `+table+` IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	return func(waiters int) {
		require.Eventually(t, func() bool {
			return rawCount(t, dsn, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`) == int64(waiters)
		}, time.Minute, 10*time.Millisecond, "%d sessions wait for a lock", waiters)
		require.NoError(t, tx.Commit(ctx))
	}
}

// TestStore_RequestKeyIsReplayedOrRefusedAndFreedByNotProcessed: the API's
// Idempotency-Key names one refund. The same key and body get that refund;
// another body gets it too, as key_reused, and nothing changes; once the
// refund is not_processed, the key may be used again.
func TestStore_RequestKeyIsReplayedOrRefusedAndFreedByNotProcessed(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order, _ := paidOrder(t, s)
		other, _ := paidOrder(t, s)
		first, d := startRefund(t, s, newRefund(t, order.ID, 1000, "req-1"))
		require.Equal(t, store.RefundCreated, d)

		replay, d := startRefund(t, s, newRefund(t, order.ID, 1000, "req-1"))
		require.Equal(t, store.RefundReplayed, d)
		require.Equal(t, first, replay)

		require.True(t, settleRefund(t, s, first.Key, chargeonce.RefundSucceeded, "re_1"))
		replay, d = startRefund(t, s, newRefund(t, order.ID, 1000, "req-1"))
		require.Equal(t, store.RefundReplayed, d, "a settled refund is replayed too")
		require.Equal(t, chargeonce.RefundSucceeded, replay.Status, "as it stands now")

		reused := newRefund(t, other.ID, 2000, "req-1")
		reused.RequestFingerprint = fingerprint("another body")
		got, d := startRefund(t, s, reused)
		require.Equal(t, store.RefundKeyReused, d)
		require.Equal(t, first.Key, got.Key)
		require.Equal(t, int64(1), rawCount(t, dsn, `SELECT count(*) FROM refunds`), "nothing is inserted")

		pending, _ := startRefund(t, s, newRefund(t, order.ID, 1000, "req-2"))
		require.True(t, settleRefund(t, s, pending.Key, chargeonce.RefundNotProcessed, ""))
		retry, d := startRefund(t, s, newRefund(t, order.ID, 1000, "req-2"))
		require.Equal(t, store.RefundCreated, d, "a not_processed refund frees its request key")
		require.NotEqual(t, pending.Key, retry.Key, "under a new refund key")
		replay, d = startRefund(t, s, newRefund(t, order.ID, 1000, "req-2"))
		require.Equal(t, store.RefundReplayed, d)
		require.Equal(t, retry.Key, replay.Key)
	})
}

// TestStore_RequestKeySentAgainForAnotherTargetIsKeyReused: a request key
// sent again with another request is key_reused, even where the new
// request names an order never paid or a charge the books do not hold.
func TestStore_RequestKeySentAgainForAnotherTargetIsKeyReused(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		paid, _ := paidOrder(t, s)
		placed := newOrder(t, s)
		first, d := startRefund(t, s, newRefund(t, paid.ID, 1000, "req-1"))
		require.Equal(t, store.RefundCreated, d)

		unpaid := newRefund(t, placed.ID, 1000, "req-1")
		unpaid.RequestFingerprint = fingerprint("another order")
		got, d := startRefund(t, s, unpaid)
		require.Equal(t, store.RefundKeyReused, d, "an order never paid")
		require.Equal(t, first.Key, got.Key)

		unknown := newRefund(t, 0, 0, "req-1")
		unknown.ChargeID, unknown.Origin = "ch_never_seen", chargeonce.RefundByOperator
		unknown.RequestFingerprint = fingerprint("a charge the books do not hold")
		_, d = startRefund(t, s, unknown)
		require.Equal(t, store.RefundKeyReused, d, "a charge the books do not hold")

		_, _, err := s.StartRefund(context.Background(), newRefund(t, placed.ID, 1000, "req-2"))
		require.ErrorIs(t, err, store.ErrNotRefundable, "a fresh key is refused for the order")
		require.Equal(t, int64(1), rawCount(t, dsn, `SELECT count(*) FROM refunds`), "nothing is inserted")
	})
}

// TestStore_ConcurrentRequestsWithOneKeyMakeOneRefund: copies of one
// request for the rest, racing each other (held open on PostgreSQL as in
// TestStore_ConcurrentRefundsNeverPassTheCharge), store one refund; the
// others replay it, and none is refused for the amount its twin took.
func TestStore_ConcurrentRequestsWithOneKeyMakeOneRefund(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		const callers = 10
		s := openStore(t, withConns(dsn, callers))
		order, _ := paidOrder(t, s)
		release := holdTable(t, dsn, "refunds")
		results := make([]store.Refund, callers)
		decisions := make([]store.RefundDecision, callers)
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			n := newRefund(t, order.ID, 0, "req-rest")
			wg.Go(func() {
				results[i], decisions[i], errs[i] = s.StartRefund(context.Background(), n)
			})
		}
		release(callers)
		wg.Wait()
		count := map[store.RefundDecision]int{}
		for i := range callers {
			require.NoError(t, errs[i], "a copy is replayed, never refused for the amount its twin took")
			require.Equal(t, results[0].Key, results[i].Key)
			count[decisions[i]]++
		}
		require.Equal(t, map[store.RefundDecision]int{store.RefundCreated: 1, store.RefundReplayed: callers - 1}, count)
	})
}

// TestStore_RefundThatFailsAfterSuccessPutsTheOrderBack: the provider can
// fail a refund it had reported succeeded; the order is then as if it had
// never been refunded, and no other move is allowed.
func TestStore_RefundThatFailsAfterSuccessPutsTheOrderBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		order, _ := paidOrder(t, s)
		f, _ := startRefund(t, s, newRefund(t, order.ID, 0, ""))
		require.True(t, settleRefund(t, s, f.Key, chargeonce.RefundSucceeded, "re_1"))
		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderRefunded, o.Status)

		later := base.Add(time.Hour)
		changed, err := s.SettleRefund(ctx, f.Key, chargeonce.RefundFailed, "", "lost_or_stolen_card", later)
		require.NoError(t, err)
		require.True(t, changed)
		got, err := s.GetRefund(ctx, f.Key)
		require.NoError(t, err)
		require.Equal(t, chargeonce.RefundFailed, got.Status)
		require.Equal(t, "re_1", got.ProviderRefundID, "the provider's id is kept")
		require.Equal(t, "lost_or_stolen_card", got.FailureReason)
		require.Equal(t, stored(base.Add(time.Minute)), *got.SettledAt, "it settled when it first left pending")
		o, _ = getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPaid, o.Status)
		require.Equal(t, stored(later), o.UpdatedAt)

		for _, status := range []chargeonce.RefundStatus{chargeonce.RefundSucceeded, chargeonce.RefundFailed, chargeonce.RefundNotProcessed} {
			require.False(t, settleRefund(t, s, f.Key, status, "re_2"), "failed is final: %s", status)
		}
		nothing, _ := startRefund(t, s, newRefund(t, order.ID, 0, ""))
		require.True(t, settleRefund(t, s, nothing.Key, chargeonce.RefundNotProcessed, ""))
		require.False(t, settleRefund(t, s, nothing.Key, chargeonce.RefundSucceeded, "re_3"), "not_processed is final")
		got, err = s.GetRefund(ctx, f.Key)
		require.NoError(t, err)
		require.Equal(t, "re_1", got.ProviderRefundID)
	})
}

func TestStore_RefundOfNothingIsRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		placed := newOrder(t, s)
		_, _, err := s.StartRefund(ctx, newRefund(t, placed.ID, 0, ""))
		require.ErrorIs(t, err, store.ErrNotRefundable, "an order never paid")
		_, _, err = s.StartRefund(ctx, newRefund(t, 999999, 0, ""))
		require.ErrorIs(t, err, store.ErrNotFound)

		order, _ := paidOrder(t, s)
		_, otherCharge := paidOrder(t, s)
		n := newRefund(t, order.ID, 0, "")
		n.ChargeID = otherCharge
		_, _, err = s.StartRefund(ctx, n)
		require.ErrorIs(t, err, store.ErrNotRefundable, "another order's charge")

		n = newRefund(t, 0, 0, "")
		n.ChargeID, n.Origin = "ch_never_seen", chargeonce.RefundByOperator
		_, _, err = s.StartRefund(ctx, n)
		require.ErrorIs(t, err, store.ErrNotRefundable, "a charge the books do not hold")

		_, _, err = s.StartRefund(ctx, newRefund(t, order.ID, order.Amount.Minor+1, ""))
		require.ErrorIs(t, err, store.ErrRefundExceedsCharge)
		require.Zero(t, rawCount(t, dsn, `SELECT count(*) FROM refunds`))
	})
}

// TestStore_OperatorRefundsAChargeOfNoOrder: a charge that only the
// settlement report shows belongs to no order; an operator may refund it,
// within its amount.
func TestStore_OperatorRefundsAChargeOfNoOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		rawExec(t, dsn, `INSERT INTO settlement_lines (provider, report_date, line_no, balance_transaction_id, charge_id, merchant_reference,
				reporting_category, gross_minor, fee_minor, net_minor, currency, problem, raw, refund_id)
			VALUES ('default', '2026-03-14', 2, 'txn_1', 'ch_stray', 'someone-else', 'charge', 2500, 100, 2400, 'USD', '', '', '')`)
		ctx := context.Background()
		c, err := s.RefundableCharge(ctx, "ch_stray")
		require.NoError(t, err)
		require.Equal(t, store.RefundableCharge{ID: "ch_stray", Amount: chargeonce.Money{Minor: 2500, Currency: "USD"}, Provider: chargeonce.DefaultProvider}, c)
		_, err = s.RefundableCharge(ctx, "ch_never_seen")
		require.ErrorIs(t, err, store.ErrNotRefundable)

		n := newRefund(t, 0, 0, "op-1")
		n.ChargeID, n.Origin = "ch_stray", chargeonce.RefundByOperator
		f, d := startRefund(t, s, n)
		require.Equal(t, store.RefundCreated, d)
		require.Zero(t, f.OrderID)
		require.Equal(t, chargeonce.Money{Minor: 2500, Currency: "USD"}, f.Amount)
		require.True(t, settleRefund(t, s, f.Key, chargeonce.RefundSucceeded, "re_stray"))

		n = newRefund(t, 0, 1, "")
		n.ChargeID, n.Origin = "ch_stray", chargeonce.RefundByOperator
		_, _, err = s.StartRefund(ctx, n)
		require.ErrorIs(t, err, store.ErrRefundExceedsCharge)
	})
}

func TestStore_BadRefundInputIsRefusedAndChangesNothing(t *testing.T) {
	cases := []struct {
		name   string
		change func(n *store.NewRefund)
	}{
		{"negative order", func(n *store.NewRefund) { n.OrderID = -1 }},
		{"negative amount", func(n *store.NewRefund) { n.Amount = -1 }},
		{"no order for a merchant", func(n *store.NewRefund) { n.OrderID, n.ChargeID = 0, "ch_1" }},
		{"operator names nothing", func(n *store.NewRefund) { n.OrderID, n.Origin = 0, chargeonce.RefundByOperator }},
		{"late charge origin", func(n *store.NewRefund) { n.Origin = chargeonce.RefundLateCharge }},
		{"unknown origin", func(n *store.NewRefund) { n.Origin = "customer" }},
		{"key not a UUID", func(n *store.NewRefund) { n.Key = "retry-1" }},
		{"bad reference prefix", func(n *store.NewRefund) { n.ReferencePrefix = "Book-Store" }},
		{"request key without fingerprint", func(n *store.NewRefund) { n.RequestFingerprint = "" }},
		{"fingerprint not hex", func(n *store.NewRefund) { n.RequestFingerprint = "x" + n.RequestFingerprint[1:] }},
		{"request key too long", func(n *store.NewRefund) { n.RequestKey = string(make([]byte, store.MaxRequestKeyLength+1)) }},
		{"control character in reason", func(n *store.NewRefund) { n.Reason = "a\x00b" }},
		{"reason not UTF-8", func(n *store.NewRefund) { n.Reason = "\xff" }},
		{"no creation time", func(n *store.NewRefund) { n.Now = time.Time{} }},
	}
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		order, _ := paidOrder(t, s)
		for _, c := range cases {
			n := newRefund(t, order.ID, 100, "req")
			c.change(&n)
			_, _, err := s.StartRefund(ctx, n)
			require.Error(t, err, c.name)
		}
		require.Zero(t, rawCount(t, dsn, `SELECT count(*) FROM refunds`))

		f, _ := startRefund(t, s, newRefund(t, order.ID, 100, ""))
		for name, settle := range map[string]func() (bool, error){
			"pending is not settled":      func() (bool, error) { return s.SettleRefund(ctx, f.Key, chargeonce.RefundPending, "", "", base) },
			"unknown status":              func() (bool, error) { return s.SettleRefund(ctx, f.Key, "refunded", "", "", base) },
			"succeeded without refund ID": func() (bool, error) { return s.SettleRefund(ctx, f.Key, chargeonce.RefundSucceeded, "", "", base) },
			"failure reason not UTF-8":    func() (bool, error) { return s.SettleRefund(ctx, f.Key, chargeonce.RefundFailed, "", "\xff", base) },
			"no time":                     func() (bool, error) { return s.SettleRefund(ctx, f.Key, chargeonce.RefundFailed, "", "", time.Time{}) },
			"key not a UUID":              func() (bool, error) { return s.SettleRefund(ctx, "re_1", chargeonce.RefundFailed, "", "", base) },
		} {
			changed, err := settle()
			require.Error(t, err, name)
			require.False(t, changed, name)
		}
		got, err := s.GetRefund(ctx, f.Key)
		require.NoError(t, err)
		require.Equal(t, f, got)
	})
}

func lateCharge(t *testing.T, attemptKey, chargeID string) store.LateCharge {
	return store.LateCharge{
		AttemptKey:      attemptKey,
		ChargeID:        chargeID,
		Amount:          try,
		RefundKey:       newKey(t),
		ReferencePrefix: "bookstore",
		Now:             base.Add(time.Hour),
	}
}

func recordLateCharge(t *testing.T, s store.Store, c store.LateCharge) (chargeonce.LateChargeDecision, *store.Refund) {
	t.Helper()
	d, f, err := s.RecordLateCharge(context.Background(), c)
	require.NoError(t, err)
	return d, f
}

// TestStore_LateChargeOfAnOrderNotPaidSinceIsAdopted: the charge of an
// abandoned attempt pays its order when no other did; found again, it is
// known; the attempt keeps its status, and a checkout finds the order paid.
func TestStore_LateChargeOfAnOrderNotPaidSinceIsAdopted(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		abandoned, _ := checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, abandoned.Key, chargeonce.AttemptAbandoned, ""))

		d, f := recordLateCharge(t, s, lateCharge(t, abandoned.Key, "ch_late"))
		require.Equal(t, chargeonce.LateChargeAdopted, d)
		require.Nil(t, f)
		o, attempts := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPaid, o.Status)
		require.Equal(t, "ch_late", o.ProviderPaymentID)
		require.Equal(t, stored(base.Add(time.Hour)), o.UpdatedAt)
		require.Equal(t, chargeonce.AttemptAbandoned, attempts[0].Status, "a terminal status is never overwritten")

		d, f = recordLateCharge(t, s, lateCharge(t, abandoned.Key, "ch_late"))
		require.Equal(t, chargeonce.LateChargeKnown, d, "found again, it is the charge that paid the order")
		require.Nil(t, f)
		require.Equal(t, int64(1), rawCount(t, dsn, `SELECT count(*) FROM late_charges WHERE decision = 'adopted'`))

		a, dc := checkout(t, s, order.ID, card("visa"), base.Add(2*time.Hour))
		require.Equal(t, store.DecisionAlreadyPaid, dc)
		require.Equal(t, abandoned.Key, a.Key, "the attempt whose charge paid the order")

		refund, _ := startRefund(t, s, newRefund(t, order.ID, 0, ""))
		require.Equal(t, "ch_late", refund.ChargeID, "the adopted charge is the order's to refund")
	})
}

// TestStore_LateChargeOfAnOrderPaidByAnotherIsRefundedOnce: a second charge
// for a paid order is refunded in whole, once however often it is found,
// and again only if nothing was processed under the first refund's key.
func TestStore_LateChargeOfAnOrderPaidByAnotherIsRefundedOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		order := newOrder(t, s)
		abandoned, _ := checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, abandoned.Key, chargeonce.AttemptAbandoned, ""))
		paid, _ := checkout(t, s, order.ID, card("visa"), base.Add(time.Minute))
		require.True(t, settle(t, s, paid.Key, chargeonce.AttemptSucceeded, "ch_paid"))

		c := lateCharge(t, abandoned.Key, "ch_late")
		d, f := recordLateCharge(t, s, c)
		require.Equal(t, chargeonce.LateChargeRefunded, d)
		require.NotNil(t, f)
		require.Equal(t, c.RefundKey, f.Key)
		require.Equal(t, order.ID, f.OrderID)
		require.Equal(t, "ch_late", f.ChargeID)
		require.Equal(t, try, f.Amount)
		require.Equal(t, chargeonce.RefundLateCharge, f.Origin)
		require.Equal(t, chargeonce.RefundPending, f.Status)
		require.False(t, f.WorkflowStarted, "the outbox starts it if its finder cannot")
		require.Empty(t, f.RequestKey)
		require.NoError(t, f.Validate())

		d, again := recordLateCharge(t, s, lateCharge(t, abandoned.Key, "ch_late"))
		require.Equal(t, chargeonce.LateChargeRefunded, d)
		require.Equal(t, f, again, "one refund per late charge, however often found")

		for _, id := range []string{"ch_late", "ch_paid"} {
			c, err := s.RefundableCharge(ctx, id)
			require.NoError(t, err)
			require.Equal(t, store.RefundableCharge{ID: id, Amount: try, OrderID: order.ID, Provider: chargeonce.DefaultProvider}, c, "both are the order's charges")
		}

		d, known := recordLateCharge(t, s, lateCharge(t, paid.Key, "ch_paid"))
		require.Equal(t, chargeonce.LateChargeKnown, d)
		require.Nil(t, known)

		require.True(t, settleRefund(t, s, f.Key, chargeonce.RefundSucceeded, "re_late"))
		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPaid, o.Status, "refunding a late charge leaves the paying charge's order as it is")
		require.Equal(t, "ch_paid", o.ProviderPaymentID)

		// An operator may refund the paying charge, but the late one is
		// whole refunded already.
		n := newRefund(t, 0, 1, "")
		n.ChargeID, n.Origin = "ch_late", chargeonce.RefundByOperator
		_, _, err := s.StartRefund(ctx, n)
		require.ErrorIs(t, err, store.ErrRefundExceedsCharge)

		// A late charge whose refund processed nothing gets a new one.
		second := newOrder(t, s)
		lost, _ := checkout(t, s, second.ID, card("visa"), base)
		require.True(t, settle(t, s, lost.Key, chargeonce.AttemptNotProcessed, ""))
		won, _ := checkout(t, s, second.ID, card("visa"), base.Add(time.Minute))
		require.True(t, settle(t, s, won.Key, chargeonce.AttemptSucceeded, "ch_won"))
		_, first := recordLateCharge(t, s, lateCharge(t, lost.Key, "ch_lost"))
		require.True(t, settleRefund(t, s, first.Key, chargeonce.RefundNotProcessed, ""))
		d, next := recordLateCharge(t, s, lateCharge(t, lost.Key, "ch_lost"))
		require.Equal(t, chargeonce.LateChargeRefunded, d)
		require.NotEqual(t, first.Key, next.Key)
		require.Equal(t, chargeonce.RefundPending, next.Status)
		d, same := recordLateCharge(t, s, lateCharge(t, lost.Key, "ch_lost"))
		require.Equal(t, chargeonce.LateChargeRefunded, d)
		require.Equal(t, next.Key, same.Key)
		require.Equal(t, int64(2), rawCount(t, dsn, `SELECT count(*) FROM late_charges WHERE decision = 'refunded'`))
	})
}

// TestStore_LateChargeOfAnotherAmountIsRefunded: a charge that is not the
// order's amount cannot pay it, even when nothing else did.
func TestStore_LateChargeOfAnotherAmountIsRefunded(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		abandoned, _ := checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, abandoned.Key, chargeonce.AttemptAbandoned, ""))
		c := lateCharge(t, abandoned.Key, "ch_odd")
		c.Amount = chargeonce.Money{Minor: 100, Currency: "TRY"}
		d, f := recordLateCharge(t, s, c)
		require.Equal(t, chargeonce.LateChargeRefunded, d)
		require.Equal(t, c.Amount, f.Amount)
		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPlaced, o.Status, "the customer may still pay")
	})
}

// TestStore_ConcurrentFindsOfOneLateChargeMakeOneRefund: the event, the
// workflow and the settlement may find one late charge at once (held open
// on PostgreSQL as in TestStore_ConcurrentRefundsNeverPassTheCharge).
func TestStore_ConcurrentFindsOfOneLateChargeMakeOneRefund(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		const finders = 8
		s := openStore(t, withConns(dsn, finders))
		order := newOrder(t, s)
		abandoned, _ := checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, abandoned.Key, chargeonce.AttemptAbandoned, ""))
		paid, _ := checkout(t, s, order.ID, card("visa"), base.Add(time.Minute))
		require.True(t, settle(t, s, paid.Key, chargeonce.AttemptSucceeded, "ch_paid"))
		release := holdTable(t, dsn, "late_charges")

		refunds := make([]*store.Refund, finders)
		errs := make([]error, finders)
		var wg sync.WaitGroup
		for i := range finders {
			c := lateCharge(t, abandoned.Key, "ch_late")
			wg.Go(func() {
				_, refunds[i], errs[i] = s.RecordLateCharge(context.Background(), c)
			})
		}
		release(finders)
		wg.Wait()
		for i := range finders {
			require.NoError(t, errs[i])
			require.Equal(t, refunds[0].Key, refunds[i].Key)
		}
		require.Equal(t, int64(1), rawCount(t, dsn, `SELECT count(*) FROM refunds`))
	})
}

func TestStore_BadLateChargeIsRefusedAndChangesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		order := newOrder(t, s)
		a, _ := checkout(t, s, order.ID, card("visa"), base)
		for name, change := range map[string]func(c *store.LateCharge){
			"attempt key not a UUID": func(c *store.LateCharge) { c.AttemptKey = "a1" },
			"no charge":              func(c *store.LateCharge) { c.ChargeID = "" },
			"no amount":              func(c *store.LateCharge) { c.Amount = chargeonce.Money{} },
			"refund key not a UUID":  func(c *store.LateCharge) { c.RefundKey = "r1" },
			"bad reference prefix":   func(c *store.LateCharge) { c.ReferencePrefix = "" },
			"no time":                func(c *store.LateCharge) { c.Now = time.Time{} },
		} {
			c := lateCharge(t, a.Key, "ch_late")
			change(&c)
			_, _, err := s.RecordLateCharge(ctx, c)
			require.Error(t, err, name)
		}
		_, _, err := s.RecordLateCharge(ctx, lateCharge(t, newKey(t), "ch_late"))
		require.ErrorIs(t, err, store.ErrNotFound, "an unknown attempt")
		require.Zero(t, rawCount(t, dsn, `SELECT count(*) FROM late_charges`))
		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPaymentPending, o.Status)
	})
}

// TestStore_SettlingNeverUnpaysARefundedOrder: the order adopted a late
// charge while a new attempt was open, and was partly refunded since; the
// attempt settling then leaves the order as it is.
func TestStore_SettlingNeverUnpaysARefundedOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		abandoned, _ := checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, abandoned.Key, chargeonce.AttemptAbandoned, ""))
		open, _ := checkout(t, s, order.ID, card("mastercard"), base.Add(time.Minute))
		d, _ := recordLateCharge(t, s, lateCharge(t, abandoned.Key, "ch_late"))
		require.Equal(t, chargeonce.LateChargeAdopted, d, "an order payment_pending was not paid since")
		f, _ := startRefund(t, s, newRefund(t, order.ID, 100, ""))
		require.True(t, settleRefund(t, s, f.Key, chargeonce.RefundSucceeded, "re_1"))

		require.True(t, settle(t, s, open.Key, chargeonce.AttemptDeclined, ""))
		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPartiallyRefunded, o.Status)
		require.Equal(t, "ch_late", o.ProviderPaymentID)
		_, dc := checkout(t, s, order.ID, card("visa"), base.Add(time.Hour))
		require.Equal(t, store.DecisionAlreadyPaid, dc)
	})
}

// schemaV7 is what TestStore_MigrationToRefundsKeepsTheDataAndTheOrderNumbers
// needs of each dialect to inspect the tables that version 8 rebuilds.
var schemaV7 = map[string]struct {
	// indexes counts the indexes of payment_attempts and provider_requests;
	// foreignKeys counts the references from provider_requests to
	// payment_attempts and from payment_attempts to orders; orphans counts
	// the rows whose reference leads nowhere.
	indexes, foreignKeys, orphans string
}{
	"sqlite": {
		indexes: `SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name IN
			('payment_attempts_one_open_per_order', 'payment_attempts_by_order', 'payment_attempts_unstarted',
			 'payment_attempts_succeeded_by_charge', 'provider_requests_by_key')`,
		foreignKeys: schemaV2["sqlite"].foreignKeys,
		orphans:     `SELECT count(*) FROM pragma_foreign_key_check`,
	},
	"postgres": {
		indexes: `SELECT count(*) FROM pg_indexes WHERE indexname IN
			('payment_attempts_one_open_per_order', 'payment_attempts_by_order', 'payment_attempts_unstarted',
			 'payment_attempts_succeeded_by_charge', 'provider_requests_by_key')`,
		foreignKeys: schemaV2["postgres"].foreignKeys,
		// PostgreSQL checks every reference as it is made.
		orphans: `SELECT 0`,
	},
}

// TestStore_MigrationToRefundsKeepsTheDataAndTheOrderNumbers migrates a
// database of version 7, with a paid, a pending and a placed order, their
// attempts and request logs, to the current schema. SQLite rebuilds orders
// and the tables that refer to it: the rows, the indexes and the foreign
// keys are all there after, and an order number is never given twice, not
// even the number of an order that was deleted.
func TestStore_MigrationToRefundsKeepsTheDataAndTheOrderNumbers(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		dialect, at := schemaAt(t, dsn, 7)
		for _, o := range []struct {
			status    string
			paymentID any
		}{{"paid", "ch_paid"}, {"payment_pending", nil}, {"placed", nil}, {"placed", nil}} {
			rawExec(t, dsn, `INSERT INTO orders (amount_minor, currency, description, status, provider_payment_id, created_at, updated_at)
				VALUES (54890, 'TRY', 'Collected works', $1, $2, $3, $3)`, o.status, o.paymentID, at)
		}
		// The newest order is gone: its number must not come back.
		rawExec(t, dsn, `DELETE FROM orders WHERE id = 1004`)
		succeeded, open := newKey(t), newKey(t)
		for _, a := range []struct {
			key, status string
			orderID     int64
			paymentID   any
			settled     any
		}{
			{succeeded, "succeeded", 1001, "ch_paid", at},
			{open, "open", 1002, nil, nil},
		} {
			rawExec(t, dsn, `INSERT INTO payment_attempts (idempotency_key, order_id, amount_minor, currency, card_hash, card_hash_keyed,
					merchant_reference, status, provider_payment_id, workflow_started, created_at, abandon_at, settled_at)
				VALUES ($1, $2, 54890, 'TRY', $3, true, $4, $5, $6, true, $7, $7, $8)`,
				a.key, a.orderID, card("visa"), chargeonce.MerchantReference("bookstore", a.orderID, a.key), a.status, a.paymentID, at, a.settled)
			rawExec(t, dsn, `INSERT INTO provider_requests (idempotency_key, at, status_code, outcome, replayed, duration_us) VALUES ($1, $2, 503, 'unavailable', false, 1500)`,
				a.key, at)
		}

		s := openStore(t, dsn)

		require.Equal(t, int64(migrations), rawCount(t, dsn, `SELECT count(*) FROM schema_migrations`))
		v7 := schemaV7[dialect]
		require.Equal(t, int64(5), rawCount(t, dsn, v7.indexes), "the indexes are back")
		require.Equal(t, int64(2), rawCount(t, dsn, v7.foreignKeys), "the foreign keys are kept")
		require.Zero(t, rawCount(t, dsn, v7.orphans), "every reference leads to its row")
		paid, attempts := getOrder(t, s, 1001)
		require.Equal(t, chargeonce.OrderPaid, paid.Status)
		require.Equal(t, "ch_paid", paid.ProviderPaymentID)
		require.Equal(t, stored(base), paid.CreatedAt)
		require.Equal(t, []string{succeeded}, keys(attempts))
		require.True(t, attempts[0].CardHashKeyed)
		require.Equal(t, []chargeonce.ProviderRequest{{Key: succeeded, At: stored(base), StatusCode: 503, Outcome: "unavailable", Duration: 1500 * time.Microsecond}}, attempts[0].Requests)
		pending, attempts := getOrder(t, s, 1002)
		require.Equal(t, chargeonce.OrderPaymentPending, pending.Status)
		require.Equal(t, []string{open}, keys(attempts))
		require.Equal(t, int64(1), rawCount(t, dsn, `SELECT count(*) FROM payment_attempts WHERE status = 'succeeded' AND provider_payment_id = 'ch_paid'`))

		next := newOrder(t, s)
		require.Equal(t, int64(1005), next.ID, "order numbers go on from the highest ever given")
		_, d2 := checkout(t, s, 1002, card("visa"), base)
		require.Equal(t, store.DecisionReused, d2, "the one-open-attempt index still finds the open attempt")

		f, _ := startRefund(t, s, newRefund(t, 1001, 0, ""))
		require.True(t, settleRefund(t, s, f.Key, chargeonce.RefundSucceeded, "re_1"))
		refunded, _ := getOrder(t, s, 1001)
		require.Equal(t, chargeonce.OrderRefunded, refunded.Status, "the new statuses are admitted")
	})
}

// A refund goes to the provider that holds its charge, asked for by order
// or by charge, and a charge that only a settlement report shows is held
// by the provider whose report shows it.
func TestStore_RefundGoesToTheProviderOfItsCharge(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		n := newAttempt(t, order.ID, card("visa"), base)
		n.Provider = "eu"
		_, a, _, err := s.GetOrStartAttempt(context.Background(), n)
		require.NoError(t, err)
		require.True(t, settle(t, s, a.Key, chargeonce.AttemptSucceeded, "ch_eu"))

		f, d := startRefund(t, s, newRefund(t, order.ID, 1500, ""))
		require.Equal(t, store.RefundCreated, d)
		require.Equal(t, "eu", f.Provider)

		byCharge := newRefund(t, 0, 500, "")
		byCharge.ChargeID, byCharge.Origin = "ch_eu", chargeonce.RefundByOperator
		f, d = startRefund(t, s, byCharge)
		require.Equal(t, store.RefundCreated, d)
		require.Equal(t, "eu", f.Provider)

		stray := line(2, "ch_stray_eu", 700)
		stray.Provider = "eu"
		require.NoError(t, s.AddSettlementLines(context.Background(), []store.SettlementLine{stray}))
		ofNoOrder := newRefund(t, 0, 0, "")
		ofNoOrder.ChargeID, ofNoOrder.Origin = "ch_stray_eu", chargeonce.RefundByOperator
		f, d = startRefund(t, s, ofNoOrder)
		require.Equal(t, store.RefundCreated, d)
		require.Equal(t, "eu", f.Provider, "the provider whose report shows the charge")
	})
}
