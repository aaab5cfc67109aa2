package main

import (
	"bytes"
	"flag"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/dev/stack"
	"chargeonce/fakeprovider"
	"chargeonce/internal/cli"
	"chargeonce/internal/helptext"
	"chargeonce/notify"
	"chargeonce/provider/dialect"
)

func TestParseFlags_HelpSaysEachDefaultOnceWithTwoDashes(t *testing.T) {
	var help bytes.Buffer
	_, _, err := parseFlags([]string{"--help"}, func(string) string { return "" }, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Empty(t, helptext.Faults(help.String()))
	require.Contains(t, help.String(), fmt.Sprintf(`rate_limit modes (default "%v")`, fakeprovider.DefaultRate),
		"--provider-rate starts where the fake provider's --rate does")
	require.Contains(t, help.String(), "before it answers 202 pending (default: charge budget + 2s)\n")
}

func TestTryCommand_ReachesTheStackWithTheDialectsCard(t *testing.T) {
	const plain = "go run ./starter checkout --amount 548.90 --currency TRY --card "
	defaults := stack.Config{DataDir: cli.DevDataDir, ProviderAPI: dialect.IETF}
	stripe := defaults
	stripe.ProviderAPI = dialect.Stripe
	elsewhere := defaults
	elsewhere.DataDir = "/tmp/shop"
	for _, tt := range []struct {
		name   string
		cfg    stack.Config
		apiURL string
		want   string
	}{
		{"defaults", defaults, "http://127.0.0.1:8080", plain + "tok_visa"},
		{"Stripe's dialect", stripe, "http://127.0.0.1:8080", plain + "pm_card_visa"},
		{"another port", defaults, "http://127.0.0.1:18080", plain + "tok_visa --api http://127.0.0.1:18080"},
		{"another data directory", elsewhere, "http://127.0.0.1:8080", plain + `tok_visa --api-key "$(cat /tmp/shop/api.key)"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tryCommand(tt.cfg, tt.apiURL, tt.cfg.DataDir+"/api.key"))
		})
	}
}

// TestParseFlags_DevAllowsLoopbackForEventsUnlessTold: the dev receiver is
// on loopback, so dev allows it; the flag or its variable replaces the list.
func TestParseFlags_DevAllowsLoopbackForEventsUnlessTold(t *testing.T) {
	var stderr bytes.Buffer
	cfg, _, err := parseFlags(nil, func(string) string { return "" }, &stderr)
	require.NoError(t, err)
	require.Equal(t, notify.LoopbackNetworks, cfg.EventNetworks)
	cfg, _, err = parseFlags(nil, func(name string) string {
		if name == cli.EnvName(cli.FlagEventNetworks) {
			return "10.20.0.0/16"
		}
		return ""
	}, &stderr)
	require.NoError(t, err)
	require.Equal(t, "10.20.0.0/16", cfg.EventNetworks.String())
}

// TestParseFlags_BackupProviderHasItsOwnBooksAndMode: the stack runs two
// providers unless told otherwise; the backup keeps its books beside the
// first's and takes its own mode; its flags without it are refused.
func TestParseFlags_BackupProviderHasItsOwnBooksAndMode(t *testing.T) {
	none := func(string) string { return "" }
	var stderr bytes.Buffer
	cfg, _, err := parseFlags(nil, none, &stderr)
	require.NoError(t, err)
	require.NotNil(t, cfg.Backup, "two providers by default")
	cfg, _, err = parseFlags([]string{"--backup-provider=false"}, none, &stderr)
	require.NoError(t, err)
	require.Nil(t, cfg.Backup, "one provider when asked")

	cfg, _, err = parseFlags([]string{"--data-dir", "/tmp/shop", "--backup-mode", "error", "--provider-mode", "drop"}, none, &stderr)
	require.NoError(t, err)
	require.NotNil(t, cfg.Backup)
	require.Equal(t, fakeprovider.ModeError, cfg.Backup.Mode.Name)
	require.Equal(t, fakeprovider.ModeDrop, cfg.Provider.Mode.Name)
	require.Equal(t, "/tmp/shop/"+stack.BackupDBFile, cfg.Backup.DataFile)
	require.Equal(t, 8098, cfg.BackupPort)

	_, _, err = parseFlags([]string{"--backup-provider=false", "--backup-mode", "error"}, none, &stderr)
	require.ErrorContains(t, err, "--backup-port and --backup-mode set the backup provider, which --backup-provider=false turns off")
	_, _, err = parseFlags([]string{"--backup-mode", "sideways"}, none, &stderr)
	require.ErrorContains(t, err, "backup provider: ")
}
