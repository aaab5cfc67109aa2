package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"chargeonce/activities"
	"chargeonce/workflows"
)

func TestSettlementWorkflow_BadInputFailsAtOnceAndRunsNothing(t *testing.T) {
	for _, in := range []workflows.SettlementInput{{Date: "2026-02-30"}, {Date: "yesterday"}} {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		env.RegisterWorkflow(workflows.SettlementWorkflow)

		env.ExecuteWorkflow(workflows.SettlementWorkflow, in)

		require.True(t, env.IsWorkflowCompleted())
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(env.GetWorkflowError(), &appErr), "%v", env.GetWorkflowError())
		require.Equal(t, workflows.ErrTypeBadSettlementInput, appErr.Type())
		require.True(t, appErr.NonRetryable())
	}
}

func TestSettlementWorkflow_StagesThenMatchesUnderItsRunID(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	s := &activities.Settlement{}
	env.RegisterActivity(s)
	env.OnActivity(s.StageReport, mock.Anything, activities.StageReportInput{Provider: "backup", Date: "2026-03-14"}).
		Return(activities.StageReportResult{Lines: 3}, nil).Once()
	var match activities.MatchReportInput
	env.OnActivity(s.MatchReport, mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		match = args.Get(1).(activities.MatchReportInput)
	}).Return(activities.MatchReportResult{Status: "final", Lines: 3, Matched: 3}, nil).Once()

	env.ExecuteWorkflow(workflows.SettlementWorkflow, workflows.SettlementInput{Provider: "backup", Date: "2026-03-14"})

	require.NoError(t, env.GetWorkflowError())
	var res workflows.SettlementResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, "backup 2026-03-14 final: 3 lines, 3 matched, 0 awaiting their report, no exceptions", res.Summary())
	require.Equal(t, "backup", match.Provider)
	require.Equal(t, "2026-03-14", match.Date)
	require.NotEmpty(t, match.RunID)
}

// dailyRun runs DailySettlementWorkflow on a worker whose grace period is
// graceDays, as the schedule's backfill of the action due at 00:30 on
// 2026-03-15 would, long after, and returns the dates it settled and how
// often it asked the worker for the grace period. Each date is settled for
// the input's provider, under that provider's date's workflow ID.
func dailyRun(t *testing.T, graceDays int, in workflows.DailySettlementInput, setup func(*testsuite.TestWorkflowEnvironment)) ([]string, int) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	workflows.RegisterSettlement(env, &activities.Settlement{GraceDays: graceDays})
	var settled []string
	env.OnWorkflow(workflows.SettlementWorkflow, mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		child := args.Get(1).(workflows.SettlementInput)
		require.Equal(t, in.Provider, child.Provider)
		require.Equal(t, workflows.SettlementWorkflowID(in.Provider, child.Date), workflow.GetInfo(args.Get(0).(workflow.Context)).WorkflowExecution.ID)
		settled = append(settled, child.Date)
	}).Return(workflows.SettlementResult{}, nil)
	asked := 0
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		if info.ActivityType.Name == "GracePeriod" {
			asked++
		}
	})
	due := time.Date(2026, 3, 15, 0, 30, 0, 0, time.UTC)
	require.NoError(t, env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(
		temporal.NewSearchAttributeKeyTime("TemporalScheduledStartTime").ValueSet(due))))
	env.SetStartTime(due.AddDate(0, 1, 0))
	if setup != nil {
		setup(env)
	}

	env.ExecuteWorkflow(workflows.DailySettlementWorkflow, in)

	require.NoError(t, env.GetWorkflowError())
	var res workflows.DailySettlementResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, settled, res.Dates)
	return res.Dates, asked
}

func TestDailySettlementWorkflow_SettlesTheDayBeforeItWasDueThenTheWorkersGraceDays(t *testing.T) {
	dates, asked := dailyRun(t, 2, workflows.DailySettlementInput{Provider: "backup"}, nil)

	require.Equal(t, []string{"2026-03-14", "2026-03-13", "2026-03-12"}, dates)
	require.Equal(t, 1, asked)
}

// Each provider's settlement of a date has an ID of its own; the runs of
// the one schedule from before, which named no provider, keep the date's.
func TestSettlementWorkflowID_IsEachProvidersOwn(t *testing.T) {
	require.Equal(t, "settlement-backup-2026-03-14", workflows.SettlementWorkflowID("backup", "2026-03-14"))
	require.Equal(t, "settlement-default-2026-03-14", workflows.SettlementWorkflowID("default", "2026-03-14"))
	require.Equal(t, "settlement-2026-03-14", workflows.SettlementWorkflowID("", "2026-03-14"))
}

// A schedule created before the grace period became the worker's alone
// passes one in its argument until a worker's start updates it: the
// worker's own wins.
func TestDailySettlementWorkflow_TheWorkersGraceDaysWinOverAnOldScheduleArgument(t *testing.T) {
	dates, _ := dailyRun(t, 1, workflows.DailySettlementInput{GraceDays: 5}, nil)

	require.Equal(t, []string{"2026-03-14", "2026-03-13"}, dates)
}

// A run started before the change replays with its schedule's argument,
// without asking the worker: the SDK answers its GetVersion with
// DefaultVersion, as on the replay of a history without the marker. The
// change ID is the one in histories, so it is spelt out here.
func TestDailySettlementWorkflow_ARunFromBeforeTheWorkersGracePeriodKeepsItsArgument(t *testing.T) {
	dates, asked := dailyRun(t, 0, workflows.DailySettlementInput{GraceDays: 2}, func(env *testsuite.TestWorkflowEnvironment) {
		env.OnGetVersion("workers-grace-period", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	})

	require.Equal(t, []string{"2026-03-14", "2026-03-13", "2026-03-12"}, dates)
	require.Zero(t, asked)
}

// A run started before the grace period became the worker's carried it in
// its input: the input still decodes, and the run settles its date.
func TestSettlementWorkflow_AnInputWithTheOldGraceDaysStillDecodes(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(workflows.SettlementWorkflow)
	s := &activities.Settlement{}
	env.RegisterActivity(s)
	env.OnActivity(s.StageReport, mock.Anything, activities.StageReportInput{Date: "2026-03-14"}).
		Return(activities.StageReportResult{Lines: 1}, nil).Once()
	env.OnActivity(s.MatchReport, mock.Anything, mock.Anything).
		Return(activities.MatchReportResult{Status: "final", Lines: 1, Matched: 1}, nil).Once()
	old := struct {
		Date      string
		GraceDays int
	}{"2026-03-14", 5}

	env.ExecuteWorkflow("SettlementWorkflow", old)

	require.NoError(t, env.GetWorkflowError())
	var res workflows.SettlementResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, "2026-03-14", res.Date)
}
