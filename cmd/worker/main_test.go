package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/dev/stack"
	"chargeonce/dev/temporalserver"
	"chargeonce/internal/alert"
	"chargeonce/internal/cli"
	"chargeonce/internal/helptext"
	"chargeonce/internal/logging"
	"chargeonce/internal/syncbuf"
	"chargeonce/store"
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
		"--replace-timing\t(env CHARGEONCE_REPLACE_TIMING)",
	} {
		require.Contains(t, help, flagAndVar)
	}
	require.Empty(t, helptext.Faults(help))
	require.NotContains(t, help, "reference-prefix", "the sweep creates no attempt, so the worker has no merchant references to start")
}

func TestRun_ReferencePrefixIsNotAWorkerFlag(t *testing.T) {
	var stdout, stderr, report bytes.Buffer

	err := run(context.Background(), []string{"--reference-prefix", "shop"}, noEnv, &stdout, &stderr)

	require.Equal(t, 2, cli.ExitCode(&report, "worker", err))
	require.Equal(t, "worker: flag provided but not defined: -reference-prefix (see --help)\n", report.String())
}

// testCodecToken is the token the workers of these tests ask of codec
// callers.
const testCodecToken = "dGhlIHdvcmtlcidzIGNvZGVjIHRva2VuIGluIHRlc3Rz"

// startWorker starts a stack without workers and runs this worker against
// it with the extra args, and returns the stack and the worker's listen
// address once it has started.
func startWorker(t *testing.T, args ...string) (*stack.Stack, string) {
	t.Helper()
	keys := "test:" + base64.StdEncoding.EncodeToString(make([]byte, 32))
	startCtx, cancelStart := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelStart()
	cardHashKey := chargeonce.NewCardHashKey()
	st, err := stack.Start(startCtx, stack.Config{ExternalWorkers: true, CodecKeys: keys, CardHashKey: cardHashKey, Logger: logging.Discard()})
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
		done <- run(ctx, append([]string{
			"--temporal-address", st.TemporalAddress(),
			"--temporal-namespace", temporalserver.DefaultNamespace,
			"--database-url", st.DatabaseURL(),
			"--codec-keys", keys,
			"--codec-token", testCodecToken,
			"--card-hash-key", cardHashKey,
			"--provider-url", st.ProviderURL(),
			"--listen", "127.0.0.1:0",
		}, args...), func(string) string { return "" }, io.Discard, stderr)
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
	return st, listen
}

