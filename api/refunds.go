package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/checkout"
	"chargeonce/internal/idemkey"
	"chargeonce/refund"
	"chargeonce/store"
)

// headerReplayed tells an answer that replays the first request with the
// same Idempotency-Key, after the IETF Idempotency-Key draft's server side.
const headerReplayed = "Idempotent-Replayed"

// idempotencyKey reads the request's Idempotency-Key, in the draft's form:
// one Structured Field String of at most idemkey.MaxLength characters,
// whose value is the key. Anything else, a bare Token included, is refused
// with a problem that names the form. Refunds, captures and voids read it
// alike.
func idempotencyKey(r *http.Request) (string, error) {
	key, err := idemkey.Parse(r.Header.Values(idemkey.Header))
	if err != nil {
		return "", &problemError{typ: wire.ProblemIdempotencyKeyRequired,
			detail: err.Error() + "; send one, such as " + idemkey.Example + " with its quotes, the same on every retry of this request"}
	}
	return key, nil
}

// refundRequest reads the body and the Idempotency-Key of a refund request.
func refundRequest(w http.ResponseWriter, r *http.Request) (refund.Request, error) {
	key, err := idempotencyKey(r)
	if err != nil {
		return refund.Request{}, err
	}
	var body wire.RefundRequest
	if err := decodeJSON(w, r, &body); err != nil {
		return refund.Request{}, err
	}
	// A reason is free text like an order's description, under its rule.
	if err := chargeonce.ValidateDescription(body.Reason); err != nil {
		return refund.Request{}, badRequest(`field "reason" %v`, err)
	}
	if body.Amount != nil && *body.Amount == "" {
		return refund.Request{}, badRequest(`field "amount" is a decimal string such as "12.50", or absent to refund the rest`)
	}
	return refund.Request{Amount: body.Amount, Reason: body.Reason, RequestKey: key}, nil
}

func (s *server) refundOrder(w http.ResponseWriter, r *http.Request) {
	id, err := orderID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	req, err := refundRequest(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	req.OrderID = id
	s.answerRefund(w, r, req)
}

func (s *server) refundCharge(w http.ResponseWriter, r *http.Request) {
	chargeID := r.PathValue("id")
	if err := chargeonce.ValidateText(chargeID); err != nil || chargeID == "" || len(chargeID) > store.MaxChargeIDLength {
		s.fail(w, r, badRequest("charge id %q must be a provider's charge id, such as ch_000001", chargeID))
		return
	}
	req, err := refundRequest(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	req.ChargeID = chargeID
	s.answerRefund(w, r, req)
}

// answerRefund runs the refund request and answers its outcome: 200 with a
// settled refund, 202 with a pending one, 503 when nothing was refunded.
func (s *server) answerRefund(w http.ResponseWriter, r *http.Request, req refund.Request) {
	res, err := s.refunds.Refund(r.Context(), req)
	if err != nil {
		s.failRefund(w, r, err)
		return
	}
	log := s.log.With("refund", res.Refund.Key, "order", res.Refund.OrderID)
	if res.Replayed {
		w.Header().Set(headerReplayed, "true")
	}
	switch res.Refund.Status {
	case chargeonce.RefundSucceeded, chargeonce.RefundFailed:
		writeJSON(w, log, http.StatusOK, "application/json", newRefundBody(res.Refund, false))
	case chargeonce.RefundPending:
		w.Header().Set("Location", refundLocation(res.Refund.Key))
		writeJSON(w, log, http.StatusAccepted, "application/json", newRefundBody(res.Refund, false))
	case chargeonce.RefundNotProcessed:
		w.Header().Set("Retry-After", strconv.Itoa(int(notProcessedRetryAfter/time.Second)))
		p := wire.NewProblem(wire.ProblemNothingRefunded, "The payment provider processed none of the refund's requests, so nothing was refunded. The same request may be sent again, with the same Idempotency-Key.")
		p.OrderID = res.Refund.OrderID
		writeProblem(w, log, p)
	default:
		s.fail(w, r, fmt.Errorf("refund %s has unknown status %q", res.Refund.Key, res.Refund.Status))
	}
}

// failRefund answers the errors of a refund request that only refunds
// have, and hands the rest to failIdempotent.
func (s *server) failRefund(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, store.ErrNotRefundable):
		err = &problemError{typ: wire.ProblemNotRefundable, detail: "There is nothing to refund: the order was never paid, or the charge is not one the books hold."}
	case errors.Is(err, store.ErrRefundExceedsCharge):
		err = &problemError{typ: wire.ProblemRefundExceedsCharge, detail: "The refund would return more than the charge can still refund: its amount less the refunds that succeeded or are pending."}
	case errors.Is(err, store.ErrNotFound) && r.PathValue("id") != "" && strings.HasPrefix(r.URL.Path, "/api/charges/"):
		err = &problemError{typ: wire.ProblemNotRefundable, detail: "The books hold no charge " + r.PathValue("id") + "."}
	}
	s.failIdempotent(w, r, "refund", err)
}

