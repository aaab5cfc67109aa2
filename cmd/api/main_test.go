package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/cli"
	"chargeonce/internal/helptext"
)

func noEnv(string) string { return "" }

func TestRun_TimingFlagsAreNotTheAPIsAndAreRefused(t *testing.T) {
	tests := []struct {
		args []string
		flag string
	}{
		{[]string{"--attempt-timeout", "3s"}, "attempt-timeout"},
		{[]string{"--charge-budget", "10s"}, "charge-budget"},
		{[]string{"--retry-interval", "1s"}, "retry-interval"},
		{[]string{"--reconcile-min-age", "2m"}, "reconcile-min-age"},
		{[]string{"--reconcile-interval", "1m"}, "reconcile-interval"},
		{[]string{"--abandon-after", "20m"}, "abandon-after"},
		{[]string{"--replace-timing"}, "replace-timing"},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			var stdout, stderr, report bytes.Buffer

			err := run(context.Background(), tt.args, noEnv, &stdout, &stderr)

			require.Equal(t, 2, cli.ExitCode(&report, "api", err))
			require.Equal(t, "api: flag provided but not defined: -"+tt.flag+" (see --help)\n", report.String())
		})
	}
}

func TestRun_HelpListsTheCheckoutBudgetAndNoTiming(t *testing.T) {
	var stdout, stderr bytes.Buffer

	err := run(context.Background(), []string{"--help"}, noEnv, &stdout, &stderr)

	require.ErrorIs(t, err, flag.ErrHelp)
	help := stderr.String()
	require.Contains(t, help, "--checkout-budget duration\t(env CHARGEONCE_CHECKOUT_BUDGET)")
	require.Contains(t, help, "default: the published charge budget + 2s")
	require.Empty(t, helptext.Faults(help))
	for _, timing := range []string{"--attempt-timeout", "--charge-budget", "--retry-interval", "--reconcile-min-age", "--reconcile-interval", "--abandon-after", "--replace-timing"} {
		require.NotContains(t, help, timing+" ")
	}
}

func TestRun_BadWebhookSecretIsAUsageError(t *testing.T) {
	for name, env := range map[string]func(string) string{
		"flag": noEnv,
		"env": func(v string) string {
			if v == "CHARGEONCE_WEBHOOK_SECRET" {
				return "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw,not-a-secret"
			}
			return ""
		},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr, report bytes.Buffer
			args := []string{"--listen", "127.0.0.1:0"}
			if name == "flag" {
				args = append(args, "--webhook-secret", "not-a-secret")
			}
			err := run(context.Background(), args, env, &stdout, &stderr)
			require.Equal(t, 2, cli.ExitCode(&report, "api", err))
			require.Contains(t, report.String(), "--webhook-secret: secret ")
			require.Contains(t, report.String(), "starts with whsec_")
		})
	}
}

// A bad certificate stops the API at startup, before it listens, with an
// error that names the flags.
func TestRun_BadTLSFilesAreAUsageError(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"certificate without key": {[]string{"--tls-cert", "api.pem"}, "--tls-cert and --tls-key go together"},
		"missing files":           {[]string{"--tls-cert", "/nonexistent/api.pem", "--tls-key", "/nonexistent/api-key.pem"}, "--tls-cert/--tls-key: TLS certificate /nonexistent/api.pem"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr, report bytes.Buffer
			err := run(context.Background(), append([]string{"--listen", "127.0.0.1:0"}, tc.args...), noEnv, &stdout, &stderr)
			require.Equal(t, 2, cli.ExitCode(&report, "api", err))
			require.Contains(t, report.String(), tc.want)
		})
	}
}

// A routing file names the providers and their secrets, so the API refuses
// the one provider's flags beside it.
func TestRun_RoutingFileIsRefusedBesideTheProviderFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routing.yaml")
	require.NoError(t, os.WriteFile(path, []byte("providers:\n  - {name: a, dialect: ietf, url: 'http://127.0.0.1:1'}\n"), 0o600))
	for _, flag := range [][]string{{"--provider-name", "b"}, {"--webhook-secret", "whsec_x"}} {
		var report bytes.Buffer
		err := run(context.Background(), append([]string{"--routing", path}, flag...), noEnv, io.Discard, io.Discard)
		require.Equal(t, 2, cli.ExitCode(&report, "api", err))
		require.Equal(t, "api: --routing and "+flag[0]+" do not go together: the routing file names every provider (see --help)\n", report.String())
	}
}
