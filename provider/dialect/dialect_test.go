package dialect_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider/dialect"
)

func TestNew_RefusesWhatNoAdapterCanUse(t *testing.T) {
	hc := &http.Client{Timeout: time.Second}
	cases := []struct {
		name string
		cfg  dialect.Config
		want string
	}{
		{"unknown API", config(dialect.Settings{API: "adyen", URL: "http://127.0.0.1:8099"}, hc), `unknown API "adyen": want ietf or stripe`},
		{"Stripe key for the IETF API", config(dialect.Settings{URL: "http://127.0.0.1:8099", StripeAPIKey: "sk_test_1"}, hc), "for the stripe API only"},
		{"IETF without a URL", config(dialect.Settings{API: dialect.IETF}, hc), "BaseURL is empty"},
		{"Stripe without a key", config(dialect.Settings{API: dialect.Stripe}, hc), "sk_test_… or sk_live_…"},
		{"Stripe with a restricted key", config(dialect.Settings{API: dialect.Stripe, StripeAPIKey: "rk_test_1"}, hc), "must be a secret key"},
		{"a name that is not one", config(dialect.Settings{Name: "Stripe EU", URL: "http://127.0.0.1:8099"}, hc), `provider name "Stripe EU" must be`},
		{"no client and no timeout", config(dialect.Settings{URL: "http://127.0.0.1:8099"}, nil), "the timeout 0s is not positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := dialect.New(tc.cfg)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, p)
		})
	}
}

func TestNew_BuildsEachAPI(t *testing.T) {
	hc := &http.Client{Timeout: time.Second}
	for _, cfg := range []dialect.Config{
		config(dialect.Settings{URL: "http://127.0.0.1:8099"}, hc),
		config(dialect.Settings{API: dialect.Stripe, StripeAPIKey: "sk_test_1"}, hc),
		config(dialect.Settings{Name: "stripe-eu", API: dialect.Stripe, URL: "http://127.0.0.1:8099", StripeAPIKey: "sk_live_1"}, hc),
		config(dialect.Settings{URL: "http://127.0.0.1:8099", Timeout: dialect.DefaultTimeout}, nil),
	} {
		p, err := dialect.New(cfg)
		require.NoError(t, err, cfg.API)
		require.NotNil(t, p)
	}
}

func config(s dialect.Settings, hc *http.Client) dialect.Config {
	return dialect.Config{Settings: s, HTTPClient: hc}
}

func TestNewRegistry_OnePortPerProviderTheFirstTheDefault(t *testing.T) {
	reg, err := dialect.NewRegistry(nil,
		dialect.Settings{Name: "alpha", URL: "http://127.0.0.1:8099", Timeout: time.Second},
		dialect.Settings{Name: "beta", API: dialect.Stripe, StripeAPIKey: "sk_test_1", Timeout: time.Second},
	)
	require.NoError(t, err)

	name, def := reg.Default()
	require.Equal(t, "alpha", name)
	beta, err := reg.Get("beta")
	require.NoError(t, err)
	require.NotSame(t, def, beta, "each provider has a port, and breakers, of its own")
	var names []string
	for name := range reg.All() {
		names = append(names, name)
	}
	require.Equal(t, []string{"alpha", "beta"}, names)
}

func TestNewRegistry_RefusesNamingTheProviderAtFault(t *testing.T) {
	alpha := dialect.Settings{Name: "alpha", URL: "http://127.0.0.1:8099", Timeout: time.Second}
	cases := []struct {
		name     string
		settings []dialect.Settings
		want     string
	}{
		{"no provider", nil, "provider registry: no provider"},
		{"a bad provider", []dialect.Settings{alpha, {Name: "beta", API: dialect.Stripe, Timeout: time.Second}}, `provider "beta": stripe: `},
		{"one name twice", []dialect.Settings{alpha, alpha}, `provider "alpha": the name is given twice`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dialect.NewRegistry(nil, tc.settings...)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
