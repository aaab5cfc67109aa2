package workflows

import (
	"go.temporal.io/sdk/workflow"

	"chargeonce"
)

// VoidWorkflow releases one hold exactly once, as CaptureWorkflow captures
// one, through the Void activity: an approval leaves the hold voided, and
// the customer is charged nothing.
func VoidWorkflow(ctx workflow.Context, in MoveInput) (MoveResult, error) {
	return runMove(ctx, chargeonce.MoveVoid, acts.Void, in)
}
