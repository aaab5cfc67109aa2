package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/store"
)

func TestStore_ConcurrentCheckoutsOfOneOrderShareOneAttempt(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)

		const callers = 50
		type result struct {
			attempt  store.Attempt
			decision store.Decision
			err      error
		}
		results := make([]result, callers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range callers {
			n := newAttempt(t, order.ID, card("visa"), base)
			wg.Go(func() {
				<-start
				_, a, d, err := s.GetOrStartAttempt(context.Background(), n)
				results[i] = result{a, d, err}
			})
		}
		close(start)
		wg.Wait()

		decisions := map[store.Decision]int{}
		for _, r := range results {
			require.NoError(t, r.err)
			decisions[r.decision]++
			require.Equal(t, results[0].attempt.Key, r.attempt.Key, "every caller must get the same key")
		}
		require.Equal(t, map[store.Decision]int{store.DecisionCreated: 1, store.DecisionReused: callers - 1}, decisions)

		o, attempts := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPaymentPending, o.Status)
		require.Len(t, attempts, 1)
		require.Equal(t, results[0].attempt.Key, attempts[0].Key)
		require.Equal(t, int64(1), rawCount(t, dsn, `SELECT count(*) FROM payment_attempts`))
	})
}

func TestStore_NewAttemptIsStoredBeforeAnyRequest(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		n := newAttempt(t, order.ID, card("visa"), base)

		returned, a, d, err := s.GetOrStartAttempt(context.Background(), n)
		require.NoError(t, err)
		require.Equal(t, store.DecisionCreated, d)
		require.Equal(t, store.Attempt{
			Key:               n.Key,
			OrderID:           order.ID,
			Amount:            try,
			CardHash:          card("visa"),
			CardHashKeyed:     true,
			MerchantReference: chargeonce.MerchantReference("bookstore", order.ID, n.Key),
			Status:            chargeonce.AttemptOpen,
			CreatedAt:         stored(base),
			AbandonAt:         stored(base).Add(30 * time.Minute),
			Provider:          chargeonce.DefaultProvider,
			Capture:           chargeonce.CaptureAutomatic,
		}, a)

		got, err := s.GetAttempt(context.Background(), n.Key)
		require.NoError(t, err)
		require.Equal(t, a, got)
		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPaymentPending, o.Status)
		require.Equal(t, stored(base), o.UpdatedAt)
		require.Equal(t, o, returned, "the order returned is the order as stored")
	})
}

func TestStore_AnotherCardWhileOpenIsAConflict(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		open, _ := checkout(t, s, order.ID, card("visa"), base)

		a, d := checkout(t, s, order.ID, card("mastercard"), base.Add(time.Second))
		require.Equal(t, store.DecisionConflict, d)
		require.Equal(t, open.Key, a.Key, "the conflict names the open attempt")

		_, attempts := getOrder(t, s, order.ID)
		require.Equal(t, []string{open.Key}, keys(attempts), "nothing is inserted")
	})
}

// TestStore_SameCardAfterASettledAttemptGetsANewKey: an attempt that charged
// nothing returns its order to placed, and the next checkout, even with the
// same card, starts a new attempt under a new key.
func TestStore_SameCardAfterASettledAttemptGetsANewKey(t *testing.T) {
	tests := []struct {
		status    chargeonce.AttemptStatus
		paymentID string
	}{
		{chargeonce.AttemptDeclined, "ch_declined"},
		{chargeonce.AttemptAbandoned, ""},
		{chargeonce.AttemptNotProcessed, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, dsn string) {
				s := openStore(t, dsn)
				order := newOrder(t, s)
				first, _ := checkout(t, s, order.ID, card("visa"), base)
				require.True(t, settle(t, s, first.Key, tt.status, tt.paymentID))

				o, attempts := getOrder(t, s, order.ID)
				require.Equal(t, chargeonce.OrderPlaced, o.Status, "the customer may pay again")
				require.Empty(t, o.ProviderPaymentID)
				require.Equal(t, tt.status, attempts[0].Status)
				require.Equal(t, tt.paymentID, attempts[0].ProviderPaymentID)

				second, d := checkout(t, s, order.ID, card("visa"), base.Add(2*time.Minute))
				require.Equal(t, store.DecisionCreated, d)
				require.NotEqual(t, first.Key, second.Key)

				o, attempts = getOrder(t, s, order.ID)
				require.Equal(t, chargeonce.OrderPaymentPending, o.Status)
				require.Equal(t, []string{first.Key, second.Key}, keys(attempts), "oldest first")
				require.Equal(t, tt.status, attempts[0].Status)
				require.Equal(t, chargeonce.AttemptOpen, attempts[1].Status)
			})
		})
	}
}

