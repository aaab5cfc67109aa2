package stripe_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/fakeprovider"
	"chargeonce/provider"
	"chargeonce/provider/providertest"
	"chargeonce/provider/stripe"
)

// These tests run the adapter against the fake provider's Stripe dialect,
// which implements the wire format on its own: a mistake on either side
// shows up here instead of agreeing with itself.

func newFake(t *testing.T, cfg fakeprovider.Config) (*fakeprovider.Provider, *stripe.Client) {
	t.Helper()
	fp, url := providertest.Serve(t, cfg)
	c, err := stripe.New(stripe.Config{APIKey: fakeprovider.StripeTestKey, BaseURL: url, HTTPClient: &http.Client{Timeout: 2 * time.Second}})
	require.NoError(t, err)
	return fp, c
}

func TestClient_FakeProviderApprovesAndFindsThePaymentIntent(t *testing.T) {
	fp, c := newFake(t, fakeprovider.Config{})
	req := testCharge()

	res := c.Charge(context.Background(), req)
	replay := c.Charge(context.Background(), req)
	found, err := c.FindCharges(context.Background(), req.MerchantReference)

	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Regexp(t, `^pi_\d{6}$`, res.ChargeID)
	require.Equal(t, provider.Approved, replay.Outcome, replay.Detail)
	require.True(t, replay.Replayed)
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.Equal(t, res.ChargeID, found[0].ID)
	require.True(t, found[0].Succeeded())
	require.Equal(t, req.Amount, found[0].Amount)
	require.Equal(t, "TRY", found[0].Currency)
	require.Len(t, fp.Charges(), 1)
	require.Len(t, fp.ChargeRequests(), 2)
}

func TestClient_FakeProviderDeclinesStripesTestCardsAndOurTokens(t *testing.T) {
	for _, d := range providertest.Declines {
		for _, source := range []string{"pm_card_" + d.Name, "tok_" + d.Name} {
			t.Run(source, func(t *testing.T) {
				_, c := newFake(t, fakeprovider.Config{})
				providertest.Declined(t, c, providertest.Another(testCharge(), "key-"+source, source), d)
			})
		}
	}
}

func TestClient_FakeProviderNoSuchPaymentMethodIsADecline(t *testing.T) {
	for _, source := range []string{"visa", "pm_card_", "tok_"} {
		t.Run(source, func(t *testing.T) {
			fp, c := newFake(t, fakeprovider.Config{})
			providertest.RefusedCard(t, fp, c, providertest.Another(testCharge(), "key-refused", source))
		})
	}
}

func TestClient_FakeProviderRefusesTheKeyWithAnotherAmountAsOurBug(t *testing.T) {
	fp, c := newFake(t, fakeprovider.Config{})
	require.Equal(t, provider.Approved, c.Charge(context.Background(), testCharge()).Outcome)
	other := testCharge()
	other.Amount++

	res := c.Charge(context.Background(), other)

	require.Equal(t, provider.ContractViolation, res.Outcome, res.Detail)
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, res.Detail, "idempotency_error")
	require.False(t, res.Outcome.Retryable())
	require.Len(t, fp.Charges(), 1)
}

func TestClient_FakeProviderSaysInFlightWhileSlowThenReplays(t *testing.T) {
	second, third := providertest.SlowCharge(t, func(cfg fakeprovider.Config) (*fakeprovider.Provider, provider.Port) {
		return newFake(t, cfg)
	}, testCharge())

	require.Equal(t, http.StatusConflict, second.StatusCode)
	require.Contains(t, second.Detail, "idempotency_key_in_use")
	require.Equal(t, http.StatusOK, third.StatusCode)
}

func TestClient_FakeProviderChaosModes(t *testing.T) {
	cases := []struct {
		mode         fakeprovider.Mode
		want         provider.Outcome
		notProcessed bool
	}{
		{fakeprovider.Mode{Name: fakeprovider.ModeRateLimit, Rate: 1}, provider.RateLimited, true},
		// Stripe says nothing of what a 5xx processed: unknown.
		{fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}, provider.Unavailable, false},
		{fakeprovider.Mode{Name: fakeprovider.ModeLostResponse, Rate: 1}, provider.TransportError, false},
		{fakeprovider.Mode{Name: fakeprovider.ModeDrop}, provider.Timeout, false},
		{fakeprovider.Mode{Name: fakeprovider.ModeDrop, Delay: 10 * time.Millisecond}, provider.Unavailable, false},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode.Name), func(t *testing.T) {
			fp, c := newFake(t, fakeprovider.Config{Mode: tc.mode})

			res := c.Charge(context.Background(), testCharge())

			require.Equal(t, tc.want, res.Outcome, res.Detail)
			require.True(t, res.Sent)
			require.Equal(t, tc.notProcessed, res.NotProcessed())
			if tc.mode.Name != fakeprovider.ModeLostResponse {
				require.Empty(t, fp.Charges())
			}
		})
	}
}