func TestRun_MetricsShowTheAlertAndEventCountersAtZero(t *testing.T) {
	_, listen := startWorker(t)

	resp, err := http.Get("http://" + listen + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// Before any alert, so that the alert rules see 0 rather than nothing.
	require.Contains(t, string(body), alert.MetricName+`{alert="`+string(alert.ContractViolation)+`"} 0`)
	// The events' dispatcher runs in the worker, and its gauges read the
	// outbox.
	require.Contains(t, string(body), `chargeonce_event_deliveries_total{result="given_up"} 0`)
	require.Contains(t, string(body), "chargeonce_event_deliveries_pending 0")
}

// The codec on --listen decrypts nothing for a caller without the token,
// and encrypts nothing with the live key either.
func TestRun_CodecAnswersOnlyTheTokensHolder(t *testing.T) {
	_, listen := startWorker(t)
	post := func(op, authorization string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+listen+"/codec/"+op, strings.NewReader(`{"payloads":[]}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	for _, op := range []string{"decode", "encode"} {
		require.Equal(t, http.StatusUnauthorized, post(op, ""), "%s without a token", op)
		require.Equal(t, http.StatusUnauthorized, post(op, "Bearer "+strings.Repeat("x", len(testCodecToken))), "%s with another token", op)
		require.Equal(t, http.StatusOK, post(op, "Bearer "+testCodecToken), "%s with the token", op)
	}
}

func TestRun_RefusesAMissingOrWeakCodecToken(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "worker: --codec-token is required"},
		{[]string{"--codec-token", "short"}, "worker: codec: a codec token has at least 32 characters"},
	} {
		var report bytes.Buffer
		err := run(context.Background(), tc.args, noEnv, io.Discard, io.Discard)
		require.Equal(t, 2, cli.ExitCode(&report, "worker", err))
		require.Contains(t, report.String(), tc.want)
	}
}

func TestRun_RefusesProviderFlagsNoAdapterCanUse(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown API", []string{"--provider", "adyen"}, `worker: --provider: unknown API "adyen": want ietf or stripe (see --help)`},
		{"Stripe without a key", []string{"--provider", "stripe"}, "worker: --provider stripe needs --stripe-api-key (sk_test_… for test mode) (see --help)"},
		{"publishable key", []string{"--provider", "stripe", "--stripe-api-key", "pk_test_1"}, `worker: provider "default": stripe: the API key must be a secret key, sk_test_… or sk_live_… (see --help)`},
		{"Stripe key for the IETF API", []string{"--stripe-api-key", "sk_test_1"}, "worker: --stripe-api-key and --stripe-search-delay need --provider stripe (see --help)"},
		{"no timeout", []string{"--provider-timeout", "0s"}, "worker: --provider-timeout must be positive (see --help)"},
		{"settlement URL without a host", []string{"--settlement-url", "http://"}, `worker: --settlement-url: config: BaseURL "http://" has no host (see --help)`},
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

// The worker's --settlement-grace-days applies to a run started through
// the API, which sends the date alone: with a grace of 5 days, a paid
// attempt of 3 days ago that no report lists still awaits its report,
// where the default grace of 2 days, or none, would make it
// missing_in_report.
func TestRun_SettlementGraceDaysApplyToARunStartedThroughTheAPI(t *testing.T) {
	// The sweep would start the attempt's payment, which this test settles
	// by hand.
	st, _ := startWorker(t, "--settlement-grace-days", "5", "--sweep-every", "1h")
	ctx := context.Background()
	paid := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3).Add(12 * time.Hour)
	order, err := st.Store().CreateOrder(ctx, chargeonce.Money{Minor: 54890, Currency: "TRY"}, "Bookstore order")
	require.NoError(t, err)
	_, att, _, err := st.Store().GetOrStartAttempt(ctx, store.NewAttempt{OrderID: order.ID, CardHash: st.CardHasher().Hash("tok_visa"),
		Key: "0190a0a0-0000-7000-8000-000000000001", ReferencePrefix: "shop", Now: paid, AbandonAfter: 30 * time.Minute, Provider: chargeonce.DefaultProvider})
	require.NoError(t, err)
	settled, err := st.Store().SettleAttempt(ctx, att.Key, chargeonce.AttemptSucceeded, "ch_unreported", paid)
	require.NoError(t, err)
	require.True(t, settled.Changed)

	req, err := http.NewRequest(http.MethodPost, st.APIURL()+"/api/settlements/"+paid.Format(time.DateOnly)+"/run", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+st.APIKey())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", body)
	var got struct {
		Status          string         `json:"status"`
		GraceDays       int            `json:"graceDays"`
		Awaiting        int            `json:"awaiting"`
		ExceptionCounts map[string]int `json:"exceptionCounts"`
	}
	require.NoError(t, json.Unmarshal(body, &got))
	require.Equal(t, "provisional", got.Status)
	require.Equal(t, 5, got.GraceDays)
	require.Equal(t, 1, got.Awaiting)
	require.Empty(t, got.ExceptionCounts)
}

func TestRun_BadFlagsAreAUsageErrorNamingTheFlag(t *testing.T) {
	for args, want := range map[string]string{
		"--event-retries=1m,30s":                 "--event-retries: retry 2 waits 30s, less than retry 1's 1m0s; waits never shrink",
		"--event-retries=soon":                   `--event-retries: retry 1, "soon", is not a duration such as 30s or 2m`,
		"--event-poll=0s":                        "--event-poll must be positive",
		"--event-allowed-networks=10.0.0.1/8":    `"10.0.0.1/8" is not a network's CIDR: write it 10.0.0.0/8`,
		"--event-allowed-networks=intranet":      `"intranet" is not a CIDR such as 10.20.0.0/16`,
		"--build-id=":                            `invalid value "" for flag -build-id: build ID "" must be 1 to 255 letters`,
		"--build-id=" + strings.Repeat("a", 256): `build ID "` + strings.Repeat("a", 256) + `" must be 1 to 255 letters`,
		"--build-id=v2 beta":                     `build ID "v2 beta" must be 1 to 255 letters`,
	} {
		var stdout, stderr, report bytes.Buffer
		err := run(context.Background(), []string{args}, noEnv, &stdout, &stderr)
		require.Equal(t, 2, cli.ExitCode(&report, "worker", err), args)
		require.Contains(t, report.String(), want, args)
	}
}

// A routing file replaces the provider flags, and a bad one stops the
// worker with the file, the line and the field.
func TestRun_RoutingFileIsRefusedBesideProviderFlagsAndWhenBad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "routing.yaml")
	require.NoError(t, os.WriteFile(good, []byte("providers:\n  - {name: a, dialect: ietf, url: 'http://127.0.0.1:1'}\n"), 0o600))
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("providers:\n  - name: a\n    dialect: adyen\n"), 0o600))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"beside a provider flag", []string{"--routing", good, "--provider-url", "http://127.0.0.1:2"},
			"worker: --routing and --provider-url do not go together: the routing file names every provider (see --help)"},
		{"a bad file", []string{"--routing", bad}, "worker: routing file " + bad + `:3: providers[0].dialect: unknown API "adyen": want ietf or stripe (see --help)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var report bytes.Buffer
			err := run(context.Background(), tc.args, noEnv, io.Discard, io.Discard)
			require.Equal(t, 2, cli.ExitCode(&report, "worker", err))
			require.Equal(t, tc.want+"\n", report.String())
		})
	}
}
