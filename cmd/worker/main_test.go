package main

import (
	"bytes"
	"context"
	"flag"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/cli"
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