func TestStore_TerminalStatusIsNeverOverwritten(t *testing.T) {
	later := []struct {
		status    chargeonce.AttemptStatus
		paymentID string
	}{
		{chargeonce.AttemptDeclined, ""},
		{chargeonce.AttemptAbandoned, ""},
		{chargeonce.AttemptFailed, ""},
		{chargeonce.AttemptNotProcessed, ""},
		{chargeonce.AttemptSucceeded, "ch_second"},
	}
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		a, _ := checkout(t, s, order.ID, card("visa"), base)
		first, err := s.SettleAttempt(context.Background(), a.Key, chargeonce.AttemptSucceeded, "ch_first", base.Add(time.Minute))
		require.NoError(t, err)
		require.Equal(t, store.Settlement{Changed: true, OrderPaidBy: "ch_first"}, first, "the settlement tells that its charge paid the order")
		paidOrder, settled := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPaid, paidOrder.Status)
		require.Equal(t, "ch_first", paidOrder.ProviderPaymentID)

		for _, l := range later {
			again, err := s.SettleAttempt(context.Background(), a.Key, l.status, l.paymentID, base.Add(time.Hour))
			require.NoError(t, err)
			require.Equal(t, store.Settlement{OrderPaidBy: "ch_first"}, again, "settling a succeeded attempt as %s", l.status)

			o, attempts := getOrder(t, s, order.ID)
			require.Equal(t, paidOrder, o, "the order stays paid after %s", l.status)
			require.Equal(t, settled, attempts, "the attempt is unchanged after %s", l.status)
		}
	})
}

func TestStore_PaidOrderIsAlreadyPaid(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		a, _ := checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, a.Key, chargeonce.AttemptSucceeded, "ch_1"))

		for _, c := range []string{"visa", "mastercard"} {
			got, d := checkout(t, s, order.ID, card(c), base.Add(time.Hour))
			require.Equal(t, store.DecisionAlreadyPaid, d, "card %s", c)
			require.Equal(t, a.Key, got.Key, "the succeeded attempt is returned")
			require.Equal(t, "ch_1", got.ProviderPaymentID)
		}
		_, attempts := getOrder(t, s, order.ID)
		require.Len(t, attempts, 1)
	})
}

func TestStore_FailedAttemptNeedsReview(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		a, _ := checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, a.Key, chargeonce.AttemptFailed, ""))

		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPaymentPending, o.Status, "a failed attempt may have charged; the order waits for a human")

		for _, c := range []string{"visa", "mastercard"} {
			got, d := checkout(t, s, order.ID, card(c), base.Add(time.Hour))
			require.Equal(t, store.DecisionNeedsReview, d, "card %s", c)
			require.Equal(t, a.Key, got.Key)
		}
		_, attempts := getOrder(t, s, order.ID)
		require.Len(t, attempts, 1)
	})
}

func TestStore_KeyOfAnotherAttemptIsAConflict(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		first, second := newOrder(t, s), newOrder(t, s)
		n := newAttempt(t, first.ID, card("visa"), base)
		_, _, _, err := s.GetOrStartAttempt(context.Background(), n)
		require.NoError(t, err)

		n.OrderID = second.ID
		_, _, _, err = s.GetOrStartAttempt(context.Background(), n)
		require.ErrorIs(t, err, store.ErrConflict)

		o, attempts := getOrder(t, s, second.ID)
		require.Equal(t, chargeonce.OrderPlaced, o.Status, "a refused checkout changes nothing")
		require.Empty(t, attempts)
	})
}

func TestStore_OrderNumbersStartAt1001(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		require.Equal(t, int64(1001), newOrder(t, s).ID)
		require.Equal(t, int64(1002), newOrder(t, s).ID)
	})
}

func TestStore_CreateOrderRoundTrips(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		before := time.Now().Add(-time.Second)
		kwd := chargeonce.Money{Minor: 12345, Currency: "KWD"}
		o, err := s.CreateOrder(context.Background(), kwd, "Tea, 3 kg — ünïcode")
		require.NoError(t, err)
		require.Equal(t, kwd, o.Amount)
		require.Equal(t, chargeonce.OrderPlaced, o.Status)
		require.Empty(t, o.ProviderPaymentID)
		require.WithinRange(t, o.CreatedAt, before, time.Now().Add(time.Second))
		require.Equal(t, o.CreatedAt, o.UpdatedAt)

		got, attempts := getOrder(t, s, o.ID)
		require.Equal(t, o, got)
		require.Empty(t, attempts)
	})
}

