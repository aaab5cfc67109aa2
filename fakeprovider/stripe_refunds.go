package fakeprovider

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Details of the Stripe dialect's refunds.
const (
	msgStripeRefundPI     = "payment_intent is required: the fake provider refunds PaymentIntents"
	msgStripeRefundAmount = "the fake provider needs the amount of every refund, a positive integer in the smallest currency unit"
	msgStripeReason       = "Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer"
	msgStripeListPI       = "payment_intent is required, once: the fake provider lists the refunds of one PaymentIntent"
	msgNoSuchRefund       = "no refund has this id"
)

// stripeRefundReasons are the reasons Stripe accepts.
var stripeRefundReasons = []string{"duplicate", "fraudulent", "requested_by_customer"}

// stripeRefund is the part of Stripe's Refund object the fake keeps.
// Stripe creates no refund for a refusal, so a refund of this door is never
// a refusal.
type stripeRefund struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Amount             int64             `json:"amount"`
	BalanceTransaction *string           `json:"balance_transaction"`
	Charge             *string           `json:"charge"`
	Created            int64             `json:"created"`
	Currency           string            `json:"currency"`
	FailureReason      *string           `json:"failure_reason,omitempty"`
	Metadata           map[string]string `json:"metadata"`
	PaymentIntent      string            `json:"payment_intent"`
	Reason             *string           `json:"reason"`
	Status             RefundStatus      `json:"status"`
}

// stripeRefundOf is a refund as Stripe shows it. The fake's refunds name
// the PaymentIntent, not its latest_charge, so charge is null.
func stripeRefundOf(r Refund) stripeRefund {
	sr := stripeRefund{
		ID:            r.ID,
		Object:        "refund",
		Amount:        r.Amount,
		Created:       r.Created.Unix(),
		Currency:      strings.ToLower(r.Currency),
		FailureReason: r.FailureReason,
		Metadata:      map[string]string{stripeReference: r.MerchantReference},
		PaymentIntent: r.Charge,
		Status:        r.Status,
	}
	if r.Reason != "" {
		sr.Reason = &r.Reason
	}
	return sr
}

// stripeRefundAnswer renders a refund of Stripe's dialect, or its refusal
// as Stripe's invalid_request_error, which Stripe too stores under the key.
func stripeRefundAnswer(r Refund, refusal problemCode) *storedResponse {
	if refusal != "" {
		prob := newProblem(refusal, refusalDetails[refusal])
		switch refusal {
		case codeChargeNotRefundable:
			prob.Param = "payment_intent"
		case codeRefundTooLarge:
			prob.Param = "amount"
		case codeCurrencyMismatch:
			prob.Param = "currency"
		}
		resp := stripeProblem(prob)
		resp.chargeID, resp.outcome = r.Charge, outcomeRefundRefused
		return resp
	}
	body, _ := json.Marshal(stripeRefundOf(r))
	return &storedResponse{status: http.StatusOK, contentType: contentTypeJSON, body: body, chargeID: r.Charge, refundID: r.ID, outcome: outcomeRefundCreated}
}

// byDialect serves a path that both dialects share, /v1/refunds: a request
// with an Authorization header is Stripe's, whose clients always send their
// secret key, and one without is the IETF contract's, which has none.
func byDialect(ietfHandler, stripeHandler handler) handler {
	return func(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
		if r.Header.Get("Authorization") != "" {
			stripeAPI(stripeHandler)(w, r, rec)
			return
		}
		ietfHandler(w, r, rec)
	}
}

// postStripeRefund serves POST /v1/refunds in Stripe's dialect: a refund of
// a PaymentIntent under the Idempotency-Key, through the same idempotency
// layer, amount rule and chaos modes as the IETF dialect's.
func (p *Provider) postStripeRefund(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	key, ok := p.stripeKey(w, r, rec)
	if !ok {
		return
	}
	req, prob := decodeStripeRefund(w, r)
	if prob != nil {
		stripe.fail(w, rec, outcomeBadRequest, prob)
		return
	}
	p.refundOnce(w, r, rec, stripe, key, req)
}

// decodeStripeRefund reads the form of a refund creation as a refund
// request. The currency may be left out, as at Stripe: it is the
// PaymentIntent's.
func decodeStripeRefund(w http.ResponseWriter, r *http.Request) (refundRequest, *problem) {
	form, prob := readForm(w, r, knownRefundParam)
	if prob != nil {
		return refundRequest{}, prob
	}
	if form.Get("payment_intent") == "" {
		return refundRequest{}, invalidField("payment_intent", msgStripeRefundPI)
	}
	amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
	if err != nil {
		return refundRequest{}, invalidField("amount", msgStripeRefundAmount)
	}
	req := refundRequest{
		Amount:            amount,
		Charge:            form.Get("payment_intent"),
		Currency:          strings.ToUpper(form.Get("currency")),
		MerchantReference: form.Get("metadata[" + stripeReference + "]"),
		Reason:            form.Get("reason"),
	}
	if req.Reason != "" && !slices.Contains(stripeRefundReasons, req.Reason) {
		return refundRequest{}, invalidField("reason", msgStripeReason)
	}
	if p := req.validate(false); p != nil {
		return refundRequest{}, stripeField(p, "")
	}
	return req, nil
}

// knownRefundParam reports whether name is a refund parameter the fake
// reads.
func knownRefundParam(name string) bool {
	switch name {
	case "amount", "currency", "payment_intent", "reason":
		return true
	}
	return strings.HasPrefix(name, "metadata[")
}

// listStripeRefunds serves GET /v1/refunds?payment_intent=pi_…: the
// PaymentIntent's refunds, newest first as Stripe lists them, in one page.
// Stripe has no search of refunds by metadata; the client filters the
// list. It counts against the lookup rate.
func (p *Provider) listStripeRefunds(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	pi, ok := p.lookupReference(w, r, rec, stripe, "payment_intent", msgStripeListPI)
	if !ok {
		return
	}
	p.mu.Lock()
	data := []stripeRefund{}
	indexes := p.refundsByCharge[pi]
	for n := len(indexes) - 1; n >= 0; n-- {
		if r := p.refunds[indexes[n]].Refund; strings.HasPrefix(r.Charge, stripe.idPrefix) {
			data = append(data, stripeRefundOf(r))
		}
	}
	p.mu.Unlock()
	rec.Outcome = outcomeRefundsListed
	rec.ChargeID = pi
	writeJSON(w, http.StatusOK, struct {
		Object  string         `json:"object"`
		URL     string         `json:"url"`
		HasMore bool           `json:"has_more"`
		Data    []stripeRefund `json:"data"`
	}{"list", refundPath, false, data})
}

// getStripeRefund serves GET /v1/refunds/{id} in Stripe's dialect.
func (p *Provider) getStripeRefund(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	refund, ok := p.lookupRefund(r.PathValue("id"))
	if !ok || !strings.HasPrefix(refund.Charge, stripe.idPrefix) {
		prob := newProblem(codeNotFound, msgNoSuchRefund)
		prob.Param = "id"
		stripe.fail(w, rec, outcomeRefundNotFound, prob)
		return
	}
	rec.Outcome = outcomeRefundFound
	rec.ChargeID, rec.RefundID = refund.Charge, refund.ID
	writeJSON(w, http.StatusOK, stripeRefundOf(refund))
}
