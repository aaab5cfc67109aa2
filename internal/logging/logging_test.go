package logging_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/logging"
)

func TestNew_RefusesUnknownFormatAndLevel(t *testing.T) {
	_, err := logging.New(new(bytes.Buffer), "xml", "info")
	require.ErrorContains(t, err, `log format "xml"`)
	_, err = logging.New(new(bytes.Buffer), "text", "loud")
	require.ErrorContains(t, err, `log level "loud"`)
}

func TestNew_JSONAtLevel(t *testing.T) {
	out := new(bytes.Buffer)
	l, err := logging.New(out, "json", "warn")
	require.NoError(t, err)
	l.Info("hidden")
	l.Warn("shown", "key", "k1")
	require.NotContains(t, out.String(), "hidden")
	require.Contains(t, out.String(), `"msg":"shown","key":"k1"`)
}

func TestAtLeast_DropsRecordsBelowTheLevel(t *testing.T) {
	out := new(bytes.Buffer)
	base := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l := logging.AtLeast(base, slog.LevelWarn).With("part", "temporal")
	l.Info("poll")
	l.Error("boom")
	require.NotContains(t, out.String(), "poll")
	require.Contains(t, out.String(), "boom")
	require.Contains(t, out.String(), "part=temporal")
}

func TestAtLeast_OwnLoggerPassesAtTheLevelUnderneath(t *testing.T) {
	out := new(bytes.Buffer)
	base := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	sdk := logging.AtLeast(base, slog.LevelWarn)
	app := sdk.With("WorkflowType", "PaymentWorkflow", logging.Own()).With("key", "k1")

	sdk.Info("sdk chatter", "WorkflowType", "PaymentWorkflow")
	app.Debug("below the level underneath")
	app.Info("reconciled")

	require.NotContains(t, out.String(), "sdk chatter")
	require.NotContains(t, out.String(), "below the level underneath")
	require.Contains(t, out.String(), `msg=reconciled WorkflowType=PaymentWorkflow key=k1`)
	require.NotContains(t, out.String(), "own=", "the mark is not written")
}

func TestAtLeast_AnAttributeNamedOwnIsNoMark(t *testing.T) {
	out := new(bytes.Buffer)
	base := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	logging.AtLeast(base, slog.LevelWarn).With("own", true).Info("sdk chatter")
	require.Empty(t, out.String())
}
