package ietf_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/fakeprovider"
	"chargeonce/provider"
	"chargeonce/provider/providertest"
)

// These tests run the client against the real fake provider, which
// implements the wire contract on its own: a mistake on either side shows up
// here instead of agreeing with itself.

// newFake starts the fake provider behind a real HTTP server and returns it
// with a client of it.
func newFake(t *testing.T, cfg fakeprovider.Config) (*fakeprovider.Provider, provider.Port) {
	t.Helper()
	fp, url := providertest.Serve(t, cfg)
	return fp, newClient(t, url)
}

func TestClient_FakeProviderApprovesAndFindsTheCharge(t *testing.T) {
	fp, c := newFake(t, fakeprovider.Config{})
	req := testCharge()

	res := c.Charge(context.Background(), req)

	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	require.Equal(t, http.StatusCreated, res.StatusCode)
	require.False(t, res.Replayed)
	require.NotEmpty(t, res.ChargeID)
	require.Equal(t, req.Amount, res.Charge.Amount)
	requests := fp.Requests()
	require.Len(t, requests, 1)
	require.Equal(t, testKey, requests[0].Key, "the fake read the same key from the quoted header")

	charges, err := c.FindCharges(context.Background(), req.MerchantReference)

	require.NoError(t, err)
	require.Len(t, charges, 1)
	require.Equal(t, *res.Charge, charges[0])
}

func TestClient_FakeProviderDeclines(t *testing.T) {
	for _, d := range providertest.Declines {
		source := "tok_" + d.Name
		t.Run(source, func(t *testing.T) {
			_, c := newFake(t, fakeprovider.Config{})
			providertest.Declined(t, c, providertest.Another(testCharge(), "0199a1d9-6e23-7d77-b801-9df969c1d378", source), d)
		})
	}
}

func TestClient_FakeProviderRefusedCardIsADecline(t *testing.T) {
	for _, source := range []string{"visa", "tok_"} {
		t.Run(source, func(t *testing.T) {
			fp, c := newFake(t, fakeprovider.Config{})
			providertest.RefusedCard(t, fp, c, providertest.Another(testCharge(), "0199a1d9-6e23-7d77-b801-9df969c1d379", source))
		})
	}
}

func TestClient_FakeProviderReplaysAFinishedKey(t *testing.T) {
	fp, c := newFake(t, fakeprovider.Config{})
	first := c.Charge(context.Background(), testCharge())
	require.Equal(t, provider.Approved, first.Outcome, first.Detail)

	again := c.Charge(context.Background(), testCharge())

	require.Equal(t, provider.Approved, again.Outcome, again.Detail)
	require.True(t, again.Replayed)
	require.Equal(t, first.ChargeID, again.ChargeID)
	require.Len(t, fp.Charges(), 1)
}

func TestClient_FakeProviderRefusesTheKeyWithAnotherAmount(t *testing.T) {
	fp, c := newFake(t, fakeprovider.Config{})
	require.Equal(t, provider.Approved, c.Charge(context.Background(), testCharge()).Outcome)
	other := testCharge()
	other.Amount++

	res := c.Charge(context.Background(), other)

	require.Equal(t, provider.ContractViolation, res.Outcome)
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.False(t, res.Outcome.Retryable())
	require.Len(t, fp.Charges(), 1)
}

func TestClient_FakeProviderSaysInFlightWhileSlow(t *testing.T) {
	second, _ := providertest.SlowCharge(t, func(cfg fakeprovider.Config) (*fakeprovider.Provider, provider.Port) {
		return newFake(t, cfg)
	}, testCharge())

	require.Equal(t, http.StatusConflict, second.StatusCode)
	require.Equal(t, time.Second, second.RetryAfter)
}

