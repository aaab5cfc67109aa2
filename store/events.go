package store

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// ProviderEvent is one event the provider sent, kept once by its ID.
type ProviderEvent struct {
	// ID is the sender's webhook-id, the same on every delivery.
	ID string
	// Type is charge.succeeded or charge.failed.
	Type              string
	ChargeID          string
	MerchantReference string
	// Payload is the verified body as received.
	Payload    []byte
	ReceivedAt time.Time
	// Result is what handling the event did; empty until it is handled.
	Result string
	// HandledAt is when it was handled; nil until then.
	HandledAt *time.Time
}

func (e ProviderEvent) validate() error {
	switch {
	case e.ID == "" || !utf8.ValidString(e.ID):
		return errors.New("the event ID is missing")
	case e.Type == "":
		return errors.New("the event type is missing")
	case e.ChargeID == "":
		return errors.New("the charge ID is missing")
	case e.MerchantReference == "":
		return errors.New("the merchant reference is missing")
	case !utf8.Valid(e.Payload):
		return errors.New("the payload is not UTF-8 text")
	case e.ReceivedAt.IsZero():
		return errors.New("the time of receipt is missing")
	}
	return nil
}

const eventColumns = `id, type, charge_id, merchant_reference, payload, received_at, COALESCE(result, ''), handled_at`

func (s *db) RecordProviderEvent(ctx context.Context, e ProviderEvent) (ProviderEvent, bool, error) {
	if err := e.validate(); err != nil {
		return ProviderEvent{}, false, fmt.Errorf("store: record provider event %q: %w", e.ID, err)
	}
	var (
		stored  ProviderEvent
		created bool
	)
	err := s.txs.inTx(ctx, true, func(q querier) error {
		n, err := q.exec(ctx,
			`INSERT INTO provider_events (id, type, charge_id, merchant_reference, payload, received_at)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
			e.ID, e.Type, e.ChargeID, e.MerchantReference, string(e.Payload), s.t(e.ReceivedAt))
		if err != nil {
			return err
		}
		created = n == 1
		stored, err = queryOne(ctx, q, scanProviderEvent, `SELECT `+eventColumns+` FROM provider_events WHERE id = $1`, e.ID)
		return err
	})
	if err != nil {
		return ProviderEvent{}, false, fmt.Errorf("store: record provider event %q: %w", e.ID, err)
	}
	return stored, created, nil
}

func (s *db) MarkProviderEventHandled(ctx context.Context, id, result string, at time.Time) error {
	if result == "" || at.IsZero() {
		return fmt.Errorf("store: mark provider event %q handled: the result and the time are required", id)
	}
	err := s.txs.inTx(ctx, true, func(q querier) error {
		// The first handling's result is kept: a concurrent redelivery
		// handled in between did the same thing.
		if _, err := q.exec(ctx, `UPDATE provider_events SET result = $2, handled_at = $3 WHERE id = $1 AND result IS NULL`,
			id, result, s.t(at)); err != nil {
			return err
		}
		_, err := queryOne(ctx, q, scanInt64, `SELECT 1 FROM provider_events WHERE id = $1`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: mark provider event %q handled: %w", id, err)
	}
	return nil
}

func (s *db) ProviderEvents(ctx context.Context, merchantReference string) ([]ProviderEvent, error) {
	var events []ProviderEvent
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		events, err = queryAll(ctx, q, scanProviderEvent,
			`SELECT `+eventColumns+` FROM provider_events WHERE merchant_reference = $1 ORDER BY received_at, id`, merchantReference)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: provider events of %q: %w", merchantReference, err)
	}
	return events, nil
}

func (s *db) AttemptByReference(ctx context.Context, merchantReference string) (Attempt, error) {
	var attempts []Attempt
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		attempts, err = loadAttempts(ctx, q, `merchant_reference`, merchantReference)
		return err
	})
	if err == nil && len(attempts) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return Attempt{}, fmt.Errorf("store: attempt with merchant reference %q: %w", merchantReference, err)
	}
	return attempts[0], nil
}

func scanProviderEvent(r rows) (ProviderEvent, error) {
	var (
		e                 ProviderEvent
		payload           string
		received, handled timestamp
	)
	if err := r.Scan(&e.ID, &e.Type, &e.ChargeID, &e.MerchantReference, &payload, &received, &e.Result, &handled); err != nil {
		return ProviderEvent{}, err
	}
	at, err := received.required("received_at")
	if err != nil {
		return ProviderEvent{}, fmt.Errorf("provider event %q: %w", e.ID, err)
	}
	e.Payload, e.ReceivedAt = []byte(payload), at
	if handled.valid {
		e.HandledAt = &handled.t
	}
	return e, nil
}
