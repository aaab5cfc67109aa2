// Package providertest runs provider adapters against the fake provider,
// whose dialects implement their wire formats on their own: a mistake on
// either side shows up in these runs instead of agreeing with itself.
package providertest

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/fakeprovider"
	"chargeonce/provider"
)

// Serve starts a fake provider configured by cfg behind a real HTTP server,
// and returns it with the server's URL. Both stop when the test ends.
func Serve(t testing.TB, cfg fakeprovider.Config) (*fakeprovider.Provider, string) {
	t.Helper()
	fp, err := fakeprovider.New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(fp)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, fp.Close(ctx))
	})
	return fp, srv.URL
}

// SlowCharge sends req three times to a fake that processes every new
// charge until told otherwise: first, which starts the charge; second,
// while it is processing; third, once it is stored. It checks what every
// dialect must answer (the second in flight and not certainly unprocessed,
// the first approved, the third the replay of the same charge, one charge
// in all) and returns the second and third, for the checks of a dialect.
// port starts the fake with the configuration it is given and a client of it.
func SlowCharge(t *testing.T, port func(fakeprovider.Config) (*fakeprovider.Provider, provider.Port), req provider.ChargeRequest) (second, third provider.Result) {
	t.Helper()
	processing := make(chan struct{}, 1)
	finish := make(chan time.Time)
	fp, c := port(fakeprovider.Config{
		Mode: fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: time.Minute},
		After: func(time.Duration) <-chan time.Time {
			processing <- struct{}{}
			return finish
		},
	})
	firstDone := make(chan provider.Result, 1)
	go func() { firstDone <- c.Charge(context.Background(), req) }()
	<-processing

	second = c.Charge(context.Background(), req)
	close(finish)
	first := <-firstDone
	third = c.Charge(context.Background(), req)

	require.Equal(t, provider.InFlight, second.Outcome, second.Detail)
	require.False(t, second.NotProcessed(), "a request in flight may yet charge")
	require.Equal(t, provider.Approved, first.Outcome, first.Detail)
	require.Equal(t, provider.Approved, third.Outcome, third.Detail)
	require.True(t, third.Replayed)
	require.Equal(t, first.ChargeID, third.ChargeID)
	require.Len(t, fp.Charges(), 1)
	return second, third
}

// Another is req under its own key, with its own reference and card, so
// that it is a payment of its own.
func Another(req provider.ChargeRequest, key, source string) provider.ChargeRequest {
	req.Key, req.Source = key, source
	req.MerchantReference = "bookstore-1001-" + key
	return req
}

// RefusedCard sends req, whose source the fake refuses as no card it can
// charge, twice under its key, and checks what every dialect must make of
// it: a decline with provider.DeclineInvalidPaymentMethod each time, since
// the customer's card is at fault and not our request, certainly not
// processed, and no charge at the provider or found for the reference.
func RefusedCard(t *testing.T, fp *fakeprovider.Provider, c provider.Port, req provider.ChargeRequest) {
	t.Helper()
	for range 2 {
		res := c.Charge(context.Background(), req)
		require.Equal(t, provider.Declined, res.Outcome, res.Detail)
		require.Equal(t, provider.DeclineInvalidPaymentMethod, res.DeclineCode)
		require.Empty(t, res.ChargeID, "a refused card leaves no charge")
		require.True(t, res.NotProcessed(), "a refused card is refused before anything is processed")
	}
	require.Empty(t, fp.Charges())
	found, err := c.FindCharges(context.Background(), req.MerchantReference)
	require.NoError(t, err)
	require.Empty(t, found)
}

// RefundOf is a refund of charge under key, with a reference of its own,
// as chargeonce.RefundReference builds one.
func RefundOf(charge provider.Charge, key string, amount int64) provider.RefundRequest {
	return provider.RefundRequest{
		Key:               key,
		ChargeID:          charge.ID,
		Amount:            amount,
		Currency:          charge.Currency,
		Reason:            "requested_by_customer",
		MerchantReference: "bookstore-refund-" + strings.ReplaceAll(key, "-", ""),
	}
}