func TestStore_BadInputIsRefusedAndChangesNothing(t *testing.T) {
	cases := []struct {
		name   string
		change func(n *store.NewAttempt)
	}{
		{"non-positive order", func(n *store.NewAttempt) { n.OrderID = 0 }},
		{"upper-case card hash", func(n *store.NewAttempt) { n.CardHash = "AB" + n.CardHash[2:] }},
		{"short card hash", func(n *store.NewAttempt) { n.CardHash = n.CardHash[1:] }},
		{"card token instead of its hash", func(n *store.NewAttempt) { n.CardHash = "tok_visa" }},
		{"key not a UUID", func(n *store.NewAttempt) { n.Key = "retry-1" }},
		{"upper-case key", func(n *store.NewAttempt) { n.Key = "0190B2C4-5E6F-7A8B-9C0D-1E2F3A4B5C6D" }},
		{"bad reference prefix", func(n *store.NewAttempt) { n.ReferencePrefix = "Book-Store" }},
		{"empty reference prefix", func(n *store.NewAttempt) { n.ReferencePrefix = "" }},
		{"no creation time", func(n *store.NewAttempt) { n.Now = time.Time{} }},
		{"zero abandon-after", func(n *store.NewAttempt) { n.AbandonAfter = 0 }},
		{"negative abandon-after", func(n *store.NewAttempt) { n.AbandonAfter = -time.Minute }},
	}
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		order := newOrder(t, s)
		for _, c := range cases {
			n := newAttempt(t, order.ID, card("visa"), base)
			c.change(&n)
			_, _, _, err := s.GetOrStartAttempt(ctx, n)
			require.Error(t, err, c.name)
		}

		for _, m := range []chargeonce.Money{{Minor: 0, Currency: "TRY"}, {Minor: -5, Currency: "TRY"}, {Minor: 100, Currency: "try"}, {Minor: 100, Currency: "XAU"}} {
			_, err := s.CreateOrder(ctx, m, "x")
			require.Error(t, err, "amount %+v", m)
		}
		_, err := s.CreateOrder(ctx, try, "\xff\xfe")
		require.Error(t, err, "description that is not UTF-8")

		o, attempts := getOrder(t, s, order.ID)
		require.Equal(t, order, o)
		require.Empty(t, attempts)
		require.Equal(t, int64(1), rawCount(t, dsn, `SELECT count(*) FROM orders`))

		a, _ := checkout(t, s, order.ID, card("visa"), base)
		for name, settle := range map[string]func() (store.Settlement, error){
			"open is not terminal": func() (store.Settlement, error) { return s.SettleAttempt(ctx, a.Key, chargeonce.AttemptOpen, "", base) },
			"unknown status":       func() (store.Settlement, error) { return s.SettleAttempt(ctx, a.Key, "refunded", "", base) },
			"succeeded without payment ID": func() (store.Settlement, error) {
				return s.SettleAttempt(ctx, a.Key, chargeonce.AttemptSucceeded, "", base)
			},
			"no time": func() (store.Settlement, error) {
				return s.SettleAttempt(ctx, a.Key, chargeonce.AttemptDeclined, "", time.Time{})
			},
		} {
			settled, err := settle()
			require.Error(t, err, name)
			require.Zero(t, settled, name)
		}
		got, err := s.GetAttempt(ctx, a.Key)
		require.NoError(t, err)
		require.Equal(t, a, got)
	})
}

// Order reads the row that GetOrder reads, without the attempts.
func TestStore_OrderIsGetOrdersOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		checkout(t, s, order.ID, card("visa"), base)
		want, attempts := getOrder(t, s, order.ID)
		require.Len(t, attempts, 1)

		got, err := s.Order(context.Background(), order.ID)

		require.NoError(t, err)
		require.Equal(t, want, got)
	})
}

