package workflows

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Versioning is the Worker Versioning behaviour of every workflow type:
// pinned, so that a run is carried to its end by workers of the version it
// started on, and a new version's code never replays a history that an
// older version wrote.
//
// Pinned suits a type whose runs end within the time that an old version's
// workers are kept after a new one becomes current, and every type here
// does: a payment ends by its AbandonAfter, a refund within the key
// retention that bounds its window, a settlement run once its report is
// matched (its activities are bounded by SettlementActivityTimeout and
// their retries), and a daily run with its dates' settlements. The rollout
// keeps the old workers until no open run is pinned to them
// (docs/operations.md, "Deploying a new version"). A run that continues as
// new stays on its version, as Temporal pins the new run to the version of
// the run it continues.
//
// The workflow.GetVersion gates that predate versioning stay until their
// old branches can no longer be replayed; docs/design.md ("Deploying new
// workflow code") says when a gate is still needed.
const Versioning = workflow.VersioningBehaviorPinned

// registerWorkflow registers wf with r under its function's name and the
// versioning behaviour of every type.
func registerWorkflow(r worker.WorkflowRegistry, wf any) {
	r.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{VersioningBehavior: Versioning})
}
