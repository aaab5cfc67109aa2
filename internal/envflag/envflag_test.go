package envflag_test

import (
	"bytes"
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/envflag"
	"chargeonce/internal/helptext"
)

func newFlags() (*flag.FlagSet, *string, *time.Duration) {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	addr := fs.String("temporal-address", "localhost:7233", "Temporal frontend host:port")
	timeout := fs.Duration("attempt-timeout", 3*time.Second, "how long one charge request may take")
	return fs, addr, timeout
}

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestParse_EnvironmentFillsFlagsNotGiven(t *testing.T) {
	fs, addr, timeout := newFlags()
	err := envflag.Parse(fs, []string{"--attempt-timeout=5s"}, "CHARGEONCE", env(map[string]string{
		"CHARGEONCE_TEMPORAL_ADDRESS": "temporal:7233",
		"CHARGEONCE_ATTEMPT_TIMEOUT":  "9s",
	}))
	require.NoError(t, err)
	require.Equal(t, "temporal:7233", *addr)
	require.Equal(t, 5*time.Second, *timeout, "a flag on the command line wins over the environment")
}

func TestParse_BadEnvironmentValueNamesTheVariable(t *testing.T) {
	fs, _, _ := newFlags()
	err := envflag.Parse(fs, nil, "CHARGEONCE", env(map[string]string{"CHARGEONCE_ATTEMPT_TIMEOUT": "soon"}))
	require.ErrorContains(t, err, `invalid value "soon" for environment variable CHARGEONCE_ATTEMPT_TIMEOUT`)
}

func TestParse_RefusesPositionalArguments(t *testing.T) {
	fs, _, _ := newFlags()
	err := envflag.Parse(fs, []string{"extra"}, "CHARGEONCE", env(nil))
	require.ErrorContains(t, err, `unexpected argument "extra"`)
}

func TestParse_HelpNamesEveryVariable(t *testing.T) {
	fs, _, _ := newFlags()
	out := new(bytes.Buffer)
	fs.SetOutput(out)
	err := envflag.Parse(fs, []string{"--help"}, "CHARGEONCE", env(nil))
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, out.String(), "--temporal-address")
	require.Contains(t, out.String(), "(env CHARGEONCE_TEMPORAL_ADDRESS)")
	require.Contains(t, out.String(), "(env CHARGEONCE_ATTEMPT_TIMEOUT)")
}

func TestAnyGiven_CountsTheCommandLineAndTheEnvironmentButNotDefaults(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want bool
	}{
		{"defaults", nil, nil, false},
		{"flag", []string{"--attempt-timeout=5s"}, nil, true},
		{"flag set to its default", []string{"--attempt-timeout=3s"}, nil, true},
		{"environment", nil, map[string]string{"CHARGEONCE_ATTEMPT_TIMEOUT": "9s"}, true},
		{"another flag", []string{"--temporal-address=temporal:7233"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, _, _ := newFlags()
			require.NoError(t, envflag.Parse(fs, tt.args, "CHARGEONCE", env(tt.env)))

			require.Equal(t, tt.want, envflag.AnyGiven(fs, "attempt-timeout", "no-such-flag"))
		})
	}
}

func TestList_TakesRepeatedFlagsOrACommaListFromTheEnvironment(t *testing.T) {
	parse := func(args []string, vars map[string]string) (envflag.List, error) {
		fs := flag.NewFlagSet("api", flag.ContinueOnError)
		fs.SetOutput(new(bytes.Buffer))
		var l envflag.List
		fs.Var(&l, "webhook-secret", "secret")
		return l, envflag.Parse(fs, args, "CHARGEONCE", env(vars))
	}
	l, err := parse([]string{"--webhook-secret", "a", "--webhook-secret=b,c"}, map[string]string{"CHARGEONCE_WEBHOOK_SECRET": "x"})
	require.NoError(t, err)
	require.Equal(t, envflag.List{"a", "b", "c"}, l, "flags win over the environment")
	l, err = parse(nil, map[string]string{"CHARGEONCE_WEBHOOK_SECRET": "x, y"})
	require.NoError(t, err)
	require.Equal(t, envflag.List{"x", "y"}, l)
	_, err = parse([]string{"--webhook-secret", "a,,b"}, nil)
	require.ErrorContains(t, err, "empty value")
}

func TestSetUsage_WritesDoubleDashesAndEachDefaultOnce(t *testing.T) {
	for _, prefix := range []string{"CHARGEONCE", ""} {
		fs := flag.NewFlagSet("dev", flag.ContinueOnError)
		fs.Duration("checkout-budget", 0, "how long a checkout waits (default: charge budget + 2s)")
		fs.Duration("sweep-every", 30*time.Second, "period of the sweep")
		fs.Float64("provider-rate", 1, "probability that a request misbehaves")
		out := new(bytes.Buffer)
		fs.SetOutput(out)
		envflag.SetUsage(fs, prefix)
		fs.Usage()
		require.Empty(t, helptext.Faults(out.String()), "%s", out)
		if prefix == "" {
			require.Contains(t, out.String(), "--provider-rate float\n", "no environment column without a prefix")
		}
		require.Contains(t, out.String(), `period of the sweep (default "30s")`)
		require.Contains(t, out.String(), `misbehaves (default "1")`, "a default of 1 is no zero value")
		require.NotContains(t, out.String(), `"0s"`)
	}
}