func TestStore_UnknownOrderOrAttemptIsNotFound(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		unknown := newKey(t)

		_, _, err := s.GetOrder(ctx, 999999)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.Order(ctx, 999999)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, _, _, err = s.GetOrStartAttempt(ctx, newAttempt(t, 999999, card("visa"), base))
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.GetAttempt(ctx, unknown)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.SettleAttempt(ctx, unknown, chargeonce.AttemptDeclined, "", base)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorIs(t, s.MarkChecked(ctx, unknown, base), store.ErrNotFound)
		require.ErrorIs(t, s.MarkWorkflowStarted(ctx, unknown), store.ErrNotFound)
		charges, err := s.Requests(chargeonce.OperationCharge)
		require.NoError(t, err)
		_, err = charges.Begin(ctx, unknown, base)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestStore_RequestLogRoundTripsInOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		order := newOrder(t, s)
		a, _ := checkout(t, s, order.ID, card("visa"), base)
		other, _ := checkout(t, s, newOrder(t, s).ID, card("visa"), base)

		want := []chargeonce.ProviderRequest{
			{Key: a.Key, At: stored(base.Add(time.Millisecond)), StatusCode: 0, Outcome: "timeout", Duration: 3*time.Second + 17*time.Microsecond},
			{Key: a.Key, At: stored(base.Add(4 * time.Second)), StatusCode: 409, Outcome: "in_flight", Duration: 11234 * time.Microsecond},
			{Key: a.Key, At: stored(base.Add(5 * time.Second)), StatusCode: 201, Outcome: "approved", Replayed: true, Duration: 9 * time.Millisecond},
		}
		// Logged out of order, as concurrent activities may: the log is
		// ordered by when each request was sent.
		for j, i := range []int{1, 0, 2} {
			require.Equal(t, []int{1, 1, 3}[j], logRequest(t, s, chargeonce.OperationCharge, want[i]), "a request's number is its place, by the time it was sent, among those logged so far")
		}
		require.Equal(t, 1, logRequest(t, s, chargeonce.OperationCharge, chargeonce.ProviderRequest{Key: other.Key, At: base, StatusCode: 402, Outcome: "declined"}), "each key counts its own requests")

		got, err := s.GetAttempt(ctx, a.Key)
		require.NoError(t, err)
		require.Equal(t, want, got.Requests)
		_, attempts := getOrder(t, s, order.ID)
		require.Equal(t, want, attempts[0].Requests)

		charges, err := s.Requests(chargeonce.OperationCharge)
		require.NoError(t, err)
		at := base.Add(time.Hour)
		listed, err := charges.Begin(ctx, a.Key, at)
		require.NoError(t, err)
		for name, r := range map[string]chargeonce.ProviderRequest{
			"status 600":      {Key: a.Key, At: at, StatusCode: 600, Outcome: "approved"},
			"no outcome":      {Key: a.Key, At: at, StatusCode: 201},
			"negative":        {Key: a.Key, At: at, StatusCode: 201, Outcome: "approved", Duration: -time.Second},
			"status code 99":  {Key: a.Key, At: at, StatusCode: 99, Outcome: "approved"},
			"negative status": {Key: a.Key, At: at, StatusCode: -1, Outcome: "approved"},
			"another time":    {Key: a.Key, At: base, StatusCode: 201, Outcome: "approved"},
			"another key":     {Key: other.Key, At: at, StatusCode: 201, Outcome: "approved"},
		} {
			require.Error(t, charges.End(ctx, listed, r), name)
		}
		for name, key := range map[string]string{"key not a UUID": "k", "no key": ""} {
			_, err := charges.Begin(ctx, key, at)
			require.Error(t, err, name)
		}
		_, err = charges.Begin(ctx, a.Key, time.Time{})
		require.Error(t, err, "no time")
		require.NoError(t, charges.Withdraw(ctx, listed))
		got, err = s.GetAttempt(ctx, a.Key)
		require.NoError(t, err)
		require.Equal(t, want, got.Requests, "refused ends change nothing, and a withdrawn request leaves the log")
		require.ErrorIs(t, charges.Withdraw(ctx, listed), store.ErrNotFound)
		require.ErrorIs(t, charges.End(ctx, listed, chargeonce.ProviderRequest{Key: a.Key, At: at, StatusCode: 201, Outcome: "approved"}), store.ErrNotFound)
	})
}

