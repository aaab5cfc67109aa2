package checkout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/internal/webhook"
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
	// EventLateChargeAdopted: the charge, verified at the provider, came
	// for an attempt that had settled without it, and pays its order,
	// which no other charge had paid.
	EventLateChargeAdopted EventResult = "late_charge_adopted"
	// EventLateChargeRefunded: the charge, verified at the provider, came
	// for an order that another charge paid; a refund of it was stored and
	// started (alert late_charge_refunded).
	EventLateChargeRefunded EventResult = "late_charge_refunded"
	// EventLateChargeUnverified: the event names a charge for a settled
	// attempt that the provider does not hold as succeeded under the
	// attempt's reference, or that cannot be verified here; it is kept for
	// the books, whose settlement repairs what the report proves.
	EventLateChargeUnverified EventResult = "late_charge_unverified"
	// EventUnconfirmed: the event claims what the provider, asked, does not
	// confirm (a refund failed that it holds as succeeded), what cannot be
	// verified here, or what the provider that sent it cannot know: an
	// attempt or refund that the books hold under another provider.
	// Nothing changes, and the event is kept for the books, whose
	// settlement repairs what the report proves.
	EventUnconfirmed EventResult = "unconfirmed"
)

// EventResults are every EventResult, for metrics that start each at 0.
var EventResults = []EventResult{
	EventSignaled, EventSettled, EventUnknownReference, EventNoWorkflow, EventDuplicate,
	EventLateChargeAdopted, EventLateChargeRefunded, EventLateChargeUnverified, EventUnconfirmed,
}

// Refunds is what the provider's events need of the refund service
// (package refund, which builds on this one): its refunds' events, and the
// repair of a charge that came for an attempt that settled without it.
type Refunds interface {
	// HandleRefundEvent acts on a refund.succeeded or refund.failed event
	// that was stored once by its ID, only on what a lookup at the
	// provider finds.
	HandleRefundEvent(ctx context.Context, ev ProviderEvent) (EventResult, error)
	// RepairLateCharge verifies at the provider that the attempt's
	// reference holds the succeeded charge, and repairs it: the order
	// adopts it, or it is refunded.
	RepairLateCharge(ctx context.Context, a store.Attempt, chargeID string) (EventResult, error)
}

// ProviderEvent is an event whose signature has been verified: the
// provider reports that a charge or a refund finished.
type ProviderEvent struct {
	// Provider names the provider that sent the event, whose secrets
	// verified it. Only the attempts and refunds that the books hold under
	// that provider are its to report on; an event about another's is
	// EventUnconfirmed.
	Provider string
	// ID is the event's webhook-id, the same on every delivery.
	ID string
	// Type is the event type, such as charge.succeeded.
	Type string
	// ChargeID is the charge, or the charge a refund returns money from.
	ChargeID string
	// MerchantReference is the charge's, or the refund's.
	MerchantReference string
	// RefundID and FailureReason are a refund event's; they are not
	// stored, as every delivery of an event carries them again.
	RefundID      string
	FailureReason string
	// Payload is the body as received, kept for the books.
	Payload []byte
}

// signalTimeout bounds telling the workflow, so that a provider
// waiting for the answer hears 503 and delivers again, rather than timing
// out, while Temporal is unreachable or no worker takes the update.
const signalTimeout = 5 * time.Second

// HandleProviderEvent stores the event once by its ID and tells the
// attempt with its merchant reference to look the charge up, or hands a
// refund's event to the refund service. The event is never trusted to
// settle a charge or a refund itself: the workflow settles from what the
// lookup finds, so a forged or stale event can only cause a lookup, and a
// refund's event for a settled refund changes it only when the provider
// confirms it (Refunds.HandleRefundEvent). A charge.succeeded for
// an attempt that settled without that charge (abandoned, not processed,
// declined, or paid by another charge) is money taken: it is verified at
// the provider and repaired (Refunds.RepairLateCharge), never dropped.
// An event about an attempt or refund that the books hold under another
// provider than ev.Provider changes nothing: it is EventUnconfirmed.
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
	var result EventResult
	if isRefundEvent(stored.Type) {
		result, err = s.refundEvent(ctx, ProviderEvent{Provider: ev.Provider, ID: stored.ID, Type: stored.Type, ChargeID: stored.ChargeID,
			MerchantReference: stored.MerchantReference, RefundID: ev.RefundID, FailureReason: ev.FailureReason})
	} else {
		result, err = s.signalAttempt(ctx, ev.Provider, stored)
	}
	if err != nil {
		return "", err
	}
	if err := s.store.MarkProviderEventHandled(ctx, stored.ID, string(result), s.now()); err != nil {
		return "", fmt.Errorf("checkout: provider event: %w", err)
	}
	return result, nil
}