func TestClient_FakeProviderLostResponseIsLearnedByRetrying(t *testing.T) {
	fp, c := newFake(t, fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeLostResponse, Rate: 1}})

	lost := c.Charge(context.Background(), testCharge())
	require.NoError(t, fp.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
	retry := c.Charge(context.Background(), testCharge())

	require.Equal(t, provider.TransportError, lost.Outcome, lost.Detail)
	require.True(t, lost.Sent, "the card was charged although no answer came")
	require.Equal(t, provider.Approved, retry.Outcome, retry.Detail)
	require.True(t, retry.Replayed)
	charges := fp.Charges()
	require.Len(t, charges, 1)
	require.Equal(t, charges[0].ID, retry.ChargeID)
}

func TestClient_FakeProviderChaosModes(t *testing.T) {
	cases := []struct {
		mode           fakeprovider.Mode
		want           provider.Outcome
		wantRetryAfter time.Duration
	}{
		{fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}, provider.Unavailable, 0},
		{fakeprovider.Mode{Name: fakeprovider.ModeRateLimit, Rate: 1}, provider.RateLimited, time.Second},
		{fakeprovider.Mode{Name: fakeprovider.ModeDrop}, provider.Timeout, 0},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode.Name), func(t *testing.T) {
			fp, c := newFake(t, fakeprovider.Config{Mode: tc.mode})
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()

			res := c.Charge(ctx, testCharge())

			require.Equal(t, tc.want, res.Outcome, res.Detail)
			require.Equal(t, tc.wantRetryAfter, res.RetryAfter)
			require.True(t, res.Outcome.Retryable())
			require.Empty(t, fp.Charges())
		})
	}
}

func TestClient_FakeProviderPublishesItsLimits(t *testing.T) {
	_, c := newFake(t, fakeprovider.Config{Retention: 2 * time.Hour, LookupRate: 7.5})

	limits, err := c.Limits(context.Background())

	require.NoError(t, err)
	require.Equal(t, provider.Limits{KeyRetention: 2 * time.Hour, LookupsPerSecond: 7.5, HoldWindow: fakeprovider.DefaultHoldWindow}, limits)
}

func TestClient_FakeProviderLookupPastItsRateIsRateLimitedWithRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	_, c := newFake(t, fakeprovider.Config{LookupRate: 2, Now: func() time.Time { return now }})
	const ref = "bookstore-1-00000000000000000000000000000000"
	for range 2 {
		_, err := c.FindCharges(context.Background(), ref)
		require.NoError(t, err)
	}

	_, err := c.FindCharges(context.Background(), ref)

	var perr *provider.Error
	require.ErrorAs(t, err, &perr)
	require.Equal(t, provider.RateLimited, perr.Outcome)
	require.Equal(t, http.StatusTooManyRequests, perr.StatusCode)
	require.Equal(t, time.Second, perr.RetryAfter)
	require.True(t, perr.Outcome.Retryable())
}

func TestClient_FakeProviderFindsNothingForAnUnknownReference(t *testing.T) {
	_, c := newFake(t, fakeprovider.Config{})

	charges, err := c.FindCharges(context.Background(), "bookstore-1-00000000000000000000000000000000")

	require.NoError(t, err)
	require.Empty(t, charges)
}

// The refund keys of the fake's tests, UUIDs as the refund intents' are.
var refundKeys = [3]string{
	"0199a1d9-6e23-7d77-b801-000000000001",
	"0199a1d9-6e23-7d77-b801-000000000002",
	"0199a1d9-6e23-7d77-b801-000000000003",
}

func TestClient_FakeProviderRefundsAChargeInPartsAndRefusesMore(t *testing.T) {
	fp, c := newFake(t, fakeprovider.Config{})

	charge, refused := providertest.Refunds(t, fp, c, testCharge(), refundKeys)

	require.Equal(t, http.StatusPaymentRequired, refused.StatusCode)
	require.NotNil(t, refused.Refund, "the contract keeps a refusal as a failed refund")
	require.Equal(t, provider.RefundFailed, refused.Refund.Status)
	found, err := c.FindRefunds(context.Background(), charge.ID, refused.Refund.MerchantReference)
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.Equal(t, refused.Refund.ID, found[0].ID, "the refusal the answer named is the one a lookup finds")
	require.Equal(t, "charge_already_refunded", found[0].FailureReason)
}

