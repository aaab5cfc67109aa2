package store

import (
	"context"
	"errors"
	"time"

	"chargeonce"
)

// errRefundsNotBuilt marks the skeleton of the refund store; its queries
// are built in their own change.
var errRefundsNotBuilt = errors.New("store: refunds are not built yet")

func (s *db) StartRefund(ctx context.Context, n NewRefund) (Refund, RefundDecision, error) {
	return Refund{}, "", errRefundsNotBuilt
}

func (s *db) GetRefund(ctx context.Context, key string) (Refund, error) {
	return Refund{}, errRefundsNotBuilt
}

func (s *db) RefundByReference(ctx context.Context, merchantReference string) (Refund, error) {
	return Refund{}, errRefundsNotBuilt
}

func (s *db) OrderRefunds(ctx context.Context, orderID int64) ([]Refund, error) {
	return nil, errRefundsNotBuilt
}

func (s *db) MarkRefundWorkflowStarted(ctx context.Context, key string) error {
	return errRefundsNotBuilt
}

func (s *db) UnstartedRefunds(ctx context.Context, createdBefore time.Time, limit int) ([]Refund, error) {
	return nil, errRefundsNotBuilt
}

func (s *db) LogRefundRequest(ctx context.Context, r chargeonce.ProviderRequest) error {
	return errRefundsNotBuilt
}

func (s *db) MarkRefundChecked(ctx context.Context, key string, at time.Time) error {
	return errRefundsNotBuilt
}

func (s *db) SettleRefund(ctx context.Context, key string, status chargeonce.RefundStatus, providerRefundID, failureReason string, at time.Time) (bool, error) {
	return false, errRefundsNotBuilt
}

func (s *db) OpenRefundStats(ctx context.Context) (int, time.Time, error) {
	return 0, time.Time{}, errRefundsNotBuilt
}

func (s *db) RecordLateCharge(ctx context.Context, c LateCharge) (LateChargeDecision, *Refund, error) {
	return "", nil, errRefundsNotBuilt
}