// isRefundEvent reports whether an event type is a refund's.
func isRefundEvent(t string) bool {
	return t == webhook.EventRefundSucceeded || t == webhook.EventRefundFailed
}

// refundEvent hands a refund's event to the refund service.
func (s *Service) refundEvent(ctx context.Context, ev ProviderEvent) (EventResult, error) {
	if s.refunds == nil {
		s.log.Warn("refund event, and no refund service here; kept for the books", "event", ev.ID, "reference", ev.MerchantReference)
		return EventUnknownReference, nil
	}
	return s.refunds.HandleRefundEvent(ctx, ev)
}

func (s *Service) signalAttempt(ctx context.Context, sender string, ev store.ProviderEvent) (EventResult, error) {
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
	if a.Provider != sender {
		log.Warn("provider event about an attempt of another provider: nothing changes, and the event is kept for the books", "sender", sender, "provider", a.Provider)
		return EventUnconfirmed, nil
	}
	if a.Status != chargeonce.AttemptOpen && !holdEvent(a, ev) {
		return s.settledAttemptEvent(ctx, log, a, ev)
	}
	sctx, cancel := context.WithTimeout(ctx, signalTimeout)
	defer cancel()
	// The event's ID makes a redelivery the same update.
	_, err = s.temporal.UpdateWorkflow(sctx, client.UpdateWorkflowOptions{
		UpdateID:     ev.ID,
		WorkflowID:   workflows.WorkflowID(a.Key),
		UpdateName:   chargeonce.UpdateProviderEvent,
		Args:         []any{workflows.ProviderEvent{ChargeID: ev.ChargeID}},
		WaitForStage: client.WorkflowUpdateStageAccepted,
	})
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		// The workflow never ran, or closed since the attempt was read:
		// then it settled the attempt before it closed.
		a, err := s.store.AttemptByReference(ctx, ev.MerchantReference)
		if err != nil {
			return "", fmt.Errorf("checkout: provider event: %w", err)
		}
		if a.Status != chargeonce.AttemptOpen {
			return s.settledAttemptEvent(ctx, log, a, ev)
		}
		log.Warn("provider event for an open attempt whose workflow does not run")
		return EventNoWorkflow, nil
	case err != nil:
		return "", fmt.Errorf("checkout: provider event %s: tell the payment workflow: %w", ev.ID, err)
	}
	if holdEvent(a, ev) {
		s.tellPendingMoves(sctx, log, a, ev)
	}
	log.Info("provider event: the payment workflow looks the charge up at once")
	return EventSignaled, nil
}

// tellPendingMoves tells the workflow of every pending move of a's hold
// that the provider reported the hold's end, so that it looks the hold up
// at once rather than at its next lookup. A failure is only logged: the
// move's timed lookups find the end all the same.
func (s *Service) tellPendingMoves(ctx context.Context, log *slog.Logger, a store.Attempt, ev store.ProviderEvent) {
	moves, err := s.store.OrderMoves(ctx, a.OrderID)
	if err != nil {
		log.Warn("could not read the hold's moves to tell them of the event; their lookups find the end", "error", err)
		return
	}
	for _, m := range moves {
		if m.Status != chargeonce.MovePending {
			continue
		}
		if err := s.temporal.SignalWorkflow(ctx, workflows.MoveWorkflowID(m.Key), "", chargeonce.SignalMoveEvent, workflows.ProviderEvent{ChargeID: ev.ChargeID}); err != nil {
			log.Warn("could not tell a pending move of the event; its lookups find the end", "move", m.Key, "error", err)
		}
	}
}

// holdEvent reports whether ev says that the hold of a's manual capture
// ended: the payment workflow that keeps the hold then reads it at once,
// as an open attempt's looks its charge up.
func holdEvent(a store.Attempt, ev store.ProviderEvent) bool {
	return a.Capture.Manual() && a.Status == chargeonce.AttemptSucceeded && a.ProviderPaymentID == ev.ChargeID && webhook.HoldEnded(ev.Type)
}

// settledAttemptEvent handles a charge's event for an attempt that has
// settled: nothing changes, unless a charge succeeded that the attempt did
// not settle with, which is repaired.
func (s *Service) settledAttemptEvent(ctx context.Context, log *slog.Logger, a store.Attempt, ev store.ProviderEvent) (EventResult, error) {
	if ev.Type != webhook.EventChargeSucceeded || (a.Status == chargeonce.AttemptSucceeded && a.ProviderPaymentID == ev.ChargeID) {
		log.Info("provider event for a settled attempt, nothing changes", "status", a.Status)
		return EventSettled, nil
	}
	if s.refunds == nil {
		log.Warn("a charge succeeded for an attempt that settled without it, and no refund service repairs it here; the settlement will", "status", a.Status)
		return EventLateChargeUnverified, nil
	}
	return s.refunds.RepairLateCharge(ctx, a, ev.ChargeID)
}
