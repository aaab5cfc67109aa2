package workflows

import (
	"go.temporal.io/sdk/workflow"

	"chargeonce"
)

// CaptureWorkflow captures one hold exactly once, for the intent's amount:
// the Capture activity sends the capture under the intent's key, one
// activity execution per request, within SendBudget. An approval settles
// it succeeded, and the hold captured; a refusal because of the hold's
// state settles it declined, with the state the provider shows (the hold
// expired or was voided). When no request can have been processed, it
// settles not_processed at once, and the hold is as it was. Anything else
// leaves the outcome unknown, and the hold is read at the provider until
// it tells (move.check). The settled capture is recorded with its hold's
// end, and told to the payment workflow that keeps the hold's deadline.
//
// The "move" update waits for the send phase and answers its outcome. The
// workflow returns the settled outcome; it fails only for an input it
// cannot run.
func CaptureWorkflow(ctx workflow.Context, in MoveInput) (MoveResult, error) {
	return runMove(ctx, chargeonce.MoveCapture, acts.Capture, in)
}