func TestClient_FakeProviderSearchPastItsRateIsRateLimited(t *testing.T) {
	_, c := newFake(t, fakeprovider.Config{LookupRate: 1})

	_, first := c.FindCharges(context.Background(), "ref")
	_, second := c.FindCharges(context.Background(), "ref")

	require.NoError(t, first)
	var perr *provider.Error
	require.ErrorAs(t, second, &perr)
	require.Equal(t, provider.RateLimited, perr.Outcome)
}

// The refund keys of the fake's tests.
var refundKeys = [3]string{"refund-key-1", "refund-key-2", "refund-key-3"}

func TestClient_FakeProviderRefundsAPaymentIntentInPartsAndRefusesMore(t *testing.T) {
	fp, c := newFake(t, fakeprovider.Config{})

	charge, refused := providertest.Refunds(t, fp, c, testCharge(), refundKeys)

	require.Equal(t, http.StatusBadRequest, refused.StatusCode, "Stripe refuses with an invalid_request_error")
	require.Nil(t, refused.Refund, "Stripe keeps no refund of a refusal")
	found, err := c.FindRefunds(context.Background(), charge.ID, providertest.RefundOf(charge, refundKeys[2], 1).MerchantReference)
	require.NoError(t, err)
	require.Empty(t, found)
	for _, r := range fp.RefundRequests() {
		require.NotEmpty(t, r.Key, "every refund request carries its key")
	}
}

func TestClient_FakeProviderRefundOfAnUnknownPaymentIntentIsRefused(t *testing.T) {
	_, c := newFake(t, fakeprovider.Config{})
	charge := provider.Charge{ID: "pi_999999", Amount: 100, Currency: "TRY"}

	res := c.Refund(context.Background(), providertest.RefundOf(charge, refundKeys[0], 100))

	require.Equal(t, provider.Declined, res.Outcome, res.Detail)
	require.Equal(t, "charge_not_refundable", res.DeclineCode)
}

func TestClient_FakeProviderRefundPendingThenFailed(t *testing.T) {
	fp, c := newFake(t, fakeprovider.Config{})
	charged := c.Charge(context.Background(), testCharge())
	require.Equal(t, provider.Approved, charged.Outcome, charged.Detail)

	res := providertest.PendingRefund(t, fp, c, *charged.Charge, refundKeys[0])

	require.Equal(t, http.StatusOK, res.StatusCode)
}

func TestClient_FakeProviderRefundSaysInFlightWhileSlowThenReplays(t *testing.T) {
	second, third := providertest.SlowRefund(t, func(cfg fakeprovider.Config) (*fakeprovider.Provider, provider.Port, provider.Charge) {
		fp, c := newFake(t, cfg)
		charged := c.Charge(context.Background(), testCharge())
		require.Equal(t, provider.Approved, charged.Outcome, charged.Detail)
		return fp, c, *charged.Charge
	}, refundKeys[0])

	require.Equal(t, http.StatusConflict, second.StatusCode)
	require.Contains(t, second.Detail, "idempotency_key_in_use")
	require.Equal(t, http.StatusOK, third.StatusCode)
}

func TestClient_FakeProviderHoldsAreCapturedOrCanceled(t *testing.T) {
	_, c := newFake(t, fakeprovider.Config{})

	refused := providertest.Holds(t, c, testCharge())

	require.Equal(t, http.StatusBadRequest, refused.StatusCode, "Stripe refuses with an invalid_request_error")
	require.Contains(t, refused.Detail, "payment_intent_unexpected_state")
}

func TestClient_FakeProviderHoldExpires(t *testing.T) {
	providertest.ExpiredHold(t, func(cfg fakeprovider.Config) (*fakeprovider.Provider, provider.Port) {
		return newFake(t, cfg)
	}, testCharge())
}

func TestClient_FakeProviderCaptureOfAnUnknownPaymentIntentIsNotFound(t *testing.T) {
	_, c := newFake(t, fakeprovider.Config{})

	res := c.Capture(context.Background(), provider.CaptureRequest{Key: "capture-key", ChargeID: "pi_999999", Amount: 100, Currency: "TRY"})

	require.Equal(t, provider.NotFound, res.Outcome, res.Detail)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Equal(t, provider.ClassOurBug, res.Class())
}
