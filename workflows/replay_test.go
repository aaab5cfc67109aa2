package workflows_test

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"chargeonce/workflows"
)

// The histories in testdata were recorded on a real Temporal server by
//
//	go run ./verify/cmd/recordhistories
//
// which runs each payment and refund scenario against the fake provider and
// also writes broken-*.json, a history the workflow can never have produced.
// Regenerate them only for a change that is meant to alter the workflows'
// commands, and put that change behind workflow.GetVersion: the old
// histories must keep replaying, so keep them next to the new ones. See
// testdata/README.md.

func replay(t *testing.T, path string) error {
	t.Helper()
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflow(workflows.PaymentWorkflow)
	replayer.RegisterWorkflow(workflows.RefundWorkflow)
	logger := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	return replayer.ReplayWorkflowHistoryFromJSONFile(logger, path)
}

func TestReplay_RecordedHistoriesReplay(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	var good []string
	for _, p := range paths {
		if !strings.HasPrefix(filepath.Base(p), "broken-") {
			good = append(good, p)
		}
	}
	require.GreaterOrEqual(t, len(good), 6, "recorded histories are missing; run go run ./verify/cmd/recordhistories")
	for _, p := range good {
		t.Run(filepath.Base(p), func(t *testing.T) {
			require.NoError(t, replay(t, p))
		})
	}
}

func TestReplay_BrokenHistoryIsNondeterministic(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "broken-*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			err := replay(t, p)
			require.Error(t, err)
			// TMPRL1100 is the SDK's code for a nondeterminism error.
			require.Contains(t, err.Error(), "TMPRL1100")
		})
	}
}
