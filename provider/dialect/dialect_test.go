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
		{"unknown API", dialect.Config{API: "adyen", BaseURL: "http://127.0.0.1:8099", HTTPClient: hc}, `unknown API "adyen": want ietf or stripe`},
		{"Stripe key for the IETF API", dialect.Config{BaseURL: "http://127.0.0.1:8099", HTTPClient: hc, StripeAPIKey: "sk_test_1"}, "for the stripe API only"},
		{"IETF without a URL", dialect.Config{API: dialect.IETF, HTTPClient: hc}, "BaseURL is empty"},
		{"Stripe without a key", dialect.Config{API: dialect.Stripe, HTTPClient: hc}, "sk_test_… or sk_live_…"},
		{"Stripe with a restricted key", dialect.Config{API: dialect.Stripe, HTTPClient: hc, StripeAPIKey: "rk_test_1"}, "must be a secret key"},
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
		{BaseURL: "http://127.0.0.1:8099", HTTPClient: hc},
		{API: dialect.Stripe, HTTPClient: hc, StripeAPIKey: "sk_test_1"},
		{API: dialect.Stripe, BaseURL: "http://127.0.0.1:8099", HTTPClient: hc, StripeAPIKey: "sk_live_1"},
	} {
		p, err := dialect.New(cfg)
		require.NoError(t, err, cfg.API)
		require.NotNil(t, p)
	}
}
