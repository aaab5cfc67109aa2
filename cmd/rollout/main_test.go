package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/cli"
	"chargeonce/internal/helptext"
)

// noEnv is an empty environment.
func noEnv(string) string { return "" }

// A bad command line is a usage error, found before the command connects:
// the address below has nothing listening, and no case reaches it.
func TestRun_BadInputIsAUsageErrorNamingTheFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no subcommand", nil, nil, "name a subcommand: status, ramp, current, drain, pin or unpin"},
		{"unknown subcommand", []string{"promote", "--build-id", "v2"}, nil, `unknown subcommand "promote"`},
		{"current without a build ID", []string{"current"}, nil, "--build-id is required"},
		{"current with an empty build ID", []string{"current", "--build-id", ""}, nil, "--build-id is required"},
		{"current with an invalid build ID", []string{"current", "--build-id", "v2 beta"}, nil, `--build-id: build ID "v2 beta" must be 1 to 255 letters`},
		{"an invalid build ID from the environment", []string{"current"}, map[string]string{"CHARGEONCE_BUILD_ID": "-v2"}, `--build-id: build ID "-v2" must be`},
		{"ramp without a percent", []string{"ramp", "--build-id", "v2"}, nil, "--percent 0 must be above 0 and below 100"},
		{"ramp at 100", []string{"ramp", "--build-id", "v2", "--percent", "100"}, nil, "--percent 100 must be above 0 and below 100"},
		{"ramp below 0", []string{"ramp", "--build-id", "v2", "--percent", "-5"}, nil, "--percent -5 must be above 0"},
		{"ramp above 100", []string{"ramp", "--build-id", "v2", "--percent", "150"}, nil, "--percent 150 must be above 0"},
		{"ramp with a percent that is no number", []string{"ramp", "--build-id", "v2", "--percent", "ten"}, nil, `invalid value "ten" for flag -percent`},
		{"ramp without a build ID", []string{"ramp", "--percent", "10"}, nil, "--build-id is required"},
		{"drain with a negative wait", []string{"drain", "--build-id", "v1", "--wait", "-1s"}, nil, "--wait -1s must not be negative"},
		{"drain without a build ID", []string{"drain"}, nil, "--build-id is required"},
		{"pin without a workflow", []string{"pin", "--build-id", "v1"}, nil, "--workflow-id or --from is required"},
		{"pin with a workflow and a version to move from", []string{"pin", "--workflow-id", "key-1", "--from", "v2", "--build-id", "v1"}, nil, "give --workflow-id or --from, not both"},
		{"pin from an invalid build ID", []string{"pin", "--from", "v2 beta", "--build-id", "v1"}, nil, `--from: build ID "v2 beta" must be`},
		{"pin without a build ID", []string{"pin", "--workflow-id", "key-1"}, nil, "--build-id is required"},
		{"unpin without a workflow", []string{"unpin"}, nil, "--workflow-id is required"},
		{"a positional argument", []string{"current", "v2"}, nil, `unexpected argument "v2"`},
		{"a flag of another subcommand", []string{"status", "--build-id", "v2"}, nil, "flag provided but not defined: -build-id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{}, tt.args...)
			if len(args) > 0 {
				args = append(args, "--temporal-address", "127.0.0.1:1")
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, func(k string) string { return tt.env[k] }, &stdout, &stderr)
			require.ErrorAs(t, err, new(cli.UsageError))
			require.ErrorContains(t, err, tt.want)
			require.Empty(t, stdout.String(), "a usage error changes nothing and reports nothing")
			var report bytes.Buffer
			require.Equal(t, 2, cli.ExitCode(&report, "rollout", err))
			require.True(t, strings.HasPrefix(report.String(), "rollout: "), report.String())
		})
	}
}

func TestRun_HelpListsTheSubcommands(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}} {
		var stderr bytes.Buffer
		err := run(context.Background(), args, noEnv, io.Discard, &stderr)
		require.ErrorIs(t, err, flag.ErrHelp)
		for sub := range subcommands {
			require.Contains(t, stderr.String(), "\n  "+sub+" ")
		}
	}
}

func TestRun_SubcommandHelpWritesFlagsWithTwoDashes(t *testing.T) {
	for sub := range subcommands {
		t.Run(sub, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), []string{sub, "--help"}, noEnv, io.Discard, &stderr)
			require.ErrorIs(t, err, flag.ErrHelp)
			require.Contains(t, stderr.String(), "Usage of rollout "+sub+":")
			require.Contains(t, stderr.String(), "  --temporal-address host:port")
			require.Empty(t, helptext.Faults(stderr.String()))
		})
	}
}
