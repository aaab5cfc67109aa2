package provider_test

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
)

func TestNew_RefusesABadConfig(t *testing.T) {
	valid := func() provider.Config {
		return provider.Config{BaseURL: "http://127.0.0.1:8081", HTTPClient: &http.Client{Timeout: time.Second}}
	}
	cases := []struct {
		name   string
		change func(*provider.Config)
		want   string
	}{
		{"no HTTP client", func(c *provider.Config) { c.HTTPClient = nil }, "HTTPClient is nil"},
		{"HTTP client without a timeout", func(c *provider.Config) { c.HTTPClient = &http.Client{} }, "has no Timeout"},
		{"empty base URL", func(c *provider.Config) { c.BaseURL = "" }, "BaseURL is empty"},
		{"unparsable base URL", func(c *provider.Config) { c.BaseURL = "http://[::1" }, "missing ']'"},
		{"relative base URL", func(c *provider.Config) { c.BaseURL = "/v1" }, "scheme must be http or https"},
		{"other scheme", func(c *provider.Config) { c.BaseURL = "ftp://provider" }, "scheme must be http or https"},
		{"no host", func(c *provider.Config) { c.BaseURL = "http:///v1" }, "has no host"},
		{"credentials", func(c *provider.Config) { c.BaseURL = "https://user:secret@provider" }, "must not carry credentials"},
		{"query", func(c *provider.Config) { c.BaseURL = "https://provider/?x=1" }, "must not have a query"},
		{"ratio above one", func(c *provider.Config) { c.Breaker.FailureRatio = 1.5 }, "FailureRatio 1.5 is not in [0, 1]"},
		{"negative ratio", func(c *provider.Config) { c.Breaker.FailureRatio = -0.1 }, "FailureRatio -0.1"},
		{"NaN ratio", func(c *provider.Config) { c.Breaker.FailureRatio = math.NaN() }, "FailureRatio NaN"},
		{"tiny window", func(c *provider.Config) { c.Breaker.Window = time.Millisecond }, "at least 10ms"},
		{"negative window", func(c *provider.Config) { c.Breaker.Window = -time.Second }, "at least 10ms"},
		{"negative open timeout", func(c *provider.Config) { c.Breaker.OpenTimeout = -time.Second }, "OpenTimeout -1s is negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.change(&cfg)

			c, err := provider.New(cfg)

			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "secret")
			require.Nil(t, c)
		})
	}
	c, err := provider.New(valid())
	require.NoError(t, err, "the valid config the cases start from")
	require.NotNil(t, c)
}

func TestNew_LeavesTheCallersRedirectPolicyAlone(t *testing.T) {
	hc := &http.Client{Timeout: time.Second}

	_, err := provider.New(provider.Config{BaseURL: "http://127.0.0.1:8081", HTTPClient: hc})

	require.NoError(t, err)
	require.Nil(t, hc.CheckRedirect)
}
