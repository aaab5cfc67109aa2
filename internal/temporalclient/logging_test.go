package temporalclient

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"chargeonce/internal/syncbuf"
	"chargeonce/workflows"
)

// debugLogger is a process logger at debug level, at which every SDK line
// would be written if the SDK's floor did not hold it back.
func debugLogger() (*slog.Logger, *syncbuf.Buffer) {
	out := &syncbuf.Buffer{}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug})), out
}

func greet(ctx context.Context) error {
	activity.GetLogger(ctx).Debug("activity line")
	return nil
}

func greeter(ctx workflow.Context) error {
	workflow.GetLogger(ctx).Debug("workflow line")
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	return workflow.ExecuteActivity(ctx, greet).Get(ctx, nil)
}

func TestOwnLoggers_WorkflowAndActivityLinesPassAtTheProcessLevel(t *testing.T) {
	logger, out := debugLogger()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdkLogger(logger))
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{&ownLoggers{}}})
	env.RegisterWorkflow(greeter)
	env.RegisterActivity(greet)

	env.ExecuteWorkflow(greeter)

	require.NoError(t, env.GetWorkflowError())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2, "the SDK's own debug lines stay out: %s", out)
	require.Contains(t, lines[0], `msg="workflow line"`)
	require.Contains(t, lines[1], `msg="activity line"`)
	require.Contains(t, lines[1], "ActivityType=greet", "the SDK's tags stay on")
	require.NotContains(t, out.String(), "own=")
}

func TestOwnLoggers_ReplayWritesNoWorkflowLine(t *testing.T) {
	logger, out := debugLogger()
	replayer, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
		Interceptors: []interceptor.WorkerInterceptor{&ownLoggers{}},
	})
	require.NoError(t, err)
	replayer.RegisterWorkflow(workflows.PaymentWorkflow)

	// The run logged a warning (outcome unknown) and an info line
	// (reconciled); a replay must write neither again.
	require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(sdkLogger(logger), "../../workflows/testdata/unknown-reconciled.json"))

	require.Empty(t, out.String())
}
