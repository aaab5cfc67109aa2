package tests

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/fakeprovider"
	"chargeonce/provider/dialect"
	"chargeonce/workflows"
)

// The article's runs with the worker speaking Stripe's dialect to the fake
// provider: PaymentIntents confirmed at once, the key as a plain header,
// 409 idempotency_key_in_use while a request is in flight, 402 card_error
// for a decline, and reconciliation through the Search API.

// stripeRequests is the fake's request log of the Stripe dialect's charge
// endpoint, which the whole run must have used.
func stripeRequests(t *testing.T, s *checkoutStack) []fakeprovider.RequestRecord {
	t.Helper()
	posts := s.provider.ChargeRequests()
	for _, r := range posts {
		require.Equal(t, "/v1/payment_intents", r.Path, "every charge in Stripe's dialect")
	}
	return posts
}

func TestStripe_HappyPathPaysWithOnePaymentIntent(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: articleTiming(), Budget: articleBudget, API: dialect.Stripe})
	id := s.createOrder(t, "548.90", "TRY")

	res := s.checkout(t, id, "pm_card_visa")

	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	var paid paidBody
	require.NoError(t, json.Unmarshal(res.body, &paid))
	require.Regexp(t, `^pi_\d+$`, paid.ProviderPaymentID)
	charges := s.provider.Charges()
	require.Len(t, charges, 1)
	require.Equal(t, paid.ProviderPaymentID, charges[0].ID)
	posts := stripeRequests(t, s)
	require.Equal(t, []int{http.StatusOK}, statuses(posts))
	require.Equal(t, paid.IdempotencyKey, posts[0].Key)
}

func TestStripe_DeclineIsA402AndTheOrderCanBePaidAgain(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: articleTiming(), Budget: articleBudget, API: dialect.Stripe})
	id := s.createOrder(t, "548.90", "TRY")

	res := s.checkout(t, id, "pm_card_chargeDeclinedInsufficientFunds")

	require.Equal(t, http.StatusPaymentRequired, res.status, "body: %s", res.body)
	require.Equal(t, "insufficient_funds", problemOf(t, res).DeclineCode)
	o := s.order(t, id)
	require.Equal(t, "placed", o.Status)
	require.Equal(t, "declined", o.Attempts[0].Status)
	require.Equal(t, []int{http.StatusPaymentRequired}, statuses(stripeRequests(t, s)))

	// The starter's test token on Stripe's dialect.
	paid := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusOK, paid.status, "body: %s", paid.body)
}

func TestStripe_SlowProviderIsInFlightThenReplayed(t *testing.T) {
	// The article's 5 s provider at half scale: the first request times
	// out, the retry finds the key in use (409), the next gets the stored
	// PaymentIntent replayed. The sequence takes about 3 s; the budgets are
	// the default configuration's, so that a loaded machine still sees it
	// end within them, and the test ends when it does.
	timing := articleTiming()
	timing.SendBudget = 10 * time.Second
	s := startCheckoutStack(t, checkoutStackConfig{
		Timing: timing,
		Budget: 12 * time.Second,
		Mode:   fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 2500 * time.Millisecond},
		API:    dialect.Stripe,
	})
	id := s.createOrder(t, "548.90", "TRY")

	res := s.checkout(t, id, "pm_card_visa")

	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	require.Len(t, s.provider.Charges(), 1)
	posts := stripeRequests(t, s)
	require.Equal(t, []int{0, http.StatusConflict, http.StatusOK}, statuses(posts))
	require.True(t, posts[2].Replayed)
	log := s.order(t, id).Attempts[0].Requests
	require.Equal(t, "timeout", log[0].Outcome)
	require.Equal(t, "in_flight", log[1].Outcome)
	require.Equal(t, "approved", log[2].Outcome)
	require.True(t, log[2].Replayed)
}

