package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/provider"
	"chargeonce/store"
)

// orderBody is an order as GET /api/orders/{id} and POST /api/orders show it.
type orderBody struct {
	ID                int64         `json:"id"`
	Status            string        `json:"status"`
	Total             string        `json:"total"`
	Currency          string        `json:"currency"`
	Description       string        `json:"description"`
	ProviderPaymentID *string       `json:"providerPaymentId"`
	CreatedAt         time.Time     `json:"createdAt"`
	UpdatedAt         time.Time     `json:"updatedAt"`
	Attempts          []attemptBody `json:"attempts"`
}

// attemptBody is one payment attempt of an order.
type attemptBody struct {
	IdempotencyKey    string        `json:"idempotencyKey"`
	Status            string        `json:"status"`
	MerchantReference string        `json:"merchantReference"`
	Total             string        `json:"total"`
	Currency          string        `json:"currency"`
	ProviderPaymentID *string       `json:"providerPaymentId"`
	CreatedAt         time.Time     `json:"createdAt"`
	LastCheckedAt     *time.Time    `json:"lastCheckedAt"`
	AbandonAt         time.Time     `json:"abandonAt"`
	Requests          []requestBody `json:"requests"`
}

// requestBody is one HTTP exchange with the provider.
type requestBody struct {
	At time.Time `json:"at"`
	// Status is null when no response arrived.
	Status     *int   `json:"status"`
	Outcome    string `json:"outcome"`
	Replayed   bool   `json:"replayed"`
	DurationMS int64  `json:"durationMs"`
}

// checkoutBody answers a checkout that paid or is pending.
type checkoutBody struct {
	OrderID           int64   `json:"orderId"`
	Status            string  `json:"status"`
	Total             string  `json:"total"`
	Currency          string  `json:"currency"`
	ProviderPaymentID *string `json:"providerPaymentId"`
	IdempotencyKey    string  `json:"idempotencyKey"`
}

func newOrderBody(o store.Order, attempts []store.Attempt) orderBody {
	body := orderBody{
		ID:                o.ID,
		Status:            string(o.Status),
		Total:             o.Amount.Decimal(),
		Currency:          o.Amount.Currency,
		Description:       o.Description,
		ProviderPaymentID: optional(o.ProviderPaymentID),
		CreatedAt:         o.CreatedAt.UTC(),
		UpdatedAt:         o.UpdatedAt.UTC(),
		Attempts:          make([]attemptBody, 0, len(attempts)),
	}
	for _, a := range attempts {
		ab := attemptBody{
			IdempotencyKey:    a.Key,
			Status:            string(a.Status),
			MerchantReference: a.MerchantReference,
			Total:             a.Amount.Decimal(),
			Currency:          a.Amount.Currency,
			ProviderPaymentID: optional(a.ProviderPaymentID),
			CreatedAt:         a.CreatedAt.UTC(),
			AbandonAt:         a.AbandonAt.UTC(),
			Requests:          make([]requestBody, 0, len(a.Requests)),
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

func newRequestBody(r chargeonce.ProviderRequest) requestBody {
	rb := requestBody{At: r.At.UTC(), Outcome: r.Outcome, Replayed: r.Replayed, DurationMS: r.Duration.Milliseconds()}
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
	var req createOrderRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	amount, description, err := req.parse()
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
	writeJSON(w, s.log, http.StatusCreated, "application/json", newOrderBody(order, nil))
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
	writeJSON(w, s.log, http.StatusOK, "application/json", newOrderBody(order, attempts))
}

func (s *server) checkoutOrder(w http.ResponseWriter, r *http.Request) {
	id, err := orderID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req checkoutRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := req.validate(); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.checkout.Checkout(r.Context(), id, req.CardToken)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	log := s.log.With("order", id, "key", res.Attempt.Key)
	switch res.Outcome {
	case checkout.OutcomePaid:
		writeJSON(w, log, http.StatusOK, "application/json", newCheckoutBody(res, chargeonce.OrderPaid))
	case checkout.OutcomePending:
		w.Header().Set("Location", orderLocation(id))
		writeJSON(w, log, http.StatusAccepted, "application/json", newCheckoutBody(res, chargeonce.OrderPaymentPending))
	case checkout.OutcomeDeclined:
		p := newProblem(kindDeclined, "The card was declined. The order may be paid with another card.")
		p.DeclineCode, p.OrderID = res.DeclineCode, id
		writeProblem(w, log, p)
	case checkout.OutcomeFailed:
		p := newProblem(kindFailed, "The payment could not be completed because of an error on our side. It is being reviewed; do not pay again.")
		p.OrderID = id
		writeProblem(w, log, p)
	case checkout.OutcomeNotProcessed:
		w.Header().Set("Retry-After", strconv.Itoa(int(notProcessedRetryAfter/time.Second)))
		p := newProblem(kindNotProcessed, "The payment provider processed none of the requests, so the card was not charged. The order may be paid again, with this card or another.")
		p.OrderID = id
		writeProblem(w, log, p)
	default:
		s.fail(w, r, fmt.Errorf("order %d: checkout answered unknown outcome %q", id, res.Outcome))
	}
}

func newCheckoutBody(res checkout.Result, status chargeonce.OrderStatus) checkoutBody {
	return checkoutBody{
		OrderID:           res.Order.ID,
		Status:            string(status),
		Total:             res.Order.Amount.Decimal(),
		Currency:          res.Order.Amount.Currency,
		ProviderPaymentID: optional(res.Attempt.ProviderPaymentID),
		IdempotencyKey:    res.Attempt.Key,
	}
}

// noWorkerRetryAfter is when a checkout refused for want of a payment worker
// may be tried again: about the time a worker takes to start.
const noWorkerRetryAfter = 5 * time.Second

// notProcessedRetryAfter is when a checkout that the provider processed
// nothing of may be tried again: the time the worker's circuit breaker stays
// open once the provider fails. A retry before that most likely finds the
// breaker still open, sends nothing, and waits its whole charge budget for
// the same answer; one after it sends the breaker's probe, which tells at
// once whether the provider is back.
const notProcessedRetryAfter = provider.DefaultBreakerOpenTimeout

// fail answers err as a problem. It is the one place where errors become
// statuses; what the client may not see is logged and left out.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var (
		p   problem
		bad *badRequestError
	)
	switch {
	case errors.As(err, &bad):
		p = newProblem(kindInvalid, bad.detail)
	case errors.Is(err, store.ErrNotFound):
		p = newProblem(kindNotFound, "no order "+r.PathValue("id"))
	case errors.Is(err, checkout.ErrConflict):
		p = newProblem(kindConflict, "Another card or amount is being verified for this order. Wait for it to settle, or retry with the same card.")
	case errors.Is(err, checkout.ErrNoTiming):
		s.log.Warn("checkout refused: no payment worker has published its timing in the merchant database yet", "path", r.URL.Path)
		w.Header().Set("Retry-After", strconv.Itoa(int(noWorkerRetryAfter/time.Second)))
		p = newProblem(kindNoWorker, "The payment workers have not started yet; try again in a few seconds.")
	case errors.Is(err, checkout.ErrNeedsReview):
		p = newProblem(kindNeedsReview, "An earlier payment of this order failed because of an error on our side. It is being reviewed; do not pay again.")
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		p = newProblem(kindInternal, "")
	}
	writeProblem(w, s.log, p)
}
