package provider

import "context"

// Refund sends one refund request through the breaker. (Skeleton: the
// breaker's refunds are built with the adapters'.)
func (b *Breaker) Refund(ctx context.Context, req RefundRequest) RefundResult {
	return b.port.Refund(ctx, req)
}

// FindRefunds looks refunds up through the breaker. (Skeleton.)
func (b *Breaker) FindRefunds(ctx context.Context, chargeID, merchantReference string) ([]Refund, error) {
	return b.port.FindRefunds(ctx, chargeID, merchantReference)
}
