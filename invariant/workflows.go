package invariant

import (
	"context"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// paymentWorkflows selects the payment workflows in visibility.
const paymentWorkflows = "WorkflowType = 'PaymentWorkflow'"

// badEnds are the closed statuses no payment may reach: a payment ends by
// completing, or continues as new.
var badEnds = map[enumspb.WorkflowExecutionStatus]string{
	enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:     "failed",
	enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED: "was terminated",
	enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:   "was cancelled",
	enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:  "timed out",
}

// badTaskFailures are the workflow task failures that mean a bug in the
// workflow code rather than a lost worker: replay diverged from history, or
// the code panicked.
var badTaskFailures = map[enumspb.WorkflowTaskFailedCause]string{
	enumspb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR:           "nondeterminism error",
	enumspb.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE: "workflow code panicked",
}

// Invariant 6: every payment workflow run in visibility, then the histories
// of as many as the limit allows, open runs first, since a run stuck on a
// nondeterminism error stays open.
func (c *checker) workflowsHealthy(ctx context.Context, tc client.Client, limit int) error {
	var runs []*workflowpb.WorkflowExecutionInfo
	var page []byte
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: paymentWorkflows, NextPageToken: page, PageSize: 1000,
		})
		if err != nil {
			return fmt.Errorf("invariant: list payment workflows: %w", err)
		}
		runs = append(runs, resp.GetExecutions()...)
		if page = resp.GetNextPageToken(); len(page) == 0 {
			break
		}
	}
	c.report.Workflows = len(runs)
	var open, closed []*commonpb.WorkflowExecution
	for _, run := range runs {
		if why, bad := badEnds[run.GetStatus()]; bad {
			c.add(c.workflowViolation(run.GetExecution(), "payment workflow "+why))
		}
		if run.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			open = append(open, run.GetExecution())
		} else {
			closed = append(closed, run.GetExecution())
		}
	}
	for _, ex := range append(open, closed...) {
		if c.report.Histories == limit {
			c.report.HistoriesSkipped++
			continue
		}
		c.report.Histories++
		if err := c.readHistory(ctx, tc, ex); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) readHistory(ctx context.Context, tc client.Client, ex *commonpb.WorkflowExecution) error {
	it := tc.GetWorkflowHistory(ctx, ex.GetWorkflowId(), ex.GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return fmt.Errorf("invariant: history of workflow %s: %w", ex.GetWorkflowId(), err)
		}
		if ev.GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED {
			continue
		}
		cause := ev.GetWorkflowTaskFailedEventAttributes().GetCause()
		if why, bad := badTaskFailures[cause]; bad {
			c.add(c.workflowViolation(ex, fmt.Sprintf("workflow task failed at event %d: %s: %s",
				ev.GetEventId(), why, ev.GetWorkflowTaskFailedEventAttributes().GetFailure().GetMessage())))
		}
	}
	return nil
}

// workflowViolation names the attempt behind a workflow: its ID is the key.
func (c *checker) workflowViolation(ex *commonpb.WorkflowExecution, msg string) Violation {
	key := ex.GetWorkflowId()
	v := Violation{Invariant: WorkflowsHealthy, Key: key, Message: msg + " (run " + ex.GetRunId() + ")"}
	if a, ok := c.attempts[key]; ok {
		v.Order = a.OrderID
	}
	return v
}
