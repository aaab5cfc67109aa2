package provider_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
)

func TestRegistry_GetsEachPortByNameAndTheDefaultForNone(t *testing.T) {
	eu, us := &port{}, &port{}
	r, err := provider.NewRegistry(map[string]provider.Port{"eu": eu, "us": us}, "eu")
	require.NoError(t, err)

	for name, want := range map[string]provider.Port{"eu": eu, "us": us, "": eu} {
		got, err := r.Get(name)
		require.NoError(t, err, name)
		require.Same(t, want, got, name)
	}
	def, p := r.Default()
	require.Equal(t, "eu", def)
	require.Same(t, eu, p)
	var names []string
	for name := range r.All() {
		names = append(names, name)
	}
	require.Equal(t, []string{"eu", "us"}, names)
}

func TestRegistry_RefusesAnUnknownNameClearly(t *testing.T) {
	r, err := provider.Single("default", &port{})
	require.NoError(t, err)

	p, err := r.Get("stripe-eu")

	require.ErrorIs(t, err, provider.ErrUnknownProvider)
	require.EqualError(t, err, `unknown provider "stripe-eu": this worker reaches "default"`)
	require.Nil(t, p)
}

func TestNewRegistry_RefusesWhatCannotRoute(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ports map[string]provider.Port
		def   string
		want  string
	}{
		{"empty name", map[string]provider.Port{"": &port{}}, "", "a provider name is empty"},
		{"no port", map[string]provider.Port{"eu": nil}, "eu", `provider "eu" has no port`},
		{"default not held", map[string]provider.Port{"eu": &port{}}, "us", `the default provider "us" is not one of "eu"`},
		{"no provider", nil, "default", `the default provider "default" is not one of no provider`},
	} {
		_, err := provider.NewRegistry(tc.ports, tc.def)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}

func TestRegistry_IsNotChangedByItsSourceMap(t *testing.T) {
	ports := map[string]provider.Port{"eu": &port{}}
	r, err := provider.NewRegistry(ports, "eu")
	require.NoError(t, err)

	ports["us"] = &port{}

	_, err = r.Get("us")
	require.ErrorIs(t, err, provider.ErrUnknownProvider)
}

// Each entry is a provider of its own behind breakers of its own: one
// provider failing until its breaker opens leaves the other sending.
func TestRegistry_EachProviderHasItsOwnBreaker(t *testing.T) {
	cfg := provider.BreakerConfig{ConsecutiveFailures: 2, OpenTimeout: time.Hour}
	failing := &port{result: provider.Result{Exchange: provider.Exchange{Outcome: provider.Unavailable, StatusCode: http.StatusServiceUnavailable, Sent: true}}}
	healthy := &port{result: provider.Result{Exchange: provider.Exchange{Outcome: provider.Approved, StatusCode: http.StatusCreated, Sent: true}}}
	down, err := provider.NewBreaker(failing, cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	up, err := provider.NewBreaker(healthy, cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	r, err := provider.NewRegistry(map[string]provider.Port{"down": down, "up": up}, "up")
	require.NoError(t, err)

	for range 3 {
		p, err := r.Get("down")
		require.NoError(t, err)
		p.Charge(context.Background(), provider.ChargeRequest{Key: "k"})
	}
	p, err := r.Get("up")
	require.NoError(t, err)
	res := p.Charge(context.Background(), provider.ChargeRequest{Key: "k"})

	require.Equal(t, 2, failing.calls, "the failing provider's breaker opened after two failures")
	require.Equal(t, provider.Approved, res.Outcome, "the other provider still sends")
	require.Equal(t, 1, healthy.calls)
}
