package stripe

import (
	"context"

	"chargeonce/provider"
)

// Refund sends one refund request. (Skeleton: the adapter's refunds are
// built in its own change.)
func (c *Client) Refund(ctx context.Context, req provider.RefundRequest) provider.RefundResult {
	return provider.RefundResult{Outcome: provider.InvalidRequest, Detail: "refunds are not built yet"}
}

// FindRefunds looks the refunds of a merchant reference up. (Skeleton.)
func (c *Client) FindRefunds(ctx context.Context, chargeID, merchantReference string) ([]provider.Refund, error) {
	return nil, &provider.Error{Op: "find refunds", Outcome: provider.InvalidRequest, Detail: "refunds are not built yet"}
}