func TestStore_RequestLogListsRequestsBeforeTheyAreSent(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		a, _ := checkout(t, s, newOrder(t, s).ID, card("visa"), base)
		other, _ := checkout(t, s, newOrder(t, s).ID, card("visa"), base)
		charges, err := s.Requests(chargeonce.OperationCharge)
		require.NoError(t, err)

		lost, err := charges.Begin(ctx, a.Key, base)
		require.NoError(t, err)
		require.Equal(t, 1, lost.N)
		got, err := s.GetAttempt(ctx, a.Key)
		require.NoError(t, err)
		require.Equal(t, []chargeonce.ProviderRequest{{Key: a.Key, At: stored(base), Outcome: chargeonce.RequestUnanswered}}, got.Requests,
			"a request is listed, unanswered, before it goes out")

		next, err := charges.Begin(ctx, a.Key, base.Add(time.Second))
		require.NoError(t, err)
		require.Equal(t, 2, next.N)
		n, err := charges.Unanswered(ctx, next)
		require.NoError(t, err)
		require.Equal(t, 1, n, "the request before it was never answered")
		n, err = charges.Unanswered(ctx, lost)
		require.NoError(t, err)
		require.Equal(t, 1, n, "nor, yet, the one after it")
		require.NoError(t, charges.End(ctx, next, chargeonce.ProviderRequest{Key: a.Key, At: base.Add(time.Second), StatusCode: 503, Outcome: "unavailable"}))
		n, err = charges.Unanswered(ctx, lost)
		require.NoError(t, err)
		require.Zero(t, n, "an answered request is not unanswered")

		elsewhere, err := charges.Begin(ctx, other.Key, base)
		require.NoError(t, err)
		n, err = charges.Unanswered(ctx, elsewhere)
		require.NoError(t, err)
		require.Zero(t, n, "each key has its own requests")

		_, err = s.Requests("capture-all")
		require.Error(t, err, "an operation without a request log")
	})
}

func TestStore_TimesRoundTripExactly(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		order := newOrder(t, s)
		n := newAttempt(t, order.ID, card("visa"), base)
		n.AbandonAfter = 90*time.Minute + 123456789*time.Nanosecond
		_, a, _, err := s.GetOrStartAttempt(ctx, n)
		require.NoError(t, err)
		require.Equal(t, stored(base), a.CreatedAt)
		require.Equal(t, stored(base.Add(n.AbandonAfter)), a.AbandonAt)
		require.Equal(t, time.UTC, a.CreatedAt.Location())

		checked := time.Date(2026, 3, 14, 16, 0, 0, 999999999, time.FixedZone("PST", -8*60*60))
		require.NoError(t, s.MarkChecked(ctx, a.Key, checked))
		got, err := s.GetAttempt(ctx, a.Key)
		require.NoError(t, err)
		require.NotNil(t, got.LastCheckedAt)
		require.Equal(t, stored(checked), *got.LastCheckedAt)
		require.Equal(t, a.CreatedAt, got.CreatedAt)
		require.Equal(t, a.AbandonAt, got.AbandonAt)

		// A second check replaces the first.
		require.NoError(t, s.MarkChecked(ctx, a.Key, checked.Add(time.Minute)))
		got, err = s.GetAttempt(ctx, a.Key)
		require.NoError(t, err)
		require.Equal(t, stored(checked.Add(time.Minute)), *got.LastCheckedAt)
	})
}

func TestStore_OutboxListsUnstartedAttemptsUntilMarked(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		var attempts []store.Attempt
		for i := range 4 {
			a, _ := checkout(t, s, newOrder(t, s).ID, card("visa"), base.Add(time.Duration(i)*time.Minute))
			attempts = append(attempts, a)
		}
		settled, started, young := attempts[0], attempts[1], attempts[3]
		require.True(t, settle(t, s, settled.Key, chargeonce.AttemptDeclined, ""))
		require.NoError(t, s.MarkWorkflowStarted(ctx, started.Key))
		require.NoError(t, s.MarkWorkflowStarted(ctx, started.Key), "marking twice is harmless")

		got, err := s.UnstartedAttempts(ctx, young.CreatedAt, 10)
		require.NoError(t, err)
		require.Equal(t, []store.Attempt{attempts[2]}, got, "neither settled, started nor young attempts")

		got, err = s.UnstartedAttempts(ctx, base.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, []string{attempts[2].Key, young.Key}, keys(got), "oldest first")
		got, err = s.UnstartedAttempts(ctx, base.Add(time.Hour), 1)
		require.NoError(t, err)
		require.Equal(t, []string{attempts[2].Key}, keys(got), "at most limit")

		require.NoError(t, s.MarkWorkflowStarted(ctx, attempts[2].Key))
		require.NoError(t, s.MarkWorkflowStarted(ctx, young.Key))
		got, err = s.UnstartedAttempts(ctx, base.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Empty(t, got)
		a, err := s.GetAttempt(ctx, young.Key)
		require.NoError(t, err)
		require.True(t, a.WorkflowStarted)

		for _, limit := range []int{0, -1, 1001} {
			_, err := s.UnstartedAttempts(ctx, base, limit)
			require.Error(t, err, "limit %d", limit)
		}
	})
}

