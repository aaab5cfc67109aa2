package workflows_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"chargeonce/workflows"
)

// The histories in testdata were recorded on a real Temporal server by
//
//	go run ./verify/cmd/recordhistories
//
// which runs each payment, refund and hold scenario against the fake
// provider and also writes broken-*.json, a history the workflow can never
// have produced.
// Regenerate them only for a change that is meant to alter the workflows'
// commands, and put that change behind workflow.GetVersion: the old
// histories must keep replaying, so keep them next to the new ones. See
// testdata/README.md. tests/devstack_test.go replays, the same way, every
// history of a short run of the dev stack.

// corpus reads the recorded histories named by paths, each as a run whose
// workflow ID is its file's name, so that a failure names the file.
func corpus(t *testing.T, paths []string) []workflows.Run {
	t.Helper()
	runs := make([]workflows.Run, 0, len(paths))
	for _, p := range paths {
		f, err := os.Open(p)
		require.NoError(t, err)
		history, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
		require.NoError(t, f.Close())
		require.NoError(t, err, "%s", p)
		started := history.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
		require.NotNil(t, started, "%s starts with its workflow's start", p)
		runs = append(runs, workflows.Run{Execution: workflow.Execution{ID: filepath.Base(p)},
			Type: started.GetWorkflowType().GetName(), History: history})
	}
	return runs
}

// newReplayer is the replayer of the recorded histories, whose payloads
// are in the clear: they were recorded without the worker's codec.
func newReplayer(t *testing.T) worker.WorkflowReplayer {
	t.Helper()
	r, err := workflows.NewReplayer(worker.WorkflowReplayerOptions{})
	require.NoError(t, err)
	return r
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
	runs := corpus(t, good)
	// Every workflow type that the payment worker runs has histories of
	// its own, so that none of them changes its commands unseen.
	recorded := map[string]bool{}
	for _, r := range runs {
		recorded[r.Type] = true
	}
	for _, wf := range []string{"PaymentWorkflow", "RefundWorkflow", "CaptureWorkflow", "VoidWorkflow"} {
		require.True(t, recorded[wf], "no recorded history of %s; run go run ./verify/cmd/recordhistories", wf)
	}
	require.Empty(t, workflows.Replay(newReplayer(t), runs))
}

func TestReplay_BrokenHistoryIsNondeterministic(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "broken-*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	runs := corpus(t, paths)
	failed := workflows.Replay(newReplayer(t), runs)
	require.Len(t, failed, len(runs), "every broken history fails")
	for _, f := range failed {
		// TMPRL1100 is the SDK's code for a nondeterminism error.
		require.Contains(t, f.Err.Error(), "TMPRL1100", "%s", f)
	}
}
