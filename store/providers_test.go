package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/store"
)

// TestStore_MigrationNamesEveryAttemptAndRefundAfterTheDefaultProvider
// builds a database of version 10 with a paid order, its attempt and a
// refund of its charge, migrates it to the current schema, and reads the
// name of the provider each was sent to: the one provider there was,
// chargeonce.DefaultProvider.
func TestStore_MigrationNamesEveryAttemptAndRefundAfterTheDefaultProvider(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		_, at := schemaAt(t, dsn, 10)
		rawExec(t, dsn, `INSERT INTO orders (amount_minor, currency, description, status, provider_payment_id, created_at, updated_at)
			VALUES (54890, 'TRY', 'Collected works', 'paid', 'ch_paid', $1, $1)`, at)
		attemptKey, refundKey := newKey(t), newKey(t)
		rawExec(t, dsn, `INSERT INTO payment_attempts (idempotency_key, order_id, amount_minor, currency, card_hash, card_hash_keyed,
				merchant_reference, status, provider_payment_id, workflow_started, created_at, abandon_at, settled_at)
			VALUES ($1, 1001, 54890, 'TRY', $2, true, $3, 'succeeded', 'ch_paid', true, $4, $4, $4)`,
			attemptKey, card("visa"), chargeonce.MerchantReference("bookstore", 1001, attemptKey), at)
		rawExec(t, dsn, `INSERT INTO refunds (idempotency_key, order_id, charge_id, amount_minor, currency, reason, origin,
				merchant_reference, status, workflow_started, created_at)
			VALUES ($1, 1001, 'ch_paid', 1000, 'TRY', 'damaged in transit', 'merchant', $2, 'pending', true, $3)`,
			refundKey, chargeonce.RefundReference("bookstore", refundKey), at)

		s := openStore(t, dsn)

		require.Equal(t, int64(migrations), rawCount(t, dsn, `SELECT count(*) FROM schema_migrations`))
		a, err := s.GetAttempt(context.Background(), attemptKey)
		require.NoError(t, err)
		require.Equal(t, chargeonce.DefaultProvider, a.Provider)
		f, err := s.GetRefund(context.Background(), refundKey)
		require.NoError(t, err)
		require.Equal(t, chargeonce.DefaultProvider, f.Provider)
	})
}

// New attempts and refunds keep the name of the provider they are sent to;
// the repair's refund of a late charge goes to the provider of the attempt
// that made the charge.
func TestStore_AttemptsAndRefundsKeepTheirProvidersName(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn)
		order, err := s.CreateOrder(ctx, chargeonce.Money{Minor: 54890, Currency: "TRY"}, "Collected works")
		require.NoError(t, err)
		n := newAttempt(t, order.ID, card("visa"), base)
		n.Provider = "stripe-eu"
		_, a, decision, err := s.GetOrStartAttempt(ctx, n)
		require.NoError(t, err)
		require.Equal(t, store.DecisionCreated, decision)
		require.Equal(t, "stripe-eu", a.Provider)
		_, err = s.SettleAttempt(ctx, a.Key, chargeonce.AttemptSucceeded, "ch_paid", base)
		require.NoError(t, err)

		f, _ := startRefund(t, s, newRefund(t, order.ID, 1000, "req-1"))
		require.Equal(t, "stripe-eu", f.Provider)
		got, err := s.GetRefund(ctx, f.Key)
		require.NoError(t, err)
		require.Equal(t, "stripe-eu", got.Provider)

		n.Provider = ""
		_, _, _, err = s.GetOrStartAttempt(ctx, n)
		require.ErrorContains(t, err, "provider name is empty")
	})
}

// The repair refunds a late charge at the provider that made it: the
// provider of its attempt, whatever the provider of the attempt that paid.
func TestStore_LateChargeIsRefundedAtTheProviderOfItsAttempt(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn)
		order := newOrder(t, s)
		n := newAttempt(t, order.ID, card("visa"), base)
		n.Provider = "stripe-eu"
		_, abandoned, _, err := s.GetOrStartAttempt(ctx, n)
		require.NoError(t, err)
		require.True(t, settle(t, s, abandoned.Key, chargeonce.AttemptAbandoned, ""))
		paying, _ := checkout(t, s, order.ID, card("visa"), base.Add(time.Minute))
		require.True(t, settle(t, s, paying.Key, chargeonce.AttemptSucceeded, "ch_paid"))

		d, f := recordLateCharge(t, s, lateCharge(t, abandoned.Key, "ch_late"))

		require.Equal(t, chargeonce.LateChargeRefunded, d)
		require.NotNil(t, f)
		require.Equal(t, "stripe-eu", f.Provider)
	})
}

