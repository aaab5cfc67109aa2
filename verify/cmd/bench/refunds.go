package main

import (
	"context"
	"fmt"
	"strconv"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/refund"
	"chargeonce/workflows"
)

const refundReason = "bench refund"

// refunds refunds paid orders whole, one at a time, through the refund
// service the API calls: the refunds' latency and CPU stand beside the
// checkouts' at concurrency 1, and the history of a succeeded refund's
// workflow beside a paid checkout's.
func (b *bench) refunds(ctx context.Context, _ []system) error {
	return b.runFollowUp(ctx, followUp{
		name: "refund",
		want: checkout.OutcomePaid,
		run: func(ctx context.Context, orderID int64) ([]string, error) {
			res, err := b.st.Refunds().Refund(ctx, refund.Request{
				OrderID: orderID, Reason: refundReason,
				RequestKey: "bench-refund-" + strconv.FormatInt(orderID, 10),
			})
			if err != nil {
				return nil, err
			}
			if res.Refund.Status != chargeonce.RefundSucceeded {
				return nil, fmt.Errorf("order %d: refund answered %s", orderID, res.Refund.Status)
			}
			return []string{workflows.RefundWorkflowID(res.Refund.Key)}, nil
		},
		roles:        []string{"refund"},
		does:         "whole refunds of paid orders through refund.Service.Refund, the service the API calls",
		eventsMetric: "events per succeeded refund",
	})
}