func TestClient_FakeProviderRefusesARefundLargerThanTheCharge(t *testing.T) {
	_, c := newFake(t, fakeprovider.Config{})
	charged := c.Charge(context.Background(), testCharge())
	require.Equal(t, provider.Approved, charged.Outcome, charged.Detail)

	res := c.Refund(context.Background(), providertest.RefundOf(*charged.Charge, refundKeys[0], charged.Charge.Amount+1))

	require.Equal(t, provider.Declined, res.Outcome, res.Detail)
	require.Equal(t, "amount_too_large", res.DeclineCode)
}

func TestClient_FakeProviderRefundPendingThenFailed(t *testing.T) {
	fp, c := newFake(t, fakeprovider.Config{})
	charged := c.Charge(context.Background(), testCharge())
	require.Equal(t, provider.Approved, charged.Outcome, charged.Detail)

	res := providertest.PendingRefund(t, fp, c, *charged.Charge, refundKeys[0])

	require.Equal(t, http.StatusCreated, res.StatusCode)
}

func TestClient_FakeProviderRefundSaysInFlightWhileSlowThenReplays(t *testing.T) {
	second, third := providertest.SlowRefund(t, func(cfg fakeprovider.Config) (*fakeprovider.Provider, provider.Port, provider.Charge) {
		fp, c := newFake(t, cfg)
		charged := c.Charge(context.Background(), testCharge())
		require.Equal(t, provider.Approved, charged.Outcome, charged.Detail)
		return fp, c, *charged.Charge
	}, refundKeys[0])

	require.Equal(t, http.StatusConflict, second.StatusCode)
	require.Equal(t, time.Second, second.RetryAfter)
	require.Equal(t, http.StatusCreated, third.StatusCode, "a replay is the first answer, status and all")
}

func TestClient_FakeProviderRefundUnderAChargesKeyIsOurBug(t *testing.T) {
	fp, c := newFake(t, fakeprovider.Config{})
	charged := c.Charge(context.Background(), testCharge())
	require.Equal(t, provider.Approved, charged.Outcome, charged.Detail)

	res := c.Refund(context.Background(), providertest.RefundOf(*charged.Charge, testKey, charged.Charge.Amount))

	require.Equal(t, provider.ContractViolation, res.Outcome, res.Detail)
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Empty(t, fp.Refunds())
}

func TestClient_FakeProviderLostRefundResponseIsLearnedByRetrying(t *testing.T) {
	fp, c := newFake(t, fakeprovider.Config{})
	charged := c.Charge(context.Background(), testCharge())
	require.Equal(t, provider.Approved, charged.Outcome, charged.Detail)
	req := providertest.RefundOf(*charged.Charge, refundKeys[0], charged.Charge.Amount)
	require.NoError(t, fp.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeLostResponse, Rate: 1}))

	lost := c.Refund(context.Background(), req)
	require.NoError(t, fp.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
	retry := c.Refund(context.Background(), req)

	require.Equal(t, provider.TransportError, lost.Outcome, lost.Detail)
	require.False(t, lost.NotProcessed(), "the money went back although no answer came")
	require.Equal(t, provider.Approved, retry.Outcome, retry.Detail)
	require.True(t, retry.Replayed)
	refunds := fp.Refunds()
	require.Len(t, refunds, 1)
	require.Equal(t, refunds[0].ID, retry.Refund.ID)
}

