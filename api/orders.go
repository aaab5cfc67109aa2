package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/checkout"
	"chargeonce/provider"
	"chargeonce/store"
)

// orderParts are what an order shows besides itself; a new order has
// none.
type orderParts struct {
	attempts []store.Attempt
	refunds  []store.Refund
	// hold is nil when the order has none.
	hold  *store.Hold
	moves []store.Move
}

func newOrderBody(o store.Order, p orderParts) wire.Order {
	attempts, refunds := p.attempts, p.refunds
	body := wire.Order{
		ID:                o.ID,
		Status:            string(o.Status),
		Total:             o.Amount.Decimal(),
		Currency:          o.Amount.Currency,
		Description:       o.Description,
		ProviderPaymentID: optional(o.ProviderPaymentID),
		CreatedAt:         o.CreatedAt.UTC(),
		UpdatedAt:         o.UpdatedAt.UTC(),
		Attempts:          make([]wire.Attempt, 0, len(attempts)),
		Refunds:           make([]wire.Refund, 0, len(refunds)),
		Moves:             make([]wire.Move, 0, len(p.moves)),
	}
	if p.hold != nil {
		body.Hold = newHoldBody(*p.hold)
	}
	for _, m := range p.moves {
		body.Moves = append(body.Moves, newMoveBody(m, false))
	}
	for _, r := range refunds {
		body.Refunds = append(body.Refunds, newRefundBody(r, false))
	}
	for _, a := range attempts {
		ab := wire.Attempt{
			IdempotencyKey:    a.Key,
			Status:            string(a.Status),
			MerchantReference: a.MerchantReference,
			Provider:          a.Provider,
			RoutedBy:          optional(a.RoutedBy),
			Total:             a.Amount.Decimal(),
			Currency:          a.Amount.Currency,
			ProviderPaymentID: optional(a.ProviderPaymentID),
			CreatedAt:         a.CreatedAt.UTC(),
			AbandonAt:         a.AbandonAt.UTC(),
			Requests:          make([]wire.ProviderRequest, 0, len(a.Requests)),
		}
		if a.LastCheckedAt != nil {
			t := a.LastCheckedAt.UTC()
			ab.LastCheckedAt = &t
		}
		for _, r := range a.Requests {
			ab.Requests = append(ab.Requests, newRequestBody(r))
		}
		body.Attempts = append(body.Attempts, ab)
	}
	return body
}

func newRequestBody(r chargeonce.ProviderRequest) wire.ProviderRequest {
	rb := wire.ProviderRequest{At: r.At.UTC(), Outcome: r.Outcome, Replayed: r.Replayed, DurationMS: r.Duration.Milliseconds()}
	if r.StatusCode != 0 {
		status := r.StatusCode
		rb.Status = &status
	}
	return rb
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *server) createOrder(w http.ResponseWriter, r *http.Request) {
	var req wire.CreateOrderRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	amount, description, err := parseCreateOrder(req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	order, err := s.store.CreateOrder(r.Context(), amount, description)
	if err != nil {
		s.fail(w, r, fmt.Errorf("create order: %w", err))
		return
	}
	s.log.Info("order created", "order", order.ID, "amount", order.Amount.String())
	w.Header().Set("Location", orderLocation(order.ID))
	writeJSON(w, s.log, http.StatusCreated, "application/json", newOrderBody(order, orderParts{}))
}

func (s *server) getOrder(w http.ResponseWriter, r *http.Request) {
	id, err := orderID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	order, attempts, err := s.store.GetOrder(r.Context(), id)
	if err != nil {
		s.fail(w, r, fmt.Errorf("order %d: %w", id, err))
		return
	}
	parts := orderParts{attempts: attempts}
	if parts.refunds, err = s.store.OrderRefunds(r.Context(), id); err != nil {
		s.fail(w, r, fmt.Errorf("order %d: refunds: %w", id, err))
		return
	}
	switch h, err := s.store.OrderHold(r.Context(), id); {
	case err == nil:
		parts.hold = &h
	case !errors.Is(err, store.ErrNotFound):
		s.fail(w, r, fmt.Errorf("order %d: hold: %w", id, err))
		return
	}
	if parts.moves, err = s.store.OrderMoves(r.Context(), id); err != nil {
		s.fail(w, r, fmt.Errorf("order %d: moves: %w", id, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, "application/json", newOrderBody(order, parts))
}

func (s *server) checkoutOrder(w http.ResponseWriter, r *http.Request) {
	id, err := orderID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req wire.CheckoutRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	capture, err := validateCheckout(req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.checkout.CheckoutWith(r.Context(), id, req.CardToken, capture)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	log := s.log.With("order", id, "key", res.Attempt.Key)
	switch res.Outcome {
	case checkout.OutcomePaid, checkout.OutcomeAuthorized:
		writeJSON(w, log, http.StatusOK, "application/json", newCheckoutAnswer(res))
	case checkout.OutcomePending:
		w.Header().Set("Location", orderLocation(id))
		writeJSON(w, log, http.StatusAccepted, "application/json", newCheckoutAnswer(res))
	case checkout.OutcomeDeclined:
		detail := "The card was declined. The order may be paid with another card."
		if res.DeclineCode == provider.DeclineInvalidPaymentMethod {
			detail = "This card cannot be used: the payment provider does not accept it as a payment method. The order may be paid with another card."
		}
		p := wire.NewProblem(wire.ProblemCardDeclined, detail)
		p.DeclineCode, p.OrderID = res.DeclineCode, id
		writeProblem(w, log, p)
	case checkout.OutcomeFailed:
		p := wire.NewProblem(wire.ProblemPaymentFailed, "The payment could not be completed because of an error on our side. It is being reviewed; do not pay again.")
		p.OrderID = id
		writeProblem(w, log, p)
	case checkout.OutcomeNotProcessed:
		w.Header().Set("Retry-After", strconv.Itoa(int(notProcessedRetryAfter/time.Second)))
		p := wire.NewProblem(wire.ProblemProviderUnavailable, "The payment provider processed none of the requests, so the card was not charged. The order may be paid again, with this card or another.")
		p.OrderID = id
		writeProblem(w, log, p)
	default:
		s.fail(w, r, fmt.Errorf("order %d: checkout answered unknown outcome %q", id, res.Outcome))
	}
}

// newCheckoutAnswer is the body of a paid, authorized or pending checkout, with the
// order's status as the checkout leaves it.
func newCheckoutAnswer(res checkout.Result) wire.CheckoutAnswer {
	return wire.CheckoutAnswer{
		OrderID:           res.Order.ID,
		Status:            string(res.Order.Status),
		Total:             res.Order.Amount.Decimal(),
		Currency:          res.Order.Amount.Currency,
		ProviderPaymentID: optional(res.Attempt.ProviderPaymentID),
		IdempotencyKey:    res.Attempt.Key,
	}
}

// notProcessedRetryAfter is when a checkout that the provider processed
// nothing of may be tried again: the time the worker's circuit breaker stays
// open once the provider fails. A retry before that most likely finds the
// breaker still open, sends nothing, and waits its whole charge budget for
// the same answer; one after it sends the breaker's probe, which tells at
// once whether the provider is back.
const notProcessedRetryAfter = provider.DefaultBreakerOpenTimeout
