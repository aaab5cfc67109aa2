package workflows

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// NewReplayer returns a replayer of every workflow type that the worker
// runs, registered as the worker registers them (Register and
// RegisterSettlement). options must carry the data converter of the
// clients that wrote the histories to replay: the workflows decode their
// input and their activities' results as they replay.
func NewReplayer(options worker.WorkflowReplayerOptions) (worker.WorkflowReplayer, error) {
	r, err := worker.NewWorkflowReplayerWithOptions(options)
	if err != nil {
		return nil, err
	}
	registerPaymentWorkflows(r)
	registerSettlementWorkflows(r)
	return r, nil
}

// Run is the history of one workflow run.
type Run struct {
	Execution workflow.Execution
	// Type is the run's workflow type.
	Type    string
	History *historypb.History
}

// ReplayFailure is a run whose history today's code does not replay.
type ReplayFailure struct {
	Run Run
	// Err says why: a nondeterminism error (TMPRL1100) names the event that
	// today's code does not reproduce.
	Err error
}

func (f ReplayFailure) String() string {
	return fmt.Sprintf("%s %s (run %s): %v", f.Run.Type, f.Run.Execution.ID, f.Run.Execution.RunID, f.Err)
}

// FetchRuns returns the history of every run, open or closed, that the
// visibility query matches; an empty query matches every run of the
// client's namespace.
func FetchRuns(ctx context.Context, c client.Client, query string) ([]Run, error) {
	var runs []Run
	req := &workflowservice.ListWorkflowExecutionsRequest{Query: query}
	for {
		resp, err := c.ListWorkflow(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("list workflows %q: %w", query, err)
		}
		for _, info := range resp.GetExecutions() {
			execution := workflow.Execution{ID: info.GetExecution().GetWorkflowId(), RunID: info.GetExecution().GetRunId()}
			history, err := fetchHistory(ctx, c, execution)
			if err != nil {
				return nil, err
			}
			runs = append(runs, Run{Execution: execution, Type: info.GetType().GetName(), History: history})
		}
		if len(resp.GetNextPageToken()) == 0 {
			return runs, nil
		}
		req.NextPageToken = resp.GetNextPageToken()
	}
}

// fetchHistory reads the whole history of one run, page by page.
func fetchHistory(ctx context.Context, c client.Client, execution workflow.Execution) (*historypb.History, error) {
	history := &historypb.History{}
	events := c.GetWorkflowHistory(ctx, execution.ID, execution.RunID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for events.HasNext() {
		e, err := events.Next()
		if err != nil {
			return nil, fmt.Errorf("history of workflow %s (run %s): %w", execution.ID, execution.RunID, err)
		}
		history.Events = append(history.Events, e)
	}
	return history, nil
}

// Replay replays each run with replayer, as the run it is, and returns
// those whose histories today's code does not reproduce. A run still open
// replays up to its last event.
func Replay(replayer worker.WorkflowReplayer, runs []Run) []ReplayFailure {
	// What the workflows log while they replay says nothing about the
	// replay; a failure is in its error.
	quiet := log.NewStructuredLogger(slog.New(slog.DiscardHandler))
	var failed []ReplayFailure
	for _, run := range runs {
		err := replayer.ReplayWorkflowHistoryWithOptions(quiet, run.History,
			worker.ReplayWorkflowHistoryOptions{OriginalExecution: run.Execution})
		if err != nil {
			failed = append(failed, ReplayFailure{Run: run, Err: err})
		}
	}
	return failed
}