// A provider's books are its own: the settlement's reads of one provider
// return its attempts and refunds alone, also where another provider used
// the same charge id, refund id or day.
func TestStore_SettlementReadsEachProvidersOwnBooks(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn)
		paidAt := func(provider string) (store.Order, store.ReportedAttempt) {
			order := newOrder(t, s)
			n := newAttempt(t, order.ID, card("visa"), base)
			n.Provider = provider
			_, a, _, err := s.GetOrStartAttempt(ctx, n)
			require.NoError(t, err)
			require.True(t, settle(t, s, a.Key, chargeonce.AttemptSucceeded, "ch_same"))
			return order, storedAttempt(t, s, a.Key)
		}
		refundedAt := func(provider string, order store.Order) store.Refund {
			// The refund names no provider of its own: a refund of an
			// order goes to the provider of the attempt that paid it,
			// also when another provider holds a charge of the same id.
			f, _ := startRefund(t, s, newRefund(t, order.ID, 100, ""))
			require.Equal(t, provider, f.Provider)
			require.True(t, settleRefund(t, s, f.Key, chargeonce.RefundSucceeded, "re_same"))
			got, err := s.GetRefund(ctx, f.Key)
			require.NoError(t, err)
			got.Requests = nil
			return got
		}
		day := base.Truncate(24 * time.Hour)
		for _, provider := range []string{chargeonce.DefaultProvider, "backup"} {
			order, attempt := paidAt(provider)
			refund := refundedAt(provider, order)
			t.Run(provider, func(t *testing.T) {
				attempts, err := s.SucceededAttempts(ctx, provider, day, day.AddDate(0, 0, 1), "", 10)
				require.NoError(t, err)
				require.Equal(t, []store.ReportedAttempt{attempt}, attempts)
				attempts, err = s.AttemptsByCharge(ctx, provider, []string{"ch_same"})
				require.NoError(t, err)
				require.Equal(t, []store.ReportedAttempt{attempt}, attempts)
				attempts, err = s.AttemptsByReference(ctx, provider, []string{attempt.MerchantReference})
				require.NoError(t, err)
				require.Equal(t, []store.ReportedAttempt{attempt}, attempts)

				refunds, err := s.SucceededRefunds(ctx, provider, day, day.AddDate(0, 0, 1), "", 10)
				require.NoError(t, err)
				require.Equal(t, []store.Refund{refund}, refunds)
				refunds, err = s.RefundsByProviderID(ctx, provider, []string{"re_same"})
				require.NoError(t, err)
				require.Equal(t, []store.Refund{refund}, refunds)
				refunds, err = s.RefundsByReference(ctx, provider, []string{refund.MerchantReference})
				require.NoError(t, err)
				require.Equal(t, []store.Refund{refund}, refunds)
			})
		}
		none, err := s.AttemptsByCharge(ctx, "elsewhere", []string{"ch_same"})
		require.NoError(t, err)
		require.Empty(t, none, "a provider with no attempts has no books")
	})
}

// The workers' providers are the set of the worker that published last; a
// bad set is refused and changes nothing.
func TestStore_WorkerProvidersAreTheSetOfTheLastWorker(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		_, err := s.WorkerProviders(ctx)
		require.ErrorIs(t, err, store.ErrNotFound, "nothing is published before a worker starts")

		require.NoError(t, s.PublishProviders(ctx, []string{"stripe-eu", "default"}))
		got, err := s.WorkerProviders(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"default", "stripe-eu"}, got)

		require.NoError(t, s.PublishProviders(ctx, []string{"backup"}))
		got, err = s.WorkerProviders(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"backup"}, got, "a later worker's set replaces the earlier one")

		require.ErrorContains(t, s.PublishProviders(ctx, nil), "no provider")
		require.ErrorContains(t, s.PublishProviders(ctx, []string{"backup", "Bad"}), `provider name "Bad"`)
		got, err = s.WorkerProviders(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"backup"}, got, "a refused set changes nothing")
	})
}
