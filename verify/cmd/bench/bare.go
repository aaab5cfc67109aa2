package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// bareTaskQueue is the task queue of the bare reference workflow, polled by
// its own worker so that it never competes with the payment worker's slots.
const bareTaskQueue = "chargeonce-bench-bare"

// BareInput is the input of BareWorkflow and BareActivity.
type BareInput struct {
	// Sleep is how long the activity takes, standing in for the provider's
	// processing time.
	Sleep time.Duration `json:"sleep"`
}

// BareResult is the result of BareWorkflow and BareActivity.
type BareResult struct {
	Done bool `json:"done"`
}

// BareWorkflow is the reference: the least a workflow with one activity
// costs on the same server, client and payload codec as the payment.
func BareWorkflow(ctx workflow.Context, in BareInput) (BareResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var res BareResult
	err := workflow.ExecuteActivity(ctx, BareActivity, in).Get(ctx, &res)
	return res, err
}

// BareActivity waits in.Sleep and succeeds.
func BareActivity(ctx context.Context, in BareInput) (BareResult, error) {
	if in.Sleep > 0 {
		t := time.NewTimer(in.Sleep)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return BareResult{}, ctx.Err()
		}
	}
	return BareResult{Done: true}, nil
}

// bareRunner starts bare workflows and waits for their results.
type bareRunner struct {
	client client.Client
	worker sdkworker.Worker
	eager  bool
	// asked counts the results asked for again: the server had missed
	// their workflow's close.
	asked atomic.Int64
}

// resultPoll is how often a bare workflow whose result has not come is
// described. The server now and then misses the close of a workflow whose
// result a client waits for (GetWorkflowExecutionHistory, waiting for the
// close event), and answers only when the 20-second long poll expires. One
// such wait held a whole closed-loop phase at concurrency 1 (17 workflows
// in 3 seconds, then nothing), a reference slow for a reason of its own. A
// workflow found closed with its result still missing is asked again, which
// the server answers at once.
const resultPoll = time.Second

func startBare(c client.Client, opts sdkworker.Options, eager bool) (*bareRunner, error) {
	w := sdkworker.New(c, bareTaskQueue, opts)
	w.RegisterWorkflow(BareWorkflow)
	w.RegisterActivity(BareActivity)
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start the bare workflow's worker: %w", err)
	}
	return &bareRunner{client: c, worker: w, eager: eager}, nil
}

func (b *bareRunner) stop() { b.worker.Stop() }

// run starts one bare workflow, waits for its result and returns its ID.
func (b *bareRunner) run(ctx context.Context, sleep time.Duration) (string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	run, err := b.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:               "bench-bare-" + id.String(),
		TaskQueue:        bareTaskQueue,
		EnableEagerStart: b.eager,
	}, BareWorkflow, BareInput{Sleep: sleep})
	if err != nil {
		return "", fmt.Errorf("start the bare workflow: %w", err)
	}
	res, err := b.result(ctx, run)
	if err != nil {
		return "", fmt.Errorf("bare workflow %s: %w", run.GetID(), err)
	}
	if !res.Done {
		return "", fmt.Errorf("bare workflow %s: activity did not finish", run.GetID())
	}
	return run.GetID(), nil
}

// result waits for the run's result, and asks for it again when the run is
// found closed without it (see resultPoll).
func (b *bareRunner) result(ctx context.Context, run client.WorkflowRun) (BareResult, error) {
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	var res BareResult
	got := make(chan error, 1)
	go func() { got <- run.Get(waitCtx, &res) }()
	tick := time.NewTicker(resultPoll)
	defer tick.Stop()
	for {
		select {
		case err := <-got:
			return res, err
		case <-ctx.Done():
			return BareResult{}, ctx.Err()
		case <-tick.C:
			d, err := b.client.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
			if err != nil || d.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
				continue
			}
			stopWaiting()
			<-got
			b.asked.Add(1)
			res = BareResult{}
			err = run.Get(ctx, &res)
			return res, err
		}
	}
}
