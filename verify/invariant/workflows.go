package invariant

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"
)

// paymentWorkflowType is the type name of the payment workflows, the only
// ones visibility is asked about.
const paymentWorkflowType = "PaymentWorkflow"

// paymentWorkflows selects the payment workflows in visibility.
const paymentWorkflows = "WorkflowType = '" + paymentWorkflowType + "'"

// DefaultVisibilityWait is how long Check waits for visibility to list
// every payment workflow it read by ID when Config.VisibilityWait is zero.
const DefaultVisibilityWait = time.Minute

// readConcurrency bounds the describe and history calls in flight. The
// embedded server answers about 450 describes a second on 2 cores whether 4
// or 64 are in flight (10,000 open workflows take some 20 s), so a few hide
// the round trips, and more would only crowd a server still in use.
const readConcurrency = 8

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

// Invariant 6, over the current run of every payment workflow: its status,
// then the histories of as many as the limit allows, open runs first, since
// a run stuck on a nondeterminism error stays open.
//
// Visibility lags behind: a workflow closed a moment ago may still be listed
// as running, or one just started not at all. Only a closed run it lists is
// settled; every other attempt's workflow is read by its ID, the attempt's
// key, where Temporal answers with what it holds now. Visibility also finds
// the payment workflows no attempt leads to, once it lists every workflow
// found by ID.
func (c *checker) workflowsHealthy(ctx context.Context, tc client.Client, limit int, wait time.Duration) error {
	listed, err := listPaymentWorkflows(ctx, tc)
	if err != nil {
		return err
	}
	runs, err := current(ctx, tc, sortedKeys(c.attempts), listed)
	if err != nil {
		return err
	}
	listed, err = waitListed(ctx, tc, listed, runs, wait)
	if err != nil {
		return err
	}
	var strays []string
	for _, id := range sortedKeys(listed) {
		if _, read := runs[id]; !read {
			strays = append(strays, id)
		}
	}
	more, err := current(ctx, tc, strays, listed)
	if err != nil {
		return err
	}
	for id, run := range more {
		runs[id] = run
	}

	c.report.Workflows = len(runs)
	var open, closed []*workflowpb.WorkflowExecutionInfo
	for _, id := range sortedKeys(runs) {
		run := runs[id]
		if why, bad := badEnds[run.GetStatus()]; bad {
			c.add(c.workflowViolation(run, "payment workflow "+why))
		}
		if run.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			open = append(open, run)
		} else {
			closed = append(closed, run)
		}
	}
	read := append(open, closed...)
	if len(read) > limit {
		c.report.HistoriesSkipped = len(read) - limit
		read = read[:limit]
	}
	c.report.Histories = len(read)
	found := make([][]Violation, len(read))
	err = inParallel(ctx, len(read), func(ctx context.Context, i int) error {
		vs, err := c.historyViolations(ctx, tc, read[i])
		found[i] = vs
		return err
	})
	if err != nil {
		return err
	}
	for _, vs := range found {
		c.report.Violations = append(c.report.Violations, vs...)
	}
	return nil
}

// current returns the current run of each workflow ID: the run visibility
// lists for it when that is its only run and it has ended for good (a
// record of a closed run is final), and otherwise what describing the ID
// answers. Settled workflows, most of them after a run, cost no call.
func current(ctx context.Context, tc client.Client, ids []string, listed map[string][]*workflowpb.WorkflowExecutionInfo) (map[string]*workflowpb.WorkflowExecutionInfo, error) {
	runs := make(map[string]*workflowpb.WorkflowExecutionInfo, len(ids))
	var unsettled []string
	for _, id := range ids {
		if r := listed[id]; len(r) == 1 && endedForGood(r[0].GetStatus()) {
			runs[id] = r[0]
		} else {
			unsettled = append(unsettled, id)
		}
	}
	described, err := describe(ctx, tc, unsettled)
	if err != nil {
		return nil, err
	}
	for id, run := range described {
		runs[id] = run
	}
	return runs, nil
}

// endedForGood reports whether a run with this status is closed and has no
// successor: a run that continued as new has one.
func endedForGood(status enumspb.WorkflowExecutionStatus) bool {
	return status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING &&
		status != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
}

