package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/hold"
	"chargeonce/store"
)

// The captures and voids of an order's hold (docs/checkout-api.md#holds):
// each is one move of the hold, asked for with the API's own
// Idempotency-Key as a refund is, and read back by its key.

// moveRequest reads the Idempotency-Key and the body of a capture or void
// request. The body may be absent, for a capture of the whole hold or a
// void, whatever its Content-Type says, or a JSON object of the kind's
// schema.
func moveRequest(w http.ResponseWriter, r *http.Request, kind chargeonce.MoveKind) (hold.Request, error) {
	key, err := idempotencyKey(r)
	if err != nil {
		return hold.Request{}, err
	}
	req := hold.Request{Kind: kind, RequestKey: key}
	if r.ContentLength == 0 {
		return req, nil
	}
	if kind == chargeonce.MoveVoid {
		var body wire.VoidRequest
		return req, decodeJSON(w, r, &body)
	}
	var body wire.CaptureRequest
	if err := decodeJSON(w, r, &body); err != nil {
		return hold.Request{}, err
	}
	if body.Amount != nil && *body.Amount == "" {
		return hold.Request{}, badRequest(`field "amount" is a decimal string such as "12.50", or absent to capture the whole hold`)
	}
	req.Amount = body.Amount
	return req, nil
}

// moveOrder serves POST /api/orders/{id}/capture and …/void.
func (s *server) moveOrder(kind chargeonce.MoveKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := orderID(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		req, err := moveRequest(w, r, kind)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		req.OrderID = id
		res, err := s.holds.Move(r.Context(), req)
		if err != nil {
			s.failMove(w, r, req, err)
			return
		}
		m := res.Move
		log := s.log.With("move", m.Key, "kind", m.Kind, "order", m.OrderID)
		if res.Replayed {
			w.Header().Set(headerReplayed, "true")
		}
		switch m.Status {
		case chargeonce.MoveSucceeded, chargeonce.MoveDeclined, chargeonce.MoveFailed:
			writeJSON(w, log, http.StatusOK, "application/json", newMoveBody(m, false))
		case chargeonce.MovePending:
			w.Header().Set("Location", moveLocation(m.Kind, m.Key))
			writeJSON(w, log, http.StatusAccepted, "application/json", newMoveBody(m, false))
		case chargeonce.MoveNotProcessed:
			w.Header().Set("Retry-After", strconv.Itoa(int(notProcessedRetryAfter/time.Second)))
			p := wire.NewProblem(wire.ProblemNothingMoved, "The payment provider processed none of the "+string(m.Kind)+"'s requests, so the hold is as it was. The same request may be sent again, with the same Idempotency-Key.")
			p.OrderID = m.OrderID
			writeProblem(w, log, p)
		default:
			s.fail(w, r, fmt.Errorf("%s %s has unknown status %q", m.Kind, m.Key, m.Status))
		}
	}
}

// failMove answers the errors of a capture or void request that only
// moves have, and hands the rest to failIdempotent.
func (s *server) failMove(w http.ResponseWriter, r *http.Request, req hold.Request, err error) {
	switch {
	case errors.Is(err, store.ErrNotHeld):
		err = &problemError{typ: wire.ProblemNotHeld, detail: s.notHeldDetail(r, req)}
	case errors.Is(err, store.ErrHoldMoving):
		err = &problemError{typ: wire.ProblemHoldMoving, detail: "Another capture or void of this order's hold is pending; its outcome decides the hold first. Follow it in the order."}
	case errors.Is(err, store.ErrCaptureExceedsHold):
		err = &problemError{typ: wire.ProblemCaptureExceedsHold, detail: "The capture asks for more than the hold's authorized amount; capture at most that, or omit the amount to capture all of it."}
	}
	s.failIdempotent(w, r, string(req.Kind), err)
}

