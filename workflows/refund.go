package workflows

import (
	"errors"

	"go.temporal.io/sdk/workflow"

	"chargeonce"
)

// RefundInput is the input of RefundWorkflow.
type RefundInput struct {
	// Intent is the refund to send.
	Intent chargeonce.RefundIntent `json:"intent"`
	// Timing is how long to wait for what, as for payments; zero fields
	// take DefaultTiming's values.
	Timing Timing `json:"timing"`
}

// RefundResult is the outcome of a refund, returned by the workflow and by
// the "refund" update.
type RefundResult struct {
	// Status is the refund's status; RefundPending means the outcome is
	// still unknown and the refund is being looked up at the provider.
	Status chargeonce.RefundStatus `json:"status"`
	// ProviderRefundID is the provider's refund id, when there is one.
	ProviderRefundID string `json:"providerRefundId,omitempty"`
	// FailureReason is the provider's reason for a failed refund.
	FailureReason string `json:"failureReason,omitempty"`
	// Message says what happened, for people.
	Message string `json:"message,omitempty"`
}

// RefundEvent is the payload of the "refund-event" signal: the provider
// reported the refund (by webhook). As for charges, the signal only makes
// the workflow look the refund up at once.
type RefundEvent struct {
	// RefundID is the provider's refund id from the event.
	RefundID string `json:"refundId"`
	// Type is the event type, such as refund.failed.
	Type string `json:"type"`
}

// RefundWorkflowID is the ID of the refund workflow of the intent with this
// key: the key itself, as for payments.
func RefundWorkflowID(key string) string {
	return key
}

// RefundWorkflow refunds one refund intent exactly once. (Skeleton: the
// workflow is built in its own change.)
func RefundWorkflow(ctx workflow.Context, in RefundInput) (RefundResult, error) {
	return RefundResult{}, errors.New("refunds are not built yet")
}
