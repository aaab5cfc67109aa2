package workflows_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

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
	env.OnActivity(s.StageReport, mock.Anything, activities.StageReportInput{Date: "2026-03-14"}).
		Return(activities.StageReportResult{Lines: 3}, nil).Once()
	var match activities.MatchReportInput
	env.OnActivity(s.MatchReport, mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		match = args.Get(1).(activities.MatchReportInput)
	}).Return(activities.MatchReportResult{Status: "final", Lines: 3, Matched: 3}, nil).Once()

	env.ExecuteWorkflow(workflows.SettlementWorkflow, workflows.SettlementInput{Date: "2026-03-14"})

	require.NoError(t, env.GetWorkflowError())
	var res workflows.SettlementResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, "2026-03-14 final: 3 lines, 3 matched, 0 awaiting their report, no exceptions", res.Summary())
	require.Equal(t, "2026-03-14", match.Date)
	require.NotEmpty(t, match.RunID)
}

func TestDailySettlementWorkflow_SettlesTheDayBeforeItWasDueThenTheGraceDays(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(workflows.SettlementWorkflow)
	var settled []workflows.SettlementInput
	env.OnWorkflow(workflows.SettlementWorkflow, mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		settled = append(settled, args.Get(1).(workflows.SettlementInput))
	}).Return(workflows.SettlementResult{}, nil)
	// A backfill of the action due at 00:30 on 2026-03-15, run long after.
	due := time.Date(2026, 3, 15, 0, 30, 0, 0, time.UTC)
	require.NoError(t, env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(
		temporal.NewSearchAttributeKeyTime("TemporalScheduledStartTime").ValueSet(due))))
	env.SetStartTime(due.AddDate(0, 1, 0))

	env.ExecuteWorkflow(workflows.DailySettlementWorkflow, workflows.DailySettlementInput{GraceDays: 2})

	require.NoError(t, env.GetWorkflowError())
	var res workflows.DailySettlementResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, []string{"2026-03-14", "2026-03-13", "2026-03-12"}, res.Dates)
	require.Equal(t, []workflows.SettlementInput{{Date: "2026-03-14"}, {Date: "2026-03-13"}, {Date: "2026-03-12"}}, settled)
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