// notHeldDetail says why the order holds nothing to capture or void, by
// the order's status as it stands: a void of a captured order is undone
// by a refund, not a void.
func (s *server) notHeldDetail(r *http.Request, req hold.Request) string {
	const base = "The order holds no authorization: "
	order, _, err := s.store.GetOrder(r.Context(), req.OrderID)
	if err != nil {
		return base + "it was never authorized, or its hold has ended."
	}
	switch order.Status {
	case chargeonce.OrderCaptured, chargeonce.OrderPartiallyRefunded, chargeonce.OrderRefunded:
		if req.Kind == chargeonce.MoveVoid {
			return base + "its hold was captured, so the money was taken. Give it back with a refund: POST /api/orders/" + strconv.FormatInt(req.OrderID, 10) + "/refunds."
		}
		return base + "its hold was captured already."
	case chargeonce.OrderPaid:
		return base + "it was paid by a capture at once (automatic), so it has no hold."
	case chargeonce.OrderVoided:
		return base + "its hold was voided already."
	case chargeonce.OrderExpired:
		return base + "its hold expired at the provider."
	default:
		return base + "it was never authorized (status " + string(order.Status) + ")."
	}
}

// getMove serves GET /api/captures/{id} and /api/voids/{id}: a move of
// the path's kind, with its request log.
func (s *server) getMove(kind chargeonce.MoveKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.PathValue("id")
		if !chargeonce.ValidKey(key) {
			s.fail(w, r, badRequest("%s id %q must be the %s's key, a UUID", kind, key, kind))
			return
		}
		m, err := s.store.GetMove(r.Context(), key)
		// A key of the other kind is no resource at this path.
		if errors.Is(err, store.ErrNotFound) || (err == nil && m.Kind != kind) {
			s.fail(w, r, &problemError{typ: wire.ProblemNotFound, detail: "no " + string(kind) + " " + key})
			return
		}
		if err != nil {
			s.fail(w, r, fmt.Errorf("%s %s: %w", kind, key, err))
			return
		}
		writeJSON(w, s.log, http.StatusOK, "application/json", newMoveBody(m, true))
	}
}

// newMoveBody shows a move; withRequests adds its request log.
func newMoveBody(m store.Move, withRequests bool) wire.Move {
	body := wire.Move{
		ID:                m.Key,
		Kind:              string(m.Kind),
		OrderID:           m.OrderID,
		Status:            string(m.Status),
		Amount:            m.Amount.Decimal(),
		Currency:          m.Amount.Currency,
		DeclineCode:       optional(m.DeclineCode),
		Origin:            string(m.Origin),
		MerchantReference: m.MerchantReference,
		Provider:          m.Provider,
		CreatedAt:         m.CreatedAt.UTC(),
		SettledAt:         utcOrNil(m.SettledAt),
	}
	if withRequests {
		body.Requests = make([]wire.ProviderRequest, 0, len(m.Requests))
		for _, req := range m.Requests {
			body.Requests = append(body.Requests, newRequestBody(req))
		}
	}
	return body
}

// newHoldBody shows an order's hold.
func newHoldBody(h store.Hold) *wire.Hold {
	return &wire.Hold{
		Status:        string(h.Status),
		ChargeID:      h.ChargeID,
		Authorized:    h.Amount.Decimal(),
		Captured:      chargeonce.Money{Minor: h.Captured, Currency: h.Amount.Currency}.Decimal(),
		Currency:      h.Amount.Currency,
		AuthorizedAt:  h.AuthorizedAt.UTC(),
		CaptureBefore: utcOrNil(nonZero(h.CaptureBefore)),
		Deadline:      h.Deadline.UTC(),
		OnDeadline:    string(h.OnDeadline),
		EndedAt:       utcOrNil(h.EndedAt),
	}
}

// nonZero is t, or nil for the zero time, which means "not known".
func nonZero(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// utcOrNil is *t in UTC, or nil.
func utcOrNil(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func moveLocation(kind chargeonce.MoveKind, key string) string {
	if kind == chargeonce.MoveCapture {
		return "/api/captures/" + key
	}
	return "/api/voids/" + key
}
