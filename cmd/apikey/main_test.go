package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/apikey"
	"chargeonce/internal/cli"
	"chargeonce/internal/helptext"
	"chargeonce/store"
)

// apikeyCmd runs the command with the database in the environment, as
// compose gives it, and returns its exit code, stdout and stderr.
func apikeyCmd(t *testing.T, dsn string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr, report bytes.Buffer
	env := func(name string) string {
		if name == cli.EnvName("database-url") {
			return dsn
		}
		return ""
	}
	err := run(context.Background(), args, env, &stdout, &stderr)
	code := cli.ExitCode(&report, "apikey", err)
	return code, stdout.String(), stderr.String() + report.String()
}

func TestApikey_CreateShowsTheKeyOnceListAndRevokeWithAnOverlap(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "chargeonce.db")
	code, out, errOut := apikeyCmd(t, dsn, "create", "--name", "shop front", "--scopes", "operator,checkout")
	require.Equal(t, 0, code, errOut)
	key, err := apikey.Parse(strings.TrimSpace(out))
	require.NoError(t, err, "stdout is the key alone")
	require.Contains(t, errOut, "created key "+key.ID+" (scopes checkout,operator)")

	code, out, errOut = apikeyCmd(t, dsn, "list")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, key.ID+`\s+"shop front"\s+checkout,operator\s+\S+\s+active\n`, out)
	require.NotContains(t, out, key.String())

	code, out, errOut = apikeyCmd(t, dsn, "revoke", "--id", key.ID, "--after", "24h")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "key "+key.ID+" stops working at ")
	code, out, _ = apikeyCmd(t, dsn, "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, "active until ")

	st, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	defer st.Close()
	rec, err := apikey.Authenticate(context.Background(), st, "Bearer "+key.String(), time.Now())
	require.NoError(t, err, "the key works during the overlap")
	require.True(t, rec.Has(apikey.ScopeOperator))

	code, _, errOut = apikeyCmd(t, dsn, "revoke", "--id", key.ID)
	require.Equal(t, 0, code, errOut)
	_, err = apikey.Authenticate(context.Background(), st, "Bearer "+key.String(), time.Now())
	require.ErrorIs(t, err, apikey.ErrRevoked)
	code, out, _ = apikeyCmd(t, dsn, "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, "revoked since ")
}

func TestApikey_CreateOutWritesAFileOnlyItsOwnerReads(t *testing.T) {
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "chargeonce.db")
	file := filepath.Join(dir, "api.key")
	code, out, errOut := apikeyCmd(t, dsn, "create", "--scopes", "checkout", "--out", file)
	require.Equal(t, 0, code, errOut)
	require.Empty(t, out, "the key goes to the file only")
	info, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	key, err := apikey.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, errOut, key.ID)
}

func TestApikey_BadUsageExits2AndChangesNothing(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "chargeonce.db")
	tests := []struct {
		args []string
		want string
	}{
		{nil, "a subcommand is required"},
		{[]string{"delete"}, `unknown subcommand "delete"`},
		{[]string{"create", "--scopes", "admin"}, `unknown scope "admin"`},
		{[]string{"create", "--scopes", "checkout,checkout"}, `scope "checkout" is given twice`},
		{[]string{"create", "--name", "a\x1bb"}, "control characters"},
		{[]string{"revoke", "--id", "1"}, `--id "1" is not a key's id`},
		{[]string{"revoke", "--id", "0123456789abcdef", "--after", "-1h"}, "negative"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := apikeyCmd(t, dsn, tt.args...)
			require.Equal(t, 2, code)
			require.Contains(t, errOut, tt.want)
		})
	}
	code, out, _ := apikeyCmd(t, dsn, "list")
	require.Equal(t, 0, code)
	require.Equal(t, 1, strings.Count(out, "\n"), "no key was made: %s", out)

	code, _, errOut := apikeyCmd(t, dsn, "revoke", "--id", "0123456789abcdef")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no key has the id 0123456789abcdef")
}

func TestApikey_HelpOfEverySubcommandWritesFlagsWithTwoDashes(t *testing.T) {
	for _, sub := range []string{"create", "list", "revoke"} {
		t.Run(sub, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{sub, "--help"}, func(string) string { return "" }, &stdout, &stderr)
			require.ErrorIs(t, err, flag.ErrHelp)
			require.Contains(t, stderr.String(), "  --database-url ")
			require.Empty(t, helptext.Faults(stderr.String()))
		})
	}
}