func TestStripe_UnknownOutcomeIs202ThenAnotherCardIs409ThenTheSameCardIs200(t *testing.T) {
	// The article's 15 s provider at half scale: longer than the budget.
	s := startCheckoutStack(t, checkoutStackConfig{
		Timing: articleTiming(),
		Budget: articleBudget,
		Mode:   fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 7500 * time.Millisecond},
		API:    dialect.Stripe,
	})
	id := s.createOrder(t, "548.90", "TRY")

	pending := s.checkout(t, id, "pm_card_visa")
	require.Equal(t, http.StatusAccepted, pending.status, "body: %s", pending.body)
	var p paidBody
	require.NoError(t, json.Unmarshal(pending.body, &p))

	other := s.checkout(t, id, "pm_card_mastercard")
	require.Equal(t, http.StatusConflict, other.status, "body: %s", other.body)
	require.Len(t, s.order(t, id).Attempts, 1, "the other card started no attempt")

	require.Eventually(t, func() bool { return len(s.provider.Charges()) == 1 }, 15*time.Second, 50*time.Millisecond)
	again := s.checkout(t, id, "pm_card_visa")
	require.Equal(t, http.StatusOK, again.status, "body: %s", again.body)
	var paid paidBody
	require.NoError(t, json.Unmarshal(again.body, &paid))
	require.Equal(t, p.IdempotencyKey, paid.IdempotencyKey)
	require.Equal(t, s.provider.Charges()[0].ID, paid.ProviderPaymentID)
	posts := stripeRequests(t, s)
	require.True(t, posts[len(posts)-1].Replayed)
	for _, r := range posts {
		require.Equal(t, p.IdempotencyKey, r.Key)
	}
}

// reconcilingTiming gives up on the charge phase within a second and looks
// the charge up from 2.5 s on.
func reconcilingTiming(abandonAfter time.Duration) workflows.Timing {
	return workflows.Timing{
		AttemptTimeout: 500 * time.Millisecond,
		SendBudget:     time.Second,
		RetryInterval:  200 * time.Millisecond,
		MinAge:         2500 * time.Millisecond,
		Interval:       500 * time.Millisecond,
		AbandonAfter:   abandonAfter,
	}
}

func TestStripe_UnknownOutcomeIsSettledThroughSearch(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{
		Timing: reconcilingTiming(time.Minute),
		Budget: 1500 * time.Millisecond,
		Mode:   fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 2 * time.Second},
		API:    dialect.Stripe,
	})
	id := s.createOrder(t, "548.90", "TRY")

	res := s.checkout(t, id, "pm_card_visa")
	require.Equal(t, http.StatusAccepted, res.status, "body: %s", res.body)
	o := s.waitPaid(t, id)

	require.Equal(t, s.provider.Charges()[0].ID, *o.ProviderPaymentID)
	require.NotNil(t, o.Attempts[0].LastCheckedAt, "settled by a lookup at the provider")
	searches := 0
	for _, r := range s.provider.Requests() {
		if r.Path == "/v1/payment_intents/search" {
			searches++
			require.Equal(t, http.StatusOK, r.Status)
		}
	}
	require.Positive(t, searches, "the lookup went through the Search API")
}

func TestStripe_DroppedRequestsAreAbandonedAndNothingIsCharged(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{
		Timing: reconcilingTiming(5 * time.Second),
		Budget: 1500 * time.Millisecond,
		Mode:   fakeprovider.Mode{Name: fakeprovider.ModeDrop},
		API:    dialect.Stripe,
	})
	id := s.createOrder(t, "548.90", "TRY")

	res := s.checkout(t, id, "pm_card_visa")
	require.Equal(t, http.StatusAccepted, res.status, "body: %s", res.body)

	var o orderView
	require.Eventually(t, func() bool {
		o = s.order(t, id)
		return o.Attempts[0].Status == "abandoned"
	}, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, "placed", o.Status, "an abandoned attempt leaves the order to be paid again")
	require.NotNil(t, o.Attempts[0].LastCheckedAt)
	require.Empty(t, s.provider.Charges())
	for _, r := range stripeRequests(t, s) {
		require.Zero(t, r.Status, "every charge request was dropped")
	}
}