func TestStore_OpenAttemptStats(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		open, oldest, err := s.OpenAttemptStats(ctx)
		require.NoError(t, err)
		require.Zero(t, open)
		require.True(t, oldest.IsZero())

		first, _ := checkout(t, s, newOrder(t, s).ID, card("visa"), base)
		second, _ := checkout(t, s, newOrder(t, s).ID, card("visa"), base.Add(time.Minute))
		open, oldest, err = s.OpenAttemptStats(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, open)
		require.Equal(t, first.CreatedAt, oldest)

		require.True(t, settle(t, s, first.Key, chargeonce.AttemptSucceeded, "ch_1"))
		open, oldest, err = s.OpenAttemptStats(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, open)
		require.Equal(t, second.CreatedAt, oldest)
	})
}

func TestStore_CorruptRowIsAnErrorNotAWrongAmount(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		order := newOrder(t, s)
		a, _ := checkout(t, s, order.ID, card("visa"), base)

		rawExec(t, dsn, `UPDATE payment_attempts SET currency = 'ZZZ' WHERE idempotency_key = $1`, a.Key)
		_, err := s.GetAttempt(ctx, a.Key)
		require.ErrorIs(t, err, chargeonce.ErrInvalidCurrency)
		require.ErrorContains(t, err, "corrupt")
		_, _, _, err = s.GetOrStartAttempt(ctx, newAttempt(t, order.ID, card("visa"), base))
		require.ErrorIs(t, err, chargeonce.ErrInvalidCurrency, "a checkout never decides on a corrupt attempt")

		rawExec(t, dsn, `UPDATE orders SET currency = 'ZZZ' WHERE id = $1`, order.ID)
		_, _, err = s.GetOrder(ctx, order.ID)
		require.ErrorIs(t, err, chargeonce.ErrInvalidCurrency)
		require.ErrorContains(t, err, "corrupt")
	})
}

func TestStore_MigrationIsIdempotent(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		first, err := store.Open(context.Background(), dsn)
		require.NoError(t, err)
		order := newOrder(t, first)
		require.NoError(t, first.Close())

		again := openStore(t, dsn)
		o, _ := getOrder(t, again, order.ID)
		require.Equal(t, order, o, "reopening keeps the data")
		require.Equal(t, int64(migrations), rawCount(t, dsn, `SELECT count(*) FROM schema_migrations`))
	})
}

func TestStore_ConcurrentOpensOfAFreshDatabaseBothSucceed(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		const opens = 4
		stores := make([]store.Store, opens)
		errs := make([]error, opens)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range opens {
			wg.Go(func() {
				<-start
				stores[i], errs[i] = store.Open(context.Background(), dsn)
			})
		}
		close(start)
		wg.Wait()
		for i := range opens {
			require.NoError(t, errs[i])
			t.Cleanup(func() { require.NoError(t, stores[i].Close()) })
		}
		for _, s := range stores {
			newOrder(t, s)
		}
		require.Equal(t, int64(migrations), rawCount(t, dsn, `SELECT count(*) FROM schema_migrations`))
		require.Equal(t, int64(opens), rawCount(t, dsn, `SELECT count(*) FROM orders`))
	})
}

func TestStore_SettlingNeverUnpaysAPaidOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		a, _ := checkout(t, s, order.ID, card("visa"), base)
		// An operator marked the order paid by hand while its attempt was
		// still open.
		rawExec(t, dsn, `UPDATE orders SET status = 'paid', provider_payment_id = 'ch_by_hand' WHERE id = $1`, order.ID)

		require.True(t, settle(t, s, a.Key, chargeonce.AttemptDeclined, ""))

		o, attempts := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPaid, o.Status)
		require.Equal(t, "ch_by_hand", o.ProviderPaymentID)
		require.Equal(t, chargeonce.AttemptDeclined, attempts[0].Status)
	})
}