// Refunds charges req, then refunds the charge in two parts and once more,
// each under its own key, and checks what every dialect must make of it:
// each part approved as a succeeded refund of exactly what was asked,
// replayed under its key without a second refund, found again by its
// reference, and the third refused, since nothing of the charge is left:
// a Declined with the provider's code, which is a result and not an error,
// and which no lookup takes for a refund that went through. keys are the
// three refunds' keys. It returns the charge and the refusal, for the checks
// of a dialect.
func Refunds(t *testing.T, fp *fakeprovider.Provider, c provider.Port, req provider.ChargeRequest, keys [3]string) (provider.Charge, provider.RefundResult) {
	t.Helper()
	ctx := context.Background()
	charged := c.Charge(ctx, req)
	require.Equal(t, provider.Approved, charged.Outcome, charged.Detail)
	charge := *charged.Charge
	first, rest := charge.Amount/3, charge.Amount-charge.Amount/3

	var parts []provider.Refund
	for i, amount := range []int64{first, rest} {
		refund := RefundOf(charge, keys[i], amount)
		res := c.Refund(ctx, refund)
		require.Equal(t, provider.Approved, res.Outcome, res.Detail)
		require.True(t, res.Sent)
		require.False(t, res.Replayed)
		require.NotNil(t, res.Refund)
		require.Equal(t, provider.RefundSucceeded, res.Refund.Status)
		require.Equal(t, charge.ID, res.Refund.ChargeID)
		require.Equal(t, amount, res.Refund.Amount)
		require.Equal(t, charge.Currency, res.Refund.Currency)
		require.Equal(t, refund.MerchantReference, res.Refund.MerchantReference)

		again := c.Refund(ctx, refund)
		require.Equal(t, provider.Approved, again.Outcome, again.Detail)
		require.True(t, again.Replayed, "the same key is answered from the provider's store")
		require.Equal(t, res.Refund.ID, again.Refund.ID)

		found, err := c.FindRefunds(ctx, charge.ID, refund.MerchantReference)
		require.NoError(t, err)
		require.Equal(t, []provider.Refund{*res.Refund}, found, "the lookup finds the refund the answer named")
		parts = append(parts, *res.Refund)
	}
	require.NotEqual(t, parts[0].ID, parts[1].ID)

	refusal := RefundOf(charge, keys[2], 1)
	refused := c.Refund(ctx, refusal)
	require.Equal(t, provider.Declined, refused.Outcome, refused.Detail)
	require.Equal(t, "charge_already_refunded", refused.DeclineCode)
	require.False(t, refused.Outcome.Retryable())
	require.False(t, refused.NotProcessed(), "the refusal is stored under the key")
	again := c.Refund(ctx, refusal)
	require.Equal(t, provider.Declined, again.Outcome, again.Detail)
	require.True(t, again.Replayed, "a refusal is replayed like a decline")
	found, err := c.FindRefunds(ctx, charge.ID, refusal.MerchantReference)
	require.NoError(t, err)
	for _, r := range found {
		require.Equal(t, provider.RefundFailed, r.Status, "a refusal is never found as money returned")
	}

	var sum int64
	for _, r := range fp.Refunds() {
		if r.Status != fakeprovider.RefundFailed {
			sum += r.Amount
		}
	}
	require.Equal(t, charge.Amount, sum, "the provider returned the charge once, in two parts")
	return charge, refused
}

// PendingRefund refunds charge under key while the fake holds refunds
// pending, and checks what every dialect must make of a refund that
// settles later: approved as pending, found pending, found failed with the
// provider's reason once the provider fails it, and the key still answering
// with the refund as it stands. It returns the refund's result.
func PendingRefund(t *testing.T, fp *fakeprovider.Provider, c provider.Port, charge provider.Charge, key string) provider.RefundResult {
	t.Helper()
	ctx := context.Background()
	refund := RefundOf(charge, key, charge.Amount)
	fp.HoldRefunds(true)
	res := c.Refund(ctx, refund)
	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	require.Equal(t, provider.RefundPending, res.Refund.Status)
	found, err := c.FindRefunds(ctx, charge.ID, refund.MerchantReference)
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.Equal(t, provider.RefundPending, found[0].Status, "a pending refund is looked up until it settles")

	_, err = fp.SettleRefund(res.Refund.ID, fakeprovider.RefundFailed, "lost_or_stolen_card")
	require.NoError(t, err)
	found, err = c.FindRefunds(ctx, charge.ID, refund.MerchantReference)
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.Equal(t, res.Refund.ID, found[0].ID)
	require.Equal(t, provider.RefundFailed, found[0].Status)
	require.Equal(t, "lost_or_stolen_card", found[0].FailureReason)
	return res
}

// SlowRefund sends req three times to a fake that processes every new
// request until told otherwise, as SlowCharge does for a charge, and checks
// the same: in flight and not certainly unprocessed while the first is
// processing, then the first approved and the third its replay, one refund
// in all. charge must already exist at the fake; port starts the fake with
// the configuration it is given, a client of it, and the charge.
func SlowRefund(t *testing.T, port func(fakeprovider.Config) (*fakeprovider.Provider, provider.Port, provider.Charge), key string) (second, third provider.RefundResult) {
	t.Helper()
	processing := make(chan struct{}, 1)
	finish := make(chan time.Time)
	// The fake waits on After in its slow mode only, which starts once
	// the charge is made.
	fp, c, charge := port(fakeprovider.Config{
		After: func(time.Duration) <-chan time.Time {
			processing <- struct{}{}
			return finish
		},
	})
	require.NoError(t, fp.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: time.Minute}))
	req := RefundOf(charge, key, charge.Amount)
	firstDone := make(chan provider.RefundResult, 1)
	go func() { firstDone <- c.Refund(context.Background(), req) }()
	<-processing

	second = c.Refund(context.Background(), req)
	close(finish)
	first := <-firstDone
	third = c.Refund(context.Background(), req)

	require.Equal(t, provider.InFlight, second.Outcome, second.Detail)
	require.False(t, second.NotProcessed(), "a request in flight may yet refund")
	require.Equal(t, provider.Approved, first.Outcome, first.Detail)
	require.Equal(t, provider.Approved, third.Outcome, third.Detail)
	require.True(t, third.Replayed)
	require.Equal(t, first.Refund.ID, third.Refund.ID)
	require.Len(t, fp.Refunds(), 1)
	return second, third
}