// failIdempotent answers the errors that every request with the API's own
// Idempotency-Key may have (a refund, a capture, a void: what), and hands
// every other to fail.
func (s *server) failIdempotent(w http.ResponseWriter, r *http.Request, what string, err error) {
	var (
		inProgress *checkout.InProgressError
		amount     *checkout.AmountError
	)
	switch {
	case errors.As(err, &inProgress):
		w.Header().Set("Retry-After", strconv.Itoa(int(max(time.Second, inProgress.RetryAfter.Round(time.Second))/time.Second)))
		err = &problemError{typ: wire.ProblemRequestInProgress, detail: "The first request with this Idempotency-Key is still being answered. Ask again after Retry-After seconds."}
	case errors.Is(err, checkout.ErrKeyReused):
		err = &problemError{typ: wire.ProblemIdempotencyKeyReused, detail: "This Idempotency-Key was sent before with another request. Send a new key for a new " + what + "."}
	case errors.As(err, &amount):
		err = badRequest(`field "amount" %v`, amount.Err)
	}
	s.fail(w, r, err)
}

func (s *server) getRefund(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("id")
	if !chargeonce.ValidKey(key) {
		s.fail(w, r, badRequest("refund id %q must be the refund's key, a UUID", key))
		return
	}
	ref, err := s.store.GetRefund(r.Context(), key)
	if errors.Is(err, store.ErrNotFound) {
		s.fail(w, r, &problemError{typ: wire.ProblemNotFound, detail: "no refund " + key})
		return
	}
	if err != nil {
		s.fail(w, r, fmt.Errorf("refund %s: %w", key, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, "application/json", newRefundBody(ref, true))
}

// newRefundBody shows a refund; withRequests adds its request log.
func newRefundBody(r store.Refund, withRequests bool) wire.Refund {
	body := wire.Refund{
		ID:                r.Key,
		OrderID:           r.OrderID,
		ChargeID:          r.ChargeID,
		Status:            string(r.Status),
		Amount:            r.Amount.Decimal(),
		Currency:          r.Amount.Currency,
		Reason:            r.Reason,
		Origin:            string(r.Origin),
		MerchantReference: r.MerchantReference,
		Provider:          r.Provider,
		ProviderRefundID:  optional(r.ProviderRefundID),
		FailureReason:     optional(r.FailureReason),
		CreatedAt:         r.CreatedAt.UTC(),
	}
	if r.SettledAt != nil {
		t := r.SettledAt.UTC()
		body.SettledAt = &t
	}
	if withRequests {
		body.Requests = make([]wire.ProviderRequest, 0, len(r.Requests))
		for _, req := range r.Requests {
			body.Requests = append(body.Requests, newRequestBody(req))
		}
	}
	return body
}

func refundLocation(key string) string {
	return "/api/refunds/" + key
}
