package store

import (
	"context"
	"errors"
	"time"
)

// errEventsUnbuilt marks the event store's methods that are not written
// yet.
var errEventsUnbuilt = errors.New("store: merchant events are not built yet")

func (s *db) CreateEndpoint(ctx context.Context, n NewEndpoint) (Endpoint, error) {
	return Endpoint{}, errEventsUnbuilt
}

func (s *db) Endpoints(ctx context.Context) ([]Endpoint, error) { return nil, errEventsUnbuilt }

func (s *db) GetEndpoint(ctx context.Context, id string) (Endpoint, error) {
	return Endpoint{}, errEventsUnbuilt
}

func (s *db) SetEndpointDisabled(ctx context.Context, id string, disabled bool, reason string, at time.Time) (Endpoint, error) {
	return Endpoint{}, errEventsUnbuilt
}

func (s *db) RotateEndpointSecret(ctx context.Context, id, secret string, previousUntil, now time.Time) (Endpoint, error) {
	return Endpoint{}, errEventsUnbuilt
}

func (s *db) OrderEvents(ctx context.Context, orderID int64) ([]MerchantEvent, error) {
	return nil, errEventsUnbuilt
}

func (s *db) GetEvent(ctx context.Context, id string) (MerchantEvent, error) {
	return MerchantEvent{}, errEventsUnbuilt
}

func (s *db) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]DueDelivery, error) {
	return nil, errEventsUnbuilt
}

func (s *db) RecordDeliveryAttempt(ctx context.Context, a DeliveryAttempt) error {
	return errEventsUnbuilt
}

func (s *db) Deliveries(ctx context.Context, endpointID string, limit int) ([]DeliveryAttempt, error) {
	return nil, errEventsUnbuilt
}

func (s *db) ReplayEvent(ctx context.Context, eventID, endpointID string, now time.Time) error {
	return errEventsUnbuilt
}

func (s *db) DeliveryStats(ctx context.Context) (DeliveryStats, error) {
	return DeliveryStats{}, errEventsUnbuilt
}
