package cli_test

import (
	"bytes"
	"errors"
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/cli"
)

func TestExitCode_NamesTheCommandOnce(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code int
		out  string
	}{
		{"success", nil, 0, ""},
		{"help", flag.ErrHelp, 0, ""},
		{"usage error", cli.UsageError{Err: errors.New("--listen is empty")}, 2, "worker: --listen is empty (see --help)\n"},
		{"other error", errors.New("connect to Temporal: refused"), 1, "worker: connect to Temporal: refused\n"},
		{"error of the package named like the command", errors.New("worker: payment timing differs"), 1, "worker: payment timing differs\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			require.Equal(t, tt.code, cli.ExitCode(&out, "worker", tt.err))
			require.Equal(t, tt.out, out.String())
		})
	}
}

// Dev's worker replaces a different published timing by itself, so only the
// worker, which shares its database with other workers, has --replace-timing.
func TestTiming_OnlyTheWorkersFlagsReplaceThePublishedTiming(t *testing.T) {
	dev := flag.NewFlagSet("dev", flag.ContinueOnError)
	timing := cli.Timing(dev)
	require.NoError(t, dev.Parse([]string{"--abandon-after", "20m"}))
	require.Equal(t, "20m0s", timing.Timing.AbandonAfter.String())
	require.Nil(t, dev.Lookup("replace-timing"))

	worker := flag.NewFlagSet("worker", flag.ContinueOnError)
	timing = cli.WorkerTiming(worker)
	require.NoError(t, worker.Parse([]string{"--abandon-after", "20m", "--replace-timing"}))
	require.Equal(t, "20m0s", timing.Timing.AbandonAfter.String())
	require.True(t, timing.Replace)
}

// The variables that the cluster and the chaos runs set are named by
// EnvName: Parse must read each from the name EnvName gives it.
func TestEnvName_IsTheVariableParseReads(t *testing.T) {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	every := fs.Duration("sweep-every", 0, "")
	env := map[string]string{cli.EnvName("sweep-every"): "7s"}
	require.Equal(t, "CHARGEONCE_SWEEP_EVERY", cli.EnvName("sweep-every"))

	require.NoError(t, cli.Parse(fs, nil, func(name string) string { return env[name] }))

	require.Equal(t, 7*time.Second, *every)
}
