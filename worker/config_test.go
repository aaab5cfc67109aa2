package worker

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/notify"
	"chargeonce/provider/dialect"
	"chargeonce/provider/routing"
	"chargeonce/provider/stripe"
	"chargeonce/workflows"
)

func validConfig(providerURL string) Config {
	return Config{
		Provider:            dialect.Settings{API: dialect.IETF, URL: providerURL, Timeout: dialect.DefaultTimeout},
		SettlementGraceDays: DefaultSettlementGraceDays,
		Timing:              workflows.DefaultTiming(),
		SweepEvery:          DefaultSweepEvery,
		EventRetries:        notify.DefaultSchedule,
		EventPoll:           notify.DefaultPoll,
	}
}

// The worker command and the dev stack build their worker with Prepare: a
// client of the provider without a timeout, as the dev stack's settlement
// reader once was, would hang a worker on a provider that never answers.
func TestPrepare_EveryClientOfTheProviderHasATimeout(t *testing.T) {
	silent := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(silent.Close)
	cfg := validConfig(silent.URL)
	cfg.Provider.Timeout = 100 * time.Millisecond

	p, err := Prepare(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	began := time.Now()
	_, port := p.providers.Default()
	_, err = port.Limits(context.Background())
	require.Error(t, err)
	require.Less(t, time.Since(began), 5*time.Second, "the provider timeout bounds a call without a deadline")
	reports := p.reports[chargeonce.DefaultProvider]
	require.Equal(t, silent.URL, reports.BaseURL)
	require.Equal(t, workflows.SettlementActivityTimeout, reports.HTTP.Timeout, "a report download is bounded like its activity")
}

func TestPrepare_RefusesBadSettingsNamingTheirFlags(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no sweep period", func(c *Config) { c.SweepEvery = 0 }, "worker: --sweep-every must be positive"},
		{"no event retries", func(c *Config) { c.EventRetries = nil }, "worker: --event-retries: the retry schedule is empty; give at least one wait, as in 5s,30s,2m"},
		{"no event poll", func(c *Config) { c.EventPoll = 0 }, "worker: --event-poll must be positive"},
		{"negative grace", func(c *Config) { c.SettlementGraceDays = -1 }, "worker: --settlement-grace-days must be 0 or more, got -1"},
		{"no provider timeout", func(c *Config) { c.Provider.Timeout = 0 }, "worker: --provider-timeout must be positive"},
		{"unknown API", func(c *Config) { c.Provider.API = "adyen" }, `worker: --provider: unknown API "adyen": want ietf or stripe`},
		{"no provider URL", func(c *Config) { c.Provider.URL = "" }, `worker: provider "default": ietf: config: BaseURL is empty`},
		{"settlement URL without a host", func(c *Config) { c.SettlementURL = "http://" }, `worker: --settlement-url: config: BaseURL "http://" has no host`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig("http://127.0.0.1:8099")
			tc.change(&cfg)
			p, err := Prepare(cfg, slog.New(slog.DiscardHandler))
			require.EqualError(t, err, tc.want)
			require.Nil(t, p)
		})
	}
}

func TestSettlementReports_ReadTheProvidersReportsExceptOnStripesOwnAPI(t *testing.T) {
	cases := []struct {
		name, reportsURL, provider, want string
	}{
		{"the provider's URL by default", "", "http://127.0.0.1:8099", "http://127.0.0.1:8099"},
		{"the given URL wins", "http://reports.example", "http://127.0.0.1:8099", "http://reports.example"},
		{"none on Stripe's own API", "", stripe.DefaultBaseURL, ""},
		{"the given URL on Stripe's own API", "http://reports.example", stripe.DefaultBaseURL, "http://reports.example"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			reports, err := settlementReports(tc.reportsURL, dialect.Settings{URL: tc.provider}, slog.New(slog.NewTextHandler(&logs, nil)))
			require.NoError(t, err)
			if tc.want == "" {
				require.Nil(t, reports)
				require.Contains(t, logs.String(), "no daily settlement")
				return
			}
			require.Equal(t, tc.want, reports.BaseURL)
			require.Empty(t, logs.String())
		})
	}
}

// A worker given a routing file reads each provider's settlement reports at
// the provider's own URL, except a provider on Stripe's own API, whose
// books it does not settle; a settlement URL beside the file is refused,
// as it would not say whose reports it holds.
func TestPrepare_ReadsEachRoutedProvidersReports(t *testing.T) {
	table, err := routing.Parse([]byte(`
providers:
  - name: alpha
    dialect: ietf
    url: http://127.0.0.1:8099
  - name: beta
    dialect: ietf
    url: http://127.0.0.1:8098
  - name: gamma
    dialect: stripe
    api_key: sk_test_123
`), t.TempDir())
	require.NoError(t, err)
	cfg := validConfig("")
	cfg.Provider, cfg.Routing = dialect.Settings{}, table

	p, err := Prepare(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Len(t, p.reports, 2)
	require.Equal(t, "http://127.0.0.1:8099", p.reports["alpha"].BaseURL)
	require.Equal(t, "http://127.0.0.1:8098", p.reports["beta"].BaseURL)

	cfg.SettlementURL = "http://reports.example"
	_, err = Prepare(cfg, slog.New(slog.DiscardHandler))
	require.EqualError(t, err, "worker: a routing file names the providers; give no provider settings besides it")
}
