package checkout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"

	"chargeonce"
	"chargeonce/store"
	"chargeonce/workflows"
)

// EventResult says what handling a provider event did.
type EventResult string

// The results of HandleProviderEvent.
const (
	// EventSignaled: the attempt's workflow was told, and looks the charge
	// up at once.
	EventSignaled EventResult = "signaled"
	// EventSettled: the attempt is settled already; nothing changes.
	EventSettled EventResult = "settled"
	// EventUnknownReference: no attempt has the event's merchant reference.
	// The event is kept for the books.
	EventUnknownReference EventResult = "unknown_reference"
	// EventNoWorkflow: the attempt is open but its workflow does not run:
	// it was never started, so no charge of it can exist, or it closed
	// since the attempt was read.
	EventNoWorkflow EventResult = "no_workflow"
	// EventDuplicate: the event was handled before; nothing more is done.
	EventDuplicate EventResult = "duplicate"
)

// ProviderEvent is an event whose signature has been verified: the
// provider reports that a charge finished.
type ProviderEvent struct {
	// ID is the event's webhook-id, the same on every delivery.
	ID string
	// Type is the event type, such as charge.succeeded.
	Type              string
	ChargeID          string
	MerchantReference string
	// Payload is the body as received, kept for the books.
	Payload []byte
}

// signalTimeout bounds the signal to the workflow, so that a provider
// waiting for the answer hears 503 and delivers again, rather than timing
// out, while Temporal is unreachable.
const signalTimeout = 5 * time.Second

// HandleProviderEvent stores the event once by its ID and tells the
// attempt with its merchant reference to look the charge up. The event is
// never trusted to settle anything itself: the workflow settles from what
// the lookup finds, so a forged or stale event can only cause a lookup.
// An error means the event was not handled and should be delivered again;
// a redelivery after a failure is handled afresh, one after a success is
// EventDuplicate.
func (s *Service) HandleProviderEvent(ctx context.Context, ev ProviderEvent) (EventResult, error) {
	stored, created, err := s.store.RecordProviderEvent(ctx, store.ProviderEvent{
		ID: ev.ID, Type: ev.Type, ChargeID: ev.ChargeID, MerchantReference: ev.MerchantReference,
		Payload: ev.Payload, ReceivedAt: s.now(),
	})
	if err != nil {
		return "", fmt.Errorf("checkout: provider event: %w", err)
	}
	if !created && stored.Result != "" {
		return EventDuplicate, nil
	}
	// A redelivery acts on the event as first stored.
	result, err := s.signalAttempt(ctx, stored)
	if err != nil {
		return "", err
	}
	if err := s.store.MarkProviderEventHandled(ctx, stored.ID, string(result), s.now()); err != nil {
		return "", fmt.Errorf("checkout: provider event: %w", err)
	}
	return result, nil
}

func (s *Service) signalAttempt(ctx context.Context, ev store.ProviderEvent) (EventResult, error) {
	log := s.log.With("event", ev.ID, "type", ev.Type, "charge", ev.ChargeID, "reference", ev.MerchantReference)
	a, err := s.store.AttemptByReference(ctx, ev.MerchantReference)
	if errors.Is(err, store.ErrNotFound) {
		log.Warn("provider event for no known attempt, kept for the books")
		return EventUnknownReference, nil
	}
	if err != nil {
		return "", fmt.Errorf("checkout: provider event: %w", err)
	}
	log = log.With("key", a.Key, "order", a.OrderID)
	if a.Status != chargeonce.AttemptOpen {
		log.Info("provider event for a settled attempt, nothing changes", "status", a.Status)
		return EventSettled, nil
	}
	sctx, cancel := context.WithTimeout(ctx, signalTimeout)
	defer cancel()
	err = s.temporal.SignalWorkflow(sctx, workflows.WorkflowID(a.Key), "", chargeonce.SignalProviderEvent, workflows.ProviderEvent{ChargeID: ev.ChargeID})
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		log.Warn("provider event for an open attempt whose workflow does not run")
		return EventNoWorkflow, nil
	case err != nil:
		return "", fmt.Errorf("checkout: provider event %s: signal the payment workflow: %w", ev.ID, err)
	}
	log.Info("provider event: the payment workflow looks the charge up at once")
	return EventSignaled, nil
}
