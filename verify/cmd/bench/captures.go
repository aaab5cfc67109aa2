package main

import (
	"context"
	"fmt"
	"strconv"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/hold"
	"chargeonce/workflows"
)

// captures checks orders out with a manual capture, which authorizes a
// hold and leaves the payment workflow keeping it, then captures each
// hold whole, one at a time, through the hold service the API calls: the
// captures' latency and CPU stand beside the checkouts' at concurrency 1,
// and the histories of a captured hold, its payment's and its capture's
// workflows together, beside a paid checkout's.
func (b *bench) captures(ctx context.Context, _ []system) error {
	return b.runFollowUp(ctx, followUp{
		name:    "capture",
		capture: checkout.Capture{Mode: chargeonce.CaptureManual},
		want:    checkout.OutcomeAuthorized,
		run: func(ctx context.Context, orderID int64) ([]string, error) {
			res, err := b.st.Holds().Move(ctx, hold.Request{
				Kind: chargeonce.MoveCapture, OrderID: orderID,
				RequestKey: "bench-capture-" + strconv.FormatInt(orderID, 10),
			})
			if err != nil {
				return nil, err
			}
			if res.Move.Status != chargeonce.MoveSucceeded {
				return nil, fmt.Errorf("order %d: capture answered %s", orderID, res.Move.Status)
			}
			// The capture tells the payment, which then ends: both
			// histories are the hold's.
			return []string{workflows.WorkflowID(res.Move.AttemptKey), workflows.MoveWorkflowID(res.Move.Key)}, nil
		},
		roles:        []string{"payment", "capture"},
		does:         "whole captures of authorized holds through hold.Service.Move, the service the API calls",
		eventsMetric: "events per captured hold",
		endsAll:      true,
	})
}