// describe reads the current run of each workflow ID. An ID with no
// workflow is left out: an attempt whose start was lost has none yet.
func describe(ctx context.Context, tc client.Client, ids []string) (map[string]*workflowpb.WorkflowExecutionInfo, error) {
	infos := make([]*workflowpb.WorkflowExecutionInfo, len(ids))
	err := inParallel(ctx, len(ids), func(ctx context.Context, i int) error {
		resp, err := tc.DescribeWorkflowExecution(ctx, ids[i], "")
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound):
			return nil
		case err != nil:
			return fmt.Errorf("invariant: describe workflow %s: %w", ids[i], err)
		}
		infos[i] = resp.GetWorkflowExecutionInfo()
		return nil
	})
	if err != nil {
		return nil, err
	}
	runs := make(map[string]*workflowpb.WorkflowExecutionInfo, len(ids))
	for i, info := range infos {
		if info != nil {
			runs[ids[i]] = info
		}
	}
	return runs, nil
}

// inParallel calls f for 0..n-1, readConcurrency at a time, and returns the
// first error.
func inParallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(readConcurrency)
	for i := range n {
		g.Go(func() error { return f(ctx, i) })
	}
	return g.Wait()
}

// waitListed returns listed, or visibility read again until it lists every
// payment workflow of known, and fails when it has not caught up within
// wait.
func waitListed(ctx context.Context, tc client.Client, listed map[string][]*workflowpb.WorkflowExecutionInfo, known map[string]*workflowpb.WorkflowExecutionInfo, wait time.Duration) (map[string][]*workflowpb.WorkflowExecutionInfo, error) {
	var want []string
	for id, run := range known {
		if run.GetType().GetName() == paymentWorkflowType {
			want = append(want, id)
		}
	}
	sort.Strings(want)
	deadline := time.Now().Add(wait)
	pause := 50 * time.Millisecond
	for {
		var missing []string
		for _, id := range want {
			if len(listed[id]) == 0 {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			return listed, nil
		}
		if time.Now().Add(pause).After(deadline) {
			return nil, fmt.Errorf("invariant: after %s visibility still lacks %d of the %d payment workflows read by ID (%s), so the workflows no attempt leads to cannot be listed",
				wait, len(missing), len(want), firstFew(missing))
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("invariant: waiting for visibility to list %d payment workflows: %w", len(missing), ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
		var err error
		if listed, err = listPaymentWorkflows(ctx, tc); err != nil {
			return nil, err
		}
	}
}

// listPaymentWorkflows returns every payment workflow run in visibility, by
// workflow ID.
func listPaymentWorkflows(ctx context.Context, tc client.Client) (map[string][]*workflowpb.WorkflowExecutionInfo, error) {
	runs := map[string][]*workflowpb.WorkflowExecutionInfo{}
	var page []byte
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: paymentWorkflows, NextPageToken: page, PageSize: 1000,
		})
		if err != nil {
			return nil, fmt.Errorf("invariant: list payment workflows: %w", err)
		}
		for _, run := range resp.GetExecutions() {
			id := run.GetExecution().GetWorkflowId()
			runs[id] = append(runs[id], run)
		}
		if page = resp.GetNextPageToken(); len(page) == 0 {
			return runs, nil
		}
	}
}

// firstFew names up to three IDs, for an error message.
func firstFew(ids []string) string {
	if len(ids) <= 3 {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:3], ", ") + fmt.Sprintf(" and %d more", len(ids)-3)
}

// historyViolations reads the history of one run for workflow task failures
// that mean a bug.
func (c *checker) historyViolations(ctx context.Context, tc client.Client, run *workflowpb.WorkflowExecutionInfo) ([]Violation, error) {
	ex := run.GetExecution()
	var found []Violation
	it := tc.GetWorkflowHistory(ctx, ex.GetWorkflowId(), ex.GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("invariant: history of workflow %s: %w", ex.GetWorkflowId(), err)
		}
		if ev.GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED {
			continue
		}
		cause := ev.GetWorkflowTaskFailedEventAttributes().GetCause()
		if why, bad := badTaskFailures[cause]; bad {
			found = append(found, c.workflowViolation(run, fmt.Sprintf("workflow task failed at event %d: %s: %s",
				ev.GetEventId(), why, ev.GetWorkflowTaskFailedEventAttributes().GetFailure().GetMessage())))
		}
	}
	return found, nil
}

// workflowViolation names the attempt behind a workflow: its ID is the key.
func (c *checker) workflowViolation(run *workflowpb.WorkflowExecutionInfo, msg string) Violation {
	ex := run.GetExecution()
	key := ex.GetWorkflowId()
	v := Violation{Invariant: WorkflowsHealthy, Key: key, Message: msg + " (run " + ex.GetRunId() + ")"}
	if a, ok := c.attempts[key]; ok {
		v.Order = a.OrderID
	}
	return v
}
