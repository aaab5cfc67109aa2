// Package providertest runs provider adapters against the fake provider,
// whose dialects implement their wire formats on their own: a mistake on
// either side shows up in these runs instead of agreeing with itself.
package providertest

import (
	"context"
	"net/http/httptest"
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
