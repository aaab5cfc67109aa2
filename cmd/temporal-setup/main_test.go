package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/helptext"
)

func TestRun_HelpWritesFlagsWithTwoDashes(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, io.Discard, &stderr)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, stderr.String(), "  --retention duration")
	require.Empty(t, helptext.Faults(stderr.String()))
}
