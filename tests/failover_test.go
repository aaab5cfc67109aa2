package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/dev/stack"
	"chargeonce/fakeprovider"
	"chargeonce/verify/invariant"
)

// TestFailover_MovesAPaymentOnlyFromAnOutcomeThatChargedNothing runs the
// stack with a backup provider (stack.Config.Backup): a payment that the
// first provider certainly did not process is paid at the backup within
// the same checkout; a card's decline, or an unknown outcome, never moves.
func TestFailover_MovesAPaymentOnlyFromAnOutcomeThatChargedNothing(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: articleTiming(), Budget: articleBudget, Backup: &fakeprovider.Config{}})
	first := chargeonce.DefaultProvider

	t.Run("a provider that processes nothing", func(t *testing.T) {
		require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}))
		t.Cleanup(func() { require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal})) })
		id := s.createOrder(t, "25.00", "TRY")

		res := s.checkout(t, id, "tok_visa")

		require.Equal(t, http.StatusOK, res.status, "paid at the backup: %s", res.body)
		var paid paidBody
		require.NoError(t, json.Unmarshal(res.body, &paid))
		o := s.order(t, id)
		require.Len(t, o.Attempts, 2)
		require.Equal(t, first, o.Attempts[0].Provider)
		require.Equal(t, "not_processed", o.Attempts[0].Status)
		require.Len(t, o.Attempts[0].Requests, 1, "one refusal moves the payment on, with no retry at the first provider")
		require.Equal(t, "the providers in their order", *o.Attempts[0].RoutedBy)
		require.Equal(t, stack.BackupName, o.Attempts[1].Provider)
		require.Equal(t, "failover from default: not_processed", *o.Attempts[1].RoutedBy)
		require.Equal(t, "succeeded", o.Attempts[1].Status)
		require.NotEqual(t, o.Attempts[0].IdempotencyKey, o.Attempts[1].IdempotencyKey, "each provider's attempt has its own key")
		require.NotEqual(t, o.Attempts[0].MerchantReference, o.Attempts[1].MerchantReference)
		require.Empty(t, chargesOf(s.provider, o.Attempts[0].MerchantReference))
		charged := chargesOf(s.backup, o.Attempts[1].MerchantReference)
		require.Len(t, charged, 1)
		require.Equal(t, charged[0].ID, paid.ProviderPaymentID)
		require.Contains(t, s.metrics(t), `chargeonce_checkout_failovers_total{provider="default",reason="not_processed"} 1`)

		// The merchant's events name each attempt's provider, and why.
		got, err := s.send(http.MethodGet, fmt.Sprintf("/api/orders/%d/events", id), "")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, got.status, "%s", got.body)
		var events wire.EventList
		require.NoError(t, json.Unmarshal(got.body, &events))
		var named []string
		for _, ev := range events.Events {
			named = append(named, fmt.Sprintf("%s %s %s", ev.Type, ev.Data.Payment.Provider, *ev.Data.Payment.RoutedBy))
		}
		require.Equal(t, []string{"payment.not_processed default the providers in their order",
			"payment.succeeded backup failover from default: not_processed"}, named)
	})

	t.Run("a decline for the provider's own trouble", func(t *testing.T) {
		id := s.createOrder(t, "25.00", "TRY")

		res := s.checkout(t, id, "tok_chargeDeclinedIssuerNotAvailable")

		// The backup's fake declines the same test card for the same
		// reason, so the payment ends declined there: tried at both.
		require.Equal(t, http.StatusPaymentRequired, res.status, "%s", res.body)
		o := s.order(t, id)
		require.Len(t, o.Attempts, 2)
		require.Equal(t, []string{first, stack.BackupName}, []string{o.Attempts[0].Provider, o.Attempts[1].Provider})
		require.Contains(t, s.metrics(t), `chargeonce_checkout_failovers_total{provider="default",reason="provider_trouble"} 1`)
	})

	// Each provider's books are its own: each provider's report is
	// matched against the attempts sent to it alone, so the payment that
	// the backup took is neither awaited in the first provider's report
	// nor taken for one of its charges, and the backup's own report
	// balances it.
	t.Run("each provider's books", func(t *testing.T) {
		id := s.createOrder(t, "25.00", "TRY")
		require.Equal(t, http.StatusOK, s.checkout(t, id, "tok_visa").status)
		paid := s.order(t, id).Attempts[0]
		require.Equal(t, first, paid.Provider)
		date := paid.Requests[0].At.UTC().Format(time.DateOnly)

		run := s.runSettlement(t, date)

		require.Equal(t, first, run.Provider)
		require.Equal(t, "final", run.Status, "%+v", run)
		require.Zero(t, run.Awaiting, "the backup's charge is not the first provider's to report")
		require.Empty(t, run.ExceptionCounts)
		require.Positive(t, run.Matched)
		require.Equal(t, run.Lines, run.Matched)

		backup := s.runSettlementAt(t, stack.BackupName, date)

		require.Equal(t, stack.BackupName, backup.Provider)
		require.Equal(t, "final", backup.Status, "%+v", backup)
		require.Empty(t, backup.ExceptionCounts, "%+v", backup)
		require.Zero(t, backup.Awaiting)
		require.Positive(t, backup.Matched, "the payments that moved to the backup are in its report")
		require.Equal(t, backup.Lines, backup.Matched)
		again := s.runSettlement(t, date)
		require.Equal(t, run.Matched, again.Matched, "settling the backup's books leaves the first provider's as they were")

		res, err := s.send(http.MethodPost, "/api/settlements/"+date+"/run?provider=nowhere", "{}")
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, res.status, "%s", res.body)
		require.Contains(t, string(res.body), `payments are not routed to \"nowhere\"`)
	})

	// Neither a card's decline nor an unknown outcome ever moves a payment.
	for _, tt := range []struct {
		name, card string
		mode       fakeprovider.ModeName
		status     int
		attempt    string
	}{
		{"a card's decline", "tok_chargeDeclinedInsufficientFunds", fakeprovider.ModeNormal, http.StatusPaymentRequired, "declined"},
		{"an unknown outcome", "tok_visa", fakeprovider.ModeDrop, http.StatusAccepted, "open"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: tt.mode}))
			t.Cleanup(func() { require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal})) })
			id := s.createOrder(t, "25.00", "TRY")
			backupBefore := len(s.backup.ChargeRequests())

			res := s.checkout(t, id, tt.card)

			require.Equal(t, tt.status, res.status, "%s", res.body)
			o := s.order(t, id)
			require.Len(t, o.Attempts, 1, "the payment stays with the first provider")
			require.Equal(t, first, o.Attempts[0].Provider)
			require.Equal(t, tt.attempt, o.Attempts[0].Status)
			require.Len(t, s.backup.ChargeRequests(), backupBefore, "nothing was sent to the backup")
		})
	}

	// The invariant checker reads both providers: no order keeps more than
	// one charge across them, and every charge and key is at the provider
	// its attempt went to. A charge at the backup for an order the first
	// provider paid breaks both promises.
	t.Run("the promises across both providers", func(t *testing.T) {
		check := func() invariant.Report {
			report, err := invariant.Check(t.Context(), invariant.Config{Store: s.store, Temporal: s.temporal, Interval: checkInterval,
				Provider: invariant.InProcess{Provider: s.provider},
				Others:   map[string]invariant.ProviderSource{stack.BackupName: invariant.InProcess{Provider: s.backup}}}, nil)
			require.NoError(t, err)
			return report
		}
		// The unknown outcome's workflow may still send its charge, so the
		// count the checker read lies between two counts taken around it.
		charges := func() int { return len(s.provider.Charges()) + len(s.backup.Charges()) }
		before := charges()
		clean := check()
		require.True(t, clean.OK(), "%s", clean)
		require.GreaterOrEqual(t, clean.Charges, before, "both providers were read")
		require.LessOrEqual(t, clean.Charges, charges())

		id := s.createOrder(t, "25.00", "TRY")
		require.Equal(t, http.StatusOK, s.checkout(t, id, "tok_visa").status)
		paid := s.order(t, id).Attempts[0]
		require.Equal(t, first, paid.Provider)
		// The attempt's key and body, sent to the backup as well.
		require.Equal(t, http.StatusCreated, postCharge(s.stack.BackupURL(), `"`+paid.IdempotencyKey+`"`,
			fmt.Sprintf(`{"amount": 2500, "currency": "TRY", "source": "tok_visa", "merchant_reference": %q}`, paid.MerchantReference)))
		stray := chargesOf(s.backup, paid.MerchantReference)
		require.Len(t, stray, 1)

		broken := check()
		double := broken.Of(invariant.NoDoubleCharge)
		require.Len(t, double, 1, "%s", broken)
		require.Equal(t, stray[0].ID, double[0].ChargeID)
		require.Contains(t, broken.String(), "successful charge at provider backup for an attempt sent to default")
		require.Contains(t, broken.String(), "the key of an attempt sent to default reached backup and default")
	})

	// A provider that keeps refusing is skipped: once the API's breaker of
	// it is open, after the workers' default of 5 refusals in a row, a new
	// attempt goes straight to the next provider, and the first is not
	// asked until its probe. This runs last: the breaker stays open.
	t.Run("a provider that keeps refusing is skipped", func(t *testing.T) {
		require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}))
		t.Cleanup(func() { require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal})) })
		for range 5 {
			id := s.createOrder(t, "25.00", "TRY")
			require.Equal(t, http.StatusOK, s.checkout(t, id, "tok_visa").status)
			require.Len(t, s.order(t, id).Attempts, 2, "refused at the first provider, paid at the backup")
		}
		asked := len(s.provider.ChargeRequests())
		id := s.createOrder(t, "25.00", "TRY")

		require.Equal(t, http.StatusOK, s.checkout(t, id, "tok_visa").status)

		o := s.order(t, id)
		require.Len(t, o.Attempts, 1, "no attempt at the first provider")
		require.Equal(t, stack.BackupName, o.Attempts[0].Provider)
		require.Equal(t, "succeeded", o.Attempts[0].Status)
		require.Equal(t, "the providers in their order; skipped default: breaker_open", *o.Attempts[0].RoutedBy)
		require.Len(t, s.provider.ChargeRequests(), asked, "the first provider was not asked")
		require.Contains(t, s.metrics(t), `chargeonce_checkout_provider_skips_total{provider="default",reason="breaker_open"} 1`)
	})
}

// chargesOf returns the charges that p holds under the merchant reference.
func chargesOf(p *fakeprovider.Provider, reference string) []fakeprovider.Charge {
	var out []fakeprovider.Charge
	for _, c := range p.Charges() {
		if c.MerchantReference == reference {
			out = append(out, c)
		}
	}
	return out
}