func TestStore_PublishedTimingIsKeptUntilReplaced(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		_, err := s.PaymentTiming(ctx)
		require.ErrorIs(t, err, store.ErrNotFound, "nothing is published before a worker starts")

		first, second := []byte(`{"abandonAfter":1800000000000}`), []byte(`{"abandonAfter":1200000000000}`)
		before := time.Now()
		published, err := s.PublishTiming(ctx, first, false)
		require.NoError(t, err)
		require.Equal(t, first, published.Timing)
		require.WithinRange(t, published.PublishedAt, stored(before), time.Now())
		got, err := s.PaymentTiming(ctx)
		require.NoError(t, err)
		require.Equal(t, published, got)

		kept, err := s.PublishTiming(ctx, second, false)
		require.NoError(t, err)
		require.Equal(t, published, kept, "another timing does not replace the published one")

		replaced, err := s.PublishTiming(ctx, second, true)
		require.NoError(t, err)
		require.Equal(t, second, replaced.Timing)
		require.False(t, replaced.PublishedAt.Before(published.PublishedAt))
		got, err = s.PaymentTiming(ctx)
		require.NoError(t, err)
		require.Equal(t, replaced, got)
		require.Equal(t, int64(1), rawCount(t, dsn, `SELECT count(*) FROM payment_timing`))

		for name, bad := range map[string][]byte{"empty": nil, "not JSON": []byte("abandon-after 30m"), "not UTF-8": []byte("\"\xff\"")} {
			_, err := s.PublishTiming(ctx, bad, true)
			require.ErrorContains(t, err, "not JSON text", name)
		}
		got, err = s.PaymentTiming(ctx)
		require.NoError(t, err)
		require.Equal(t, replaced, got, "a refused timing changes nothing")
	})
}

func TestStore_ConcurrentFirstPublicationsAgreeOnOneTiming(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		const publishers = 8
		results := make([]store.PublishedTiming, publishers)
		errs := make([]error, publishers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range publishers {
			wg.Go(func() {
				<-start
				results[i], errs[i] = s.PublishTiming(context.Background(), []byte(fmt.Sprintf(`{"worker":%d}`, i)), false)
			})
		}
		close(start)
		wg.Wait()

		for i := range publishers {
			require.NoError(t, errs[i])
			require.Equal(t, results[0], results[i], "every publisher gets the one timing stored")
		}
		require.Regexp(t, `^\{"worker":[0-7]\}$`, string(results[0].Timing))
		require.Equal(t, int64(1), rawCount(t, dsn, `SELECT count(*) FROM payment_timing`))
	})
}

// schemaV2 is what TestStore_MigrationAdmitsNotProcessedAndKeepsTheData
// needs of each dialect to build a database as version 2 of the schema left
// it, and to inspect the tables that version 3 rebuilds.
var schemaV2 = map[string]struct {
	migrationsTable string
	time            func(time.Time) any
	// indexes counts the indexes of 0001_init.sql; foreignKeys counts the
	// references from provider_requests to payment_attempts and from
	// payment_attempts to orders.
	indexes, foreignKeys string
}{
	"sqlite": {
		migrationsTable: `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`,
		time:            func(t time.Time) any { return t.UnixMicro() },
		indexes: `SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name IN
			('payment_attempts_one_open_per_order', 'payment_attempts_by_order', 'payment_attempts_unstarted', 'provider_requests_by_key')`,
		foreignKeys: `SELECT (SELECT count(*) FROM pragma_foreign_key_list('provider_requests') WHERE "table" = 'payment_attempts')
			+ (SELECT count(*) FROM pragma_foreign_key_list('payment_attempts') WHERE "table" = 'orders')`,
	},
	"postgres": {
		migrationsTable: `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`,
		time:            func(t time.Time) any { return t },
		indexes: `SELECT count(*) FROM pg_indexes WHERE indexname IN
			('payment_attempts_one_open_per_order', 'payment_attempts_by_order', 'payment_attempts_unstarted', 'provider_requests_by_key')`,
		foreignKeys: `SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND
			((conrelid = 'provider_requests'::regclass AND confrelid = 'payment_attempts'::regclass) OR
			 (conrelid = 'payment_attempts'::regclass AND confrelid = 'orders'::regclass))`,
	},
}

