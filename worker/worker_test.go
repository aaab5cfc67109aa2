package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/fakeprovider"
	"chargeonce/provider"
	"chargeonce/worker"
	"chargeonce/workflows"
)

func providerWithRetention(t *testing.T, retention time.Duration) *provider.Client {
	t.Helper()
	fake, err := fakeprovider.New(fakeprovider.Config{Retention: retention})
	require.NoError(t, err)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c, err := provider.New(provider.Config{BaseURL: srv.URL, HTTPClient: &http.Client{Timeout: 5 * time.Second}})
	require.NoError(t, err)
	return c
}

func TestCheckRetention_RefusesAnAbandonDeadlinePastTheProvidersRetention(t *testing.T) {
	timing := workflows.DefaultTiming() // abandons after 30 minutes

	err := worker.CheckRetention(context.Background(), providerWithRetention(t, 20*time.Minute), timing)
	require.ErrorContains(t, err, "abandon-after 30m0s must be shorter than the provider's key retention 20m0s")

	err = worker.CheckRetention(context.Background(), providerWithRetention(t, 30*time.Minute), timing)
	require.Error(t, err, "equal to the retention is already too late")

	require.NoError(t, worker.CheckRetention(context.Background(), providerWithRetention(t, 24*time.Hour), timing))
}

func TestCheckRetention_RefusesInvalidTiming(t *testing.T) {
	timing := workflows.DefaultTiming()
	timing.AttemptTimeout = -time.Second
	err := worker.CheckRetention(context.Background(), providerWithRetention(t, 24*time.Hour), timing)
	require.ErrorContains(t, err, "worker: timing")
}

func TestCheckRetention_ReportsAnUnreachableProvider(t *testing.T) {
	c, err := provider.New(provider.Config{BaseURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Timeout: time.Second}})
	require.NoError(t, err)
	err = worker.CheckRetention(context.Background(), c, workflows.DefaultTiming())
	require.ErrorContains(t, err, "read the provider's key retention")
}
