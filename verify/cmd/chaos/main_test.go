package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/cli"
	"chargeonce/internal/helptext"
)

func TestRun_RefusesBadDatabaseFlagsBeforeBuildingAnything(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"restarts without PostgreSQL", []string{"--postgres-restarts", "2"}, nil, "PostgreSQL restarts need a PostgreSQL database URL"},
		{"a database URL that is not PostgreSQL", []string{"--database-url", "mysql://u@h/db"}, nil, "the database URL must start with postgres:// or postgresql://"},
		{"the same from the environment", nil, map[string]string{"CHARGEONCE_DATABASE_URL": "mysql://u@h/db"}, "the database URL must start with postgres:// or postgresql://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, func(k string) string { return tc.env[k] }, io.Discard, io.Discard)
			var usage cli.UsageError
			require.ErrorAs(t, err, &usage)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestRun_HelpWritesFlagsWithTwoDashes(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, io.Discard, &stderr)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, stderr.String(), "  --database-url URL")
	require.Empty(t, helptext.Faults(stderr.String()))
}