// schemaAt builds, in the empty database dsn, the schema as the released
// migrations up to version left it, recorded as applied, and returns its
// dialect's name and the value its time columns hold for base.
func schemaAt(t *testing.T, dsn string, version int) (dialect string, at any) {
	t.Helper()
	dialect = "postgres"
	if strings.HasPrefix(dsn, "sqlite:") {
		dialect = "sqlite"
	}
	at = schemaV2[dialect].time(base)
	rawExec(t, dsn, schemaV2[dialect].migrationsTable)
	entries, err := os.ReadDir(filepath.Join("migrations", dialect))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(entries), version)
	for i, e := range entries[:version] {
		body, err := os.ReadFile(filepath.Join("migrations", dialect, e.Name()))
		require.NoError(t, err)
		rawExec(t, dsn, string(body))
		rawExec(t, dsn, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`, i+1, e.Name(), at)
	}
	return dialect, at
}

// TestStore_MigrationAdmitsNotProcessedAndKeepsTheData migrates a database
// of version 2, with an open and a declined attempt and their request logs,
// to the current schema.
func TestStore_MigrationAdmitsNotProcessedAndKeepsTheData(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		dialect, at := schemaAt(t, dsn, 2)
		d := schemaV2[dialect]
		rawExec(t, dsn, `INSERT INTO orders (amount_minor, currency, description, status, created_at, updated_at) VALUES (54890, 'TRY', 'Collected works', 'payment_pending', $1, $1)`, at)
		const orderID = 1001
		declined, open := newKey(t), newKey(t)
		for _, a := range []struct {
			key, status string
			paymentID   any
			settled     any
		}{
			{declined, "declined", "ch_declined", at},
			{open, "open", nil, nil},
		} {
			rawExec(t, dsn, `INSERT INTO payment_attempts (idempotency_key, order_id, amount_minor, currency, card_hash, merchant_reference,
					status, provider_payment_id, workflow_started, created_at, abandon_at, settled_at)
				VALUES ($1, $2, 54890, 'TRY', $3, $4, $5, $6, true, $7, $7, $8)`,
				a.key, orderID, card("visa"), chargeonce.MerchantReference("bookstore", orderID, a.key), a.status, a.paymentID, at, a.settled)
			rawExec(t, dsn, `INSERT INTO provider_requests (idempotency_key, at, status_code, outcome, replayed, duration_us) VALUES ($1, $2, 503, 'unavailable', false, 1500)`,
				a.key, at)
		}

		s := openStore(t, dsn)

		require.Equal(t, int64(migrations), rawCount(t, dsn, `SELECT count(*) FROM schema_migrations`))
		require.Equal(t, int64(4), rawCount(t, dsn, d.indexes), "the indexes are back")
		require.Equal(t, int64(2), rawCount(t, dsn, d.foreignKeys), "the foreign keys are kept")
		o, attempts := getOrder(t, s, orderID)
		require.Equal(t, chargeonce.OrderPaymentPending, o.Status)
		require.Equal(t, []string{declined, open}, keys(attempts))
		require.Equal(t, chargeonce.AttemptDeclined, attempts[0].Status)
		require.Equal(t, "ch_declined", attempts[0].ProviderPaymentID)
		for _, a := range attempts {
			require.Equal(t, stored(base), a.CreatedAt)
			require.Equal(t, []chargeonce.ProviderRequest{{Key: a.Key, At: stored(base), StatusCode: 503, Outcome: "unavailable", Duration: 1500 * time.Microsecond}}, a.Requests)
		}

		require.True(t, settle(t, s, open, chargeonce.AttemptNotProcessed, ""))
		o, attempts = getOrder(t, s, orderID)
		require.Equal(t, chargeonce.OrderPlaced, o.Status)
		require.Equal(t, chargeonce.AttemptNotProcessed, attempts[1].Status)
		_, d2 := checkout(t, s, orderID, card("visa"), base.Add(time.Hour))
		require.Equal(t, store.DecisionCreated, d2, "the one-open-attempt index admits the next attempt")
	})
}

// A card hash stored before hashes were keyed is the token's plain SHA-256.
// RekeyCardHashes turns it into the keyed hash of the same card, without
// the token, marks the row done, and leaves it alone when run again: a
// checkout with the card then finds its open attempt.
func TestStore_RekeyCardHashesKeysEveryLegacyHashOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		// As a process before keyed hashes wrote it: the migration gave
		// the rows it found card_hash_keyed false.
		legacy, _ := checkout(t, s, order.ID, chargeonce.LegacyCardHash("tok_visa"), base)
		key := legacy.Key
		rawExec(t, dsn, `UPDATE payment_attempts SET card_hash_keyed = false WHERE idempotency_key = $1`, key)
		before, err := s.GetAttempt(context.Background(), key)
		require.NoError(t, err)
		require.False(t, before.CardHashKeyed)

		hasher, err := chargeonce.ParseCardHashKey(chargeonce.NewCardHashKey())
		require.NoError(t, err)
		n, err := s.RekeyCardHashes(context.Background(), hasher.Rekey)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		after, err := s.GetAttempt(context.Background(), key)
		require.NoError(t, err)
		require.True(t, after.CardHashKeyed)
		require.Equal(t, hasher.Hash("tok_visa"), after.CardHash)

		n, err = s.RekeyCardHashes(context.Background(), func(string) (string, error) {
			return "", errors.New("a done row is never re-keyed again")
		})
		require.NoError(t, err)
		require.Zero(t, n)

		a, d := checkout(t, s, order.ID, hasher.Hash("tok_visa"), base)
		require.Equal(t, store.DecisionReused, d)
		require.Equal(t, key, a.Key)
	})
}
