package ietf_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider/ietf"
)

func TestNew_RefusesABadConfig(t *testing.T) {
	valid := func() ietf.Config {
		return ietf.Config{BaseURL: "http://127.0.0.1:8081", HTTPClient: &http.Client{Timeout: time.Second}}
	}
	cases := []struct {
		name   string
		change func(*ietf.Config)
		want   string
	}{
		{"no HTTP client", func(c *ietf.Config) { c.HTTPClient = nil }, "HTTPClient is nil"},
		{"HTTP client without a timeout", func(c *ietf.Config) { c.HTTPClient = &http.Client{} }, "has no Timeout"},
		{"empty base URL", func(c *ietf.Config) { c.BaseURL = "" }, "BaseURL is empty"},
		{"unparsable base URL", func(c *ietf.Config) { c.BaseURL = "http://[::1" }, "missing ']'"},
		{"relative base URL", func(c *ietf.Config) { c.BaseURL = "/v1" }, "scheme must be http or https"},
		{"other scheme", func(c *ietf.Config) { c.BaseURL = "ftp://provider" }, "scheme must be http or https"},
		{"no host", func(c *ietf.Config) { c.BaseURL = "http:///v1" }, "has no host"},
		{"credentials", func(c *ietf.Config) { c.BaseURL = "https://user:secret@provider" }, "must not carry credentials"},
		{"query", func(c *ietf.Config) { c.BaseURL = "https://provider/?x=1" }, "must not have a query"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.change(&cfg)

			c, err := ietf.New(cfg)

			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "secret")
			require.Nil(t, c)
		})
	}
	c, err := ietf.New(valid())
	require.NoError(t, err, "the valid config the cases start from")
	require.NotNil(t, c)
}

func TestNew_LeavesTheCallersRedirectPolicyAlone(t *testing.T) {
	hc := &http.Client{Timeout: time.Second}

	_, err := ietf.New(ietf.Config{BaseURL: "http://127.0.0.1:8081", HTTPClient: hc})

	require.NoError(t, err)
	require.Nil(t, hc.CheckRedirect)
}