func TestClient_FakeProviderRefundChaosModes(t *testing.T) {
	cases := []struct {
		mode         fakeprovider.Mode
		want         provider.Outcome
		notProcessed bool
	}{
		{fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}, provider.Unavailable, true},
		{fakeprovider.Mode{Name: fakeprovider.ModeRateLimit, Rate: 1}, provider.RateLimited, true},
		{fakeprovider.Mode{Name: fakeprovider.ModeDrop}, provider.Timeout, false},
		{fakeprovider.Mode{Name: fakeprovider.ModeDrop, Delay: 10 * time.Millisecond}, provider.Unavailable, false},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode.Name), func(t *testing.T) {
			fp, c := newFake(t, fakeprovider.Config{})
			charged := c.Charge(context.Background(), testCharge())
			require.Equal(t, provider.Approved, charged.Outcome, charged.Detail)
			require.NoError(t, fp.SetMode(tc.mode))
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()

			res := c.Refund(ctx, providertest.RefundOf(*charged.Charge, refundKeys[0], 100))

			require.Equal(t, tc.want, res.Outcome, res.Detail)
			require.True(t, res.Outcome.Retryable())
			require.Equal(t, tc.notProcessed, res.NotProcessed())
			require.Empty(t, fp.Refunds())
		})
	}
}

func TestClient_FakeProviderHoldsAreCapturedOrVoided(t *testing.T) {
	_, c := newFake(t, fakeprovider.Config{})

	refused := providertest.Holds(t, c, testCharge())

	require.Equal(t, http.StatusForbidden, refused.StatusCode, "the contract refuses a capture with a 403")
}

func TestClient_FakeProviderHoldExpires(t *testing.T) {
	providertest.ExpiredHold(t, func(cfg fakeprovider.Config) (*fakeprovider.Provider, provider.Port) {
		return newFake(t, cfg)
	}, testCharge())
}

func TestClient_FakeProviderCaptureOfAnUnknownChargeIsNotFound(t *testing.T) {
	_, c := newFake(t, fakeprovider.Config{})

	res := c.Capture(context.Background(), provider.CaptureRequest{Key: testKey, ChargeID: "ch_999999", Amount: 100, Currency: "TRY"})

	require.Equal(t, provider.NotFound, res.Outcome, res.Detail)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Equal(t, provider.ClassOurBug, res.Class(), "we never capture a charge we did not make")
}

func TestClient_FakeProviderCaptureChaosModes(t *testing.T) {
	cases := []struct {
		mode         fakeprovider.Mode
		want         provider.Outcome
		notProcessed bool
	}{
		{fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}, provider.Unavailable, true},
		{fakeprovider.Mode{Name: fakeprovider.ModeRateLimit, Rate: 1}, provider.RateLimited, true},
		{fakeprovider.Mode{Name: fakeprovider.ModeLostResponse, Rate: 1}, provider.TransportError, false},
		{fakeprovider.Mode{Name: fakeprovider.ModeDrop, Delay: 10 * time.Millisecond}, provider.Unavailable, false},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode.Name), func(t *testing.T) {
			fp, c := newFake(t, fakeprovider.Config{})
			req := testCharge()
			req.Hold = true
			held := c.Charge(context.Background(), req)
			require.Equal(t, provider.Approved, held.Outcome, held.Detail)
			capture := provider.CaptureRequest{Key: refundKeys[0], ChargeID: held.ChargeID, Amount: req.Amount, Currency: req.Currency}
			require.NoError(t, fp.SetMode(tc.mode))

			res := c.Capture(context.Background(), capture)
			require.NoError(t, fp.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
			retry := c.Capture(context.Background(), capture)

			require.Equal(t, tc.want, res.Outcome, res.Detail)
			require.True(t, res.Outcome.Retryable())
			require.Equal(t, tc.notProcessed, res.NotProcessed())
			require.Equal(t, provider.Approved, retry.Outcome, retry.Detail)
			require.Equal(t, tc.mode.Name == fakeprovider.ModeLostResponse, retry.Replayed, "only a lost answer was processed")
		})
	}
}
