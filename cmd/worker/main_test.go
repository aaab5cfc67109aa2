package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/alert"
	"chargeonce/internal/cli"
	"chargeonce/internal/logging"
	"chargeonce/internal/syncbuf"
	"chargeonce/stack"
	"chargeonce/temporalserver"
)

func noEnv(string) string { return "" }

func TestRun_HelpListsTheTimingFlagsWithReplaceTiming(t *testing.T) {
	var stdout, stderr bytes.Buffer

	err := run(context.Background(), []string{"--help"}, noEnv, &stdout, &stderr)

	require.ErrorIs(t, err, flag.ErrHelp)
	help := stderr.String()
	for _, flagAndVar := range []string{
		"--attempt-timeout duration\t(env CHARGEONCE_ATTEMPT_TIMEOUT)",
		"--charge-budget duration\t(env CHARGEONCE_CHARGE_BUDGET)",
		"--retry-interval duration\t(env CHARGEONCE_RETRY_INTERVAL)",
		"--reconcile-min-age duration\t(env CHARGEONCE_RECONCILE_MIN_AGE)",
		"--reconcile-interval duration\t(env CHARGEONCE_RECONCILE_INTERVAL)",
		"--abandon-after duration\t(env CHARGEONCE_ABANDON_AFTER)",
		"--replace-timing \t(env CHARGEONCE_REPLACE_TIMING)",
	} {
		require.Contains(t, help, flagAndVar)
	}
	require.NotContains(t, help, "reference-prefix", "the sweep creates no attempt, so the worker has no merchant references to start")
}

func TestRun_ReferencePrefixIsNotAWorkerFlag(t *testing.T) {
	var stdout, stderr, report bytes.Buffer

	err := run(context.Background(), []string{"--reference-prefix", "shop"}, noEnv, &stdout, &stderr)

	require.Equal(t, 2, cli.ExitCode(&report, "worker", err))
	require.Equal(t, "worker: flag provided but not defined: -reference-prefix (see --help)\n", report.String())
}

func TestRun_MetricsShowTheAlertCounterAtZero(t *testing.T) {
	keys := "test:" + base64.StdEncoding.EncodeToString(make([]byte, 32))
	startCtx, cancelStart := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelStart()
	st, err := stack.Start(startCtx, stack.Config{ExternalWorkers: true, CodecKeys: keys, Logger: logging.Discard()})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, st.Close(ctx))
	})

	ctx, stop := context.WithCancel(context.Background())
	stderr := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{
			"--temporal-address", st.TemporalAddress(),
			"--temporal-namespace", temporalserver.DefaultNamespace,
			"--database-url", st.DatabaseURL(),
			"--codec-keys", keys,
			"--provider-url", st.ProviderURL(),
			"--listen", "127.0.0.1:0",
		}, func(string) string { return "" }, io.Discard, stderr)
	}()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})

	started := regexp.MustCompile(`msg="worker started" .*listen=(\S+)`)
	var listen string
	require.Eventually(t, func() bool {
		m := started.FindStringSubmatch(stderr.String())
		if m != nil {
			listen = m[1]
		}
		return m != nil
	}, time.Minute, 20*time.Millisecond, "the worker did not start: %s", stderr)

	resp, err := http.Get("http://" + listen + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// Before any alert, so that the alert rules see 0 rather than nothing.
	require.Contains(t, string(body), alert.MetricName+`{alert="`+string(alert.ContractViolation)+`"} 0`)
}

func TestRun_RefusesProviderFlagsNoAdapterCanUse(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown API", []string{"--provider", "adyen"}, `worker: --provider: unknown API "adyen": want ietf or stripe (see --help)`},
		{"Stripe without a key", []string{"--provider", "stripe"}, "worker: --provider stripe needs --stripe-api-key (sk_test_… for test mode) (see --help)"},
		{"publishable key", []string{"--provider", "stripe", "--stripe-api-key", "pk_test_1"}, "worker: stripe: the API key must be a secret key, sk_test_… or sk_live_… (see --help)"},
		{"Stripe key for the IETF API", []string{"--stripe-api-key", "sk_test_1"}, "worker: --stripe-api-key and --stripe-search-delay need --provider stripe (see --help)"},
		{"no timeout", []string{"--provider-timeout", "0s"}, "worker: --provider-timeout must be positive (see --help)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr, report bytes.Buffer

			err := run(context.Background(), tc.args, noEnv, &stdout, &stderr)

			require.Equal(t, 2, cli.ExitCode(&report, "worker", err))
			require.Equal(t, tc.want+"\n", report.String())
		})
	}
}
