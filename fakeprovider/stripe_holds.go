package fakeprovider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Details of the Stripe dialect's holds.
const (
	msgCaptureMethod      = "capture_method must be automatic, automatic_async or manual"
	msgAmountToCapture    = "amount_to_capture must be a positive integer in the smallest currency unit"
	msgCancellationReason = "Invalid cancellation_reason: must be one of duplicate, fraudulent, requested_by_customer, or abandoned"
)

// stripeCancellationReasons are the reasons Stripe accepts for a cancel.
var stripeCancellationReasons = []string{"duplicate", "fraudulent", "requested_by_customer", "abandoned"}

// stripeCharge is the part of Stripe's Charge object the fake shows as a
// PaymentIntent's latest_charge, always expanded: whether it was captured,
// how much, and until when a hold can be.
type stripeCharge struct {
	ID                   string               `json:"id"`
	Object               string               `json:"object"`
	Amount               int64                `json:"amount"`
	AmountCaptured       int64                `json:"amount_captured"`
	Captured             bool                 `json:"captured"`
	Currency             string               `json:"currency"`
	PaymentIntent        string               `json:"payment_intent"`
	Status               string               `json:"status"`
	PaymentMethodDetails stripePaymentDetails `json:"payment_method_details"`
}

// stripePaymentDetails is a charge's payment_method_details: a card's.
type stripePaymentDetails struct {
	Type string `json:"type"`
	Card struct {
		// CaptureBefore is a hold's capture_before, in Unix seconds.
		CaptureBefore int64 `json:"capture_before,omitempty"`
	} `json:"card"`
}

// stripeChargeOf is the charge of a PaymentIntent. Its id is the
// PaymentIntent's with ch_ before it, so that it names no charge of the
// IETF door.
func stripeChargeOf(c Charge) *stripeCharge {
	sc := &stripeCharge{
		ID:             "ch_" + c.ID,
		Object:         "charge",
		Amount:         c.Amount,
		AmountCaptured: c.captured(),
		Captured:       c.Status == ChargeSucceeded,
		Currency:       strings.ToLower(c.Currency),
		PaymentIntent:  c.ID,
		Status:         "succeeded",
	}
	sc.PaymentMethodDetails.Type = "card"
	if c.Status == ChargeFailed {
		sc.Status = "failed"
	}
	if !sc.Captured {
		sc.AmountCaptured = 0
	}
	if !c.CaptureBefore.IsZero() {
		sc.PaymentMethodDetails.Card.CaptureBefore = c.CaptureBefore.Unix()
	}
	return sc
}

// holdStatus shows a hold in Stripe's words on pi: waiting for its
// capture, canceled (voided, or expired: canceled "automatic"ally), or
// succeeded with what was captured received.
func holdStatus(pi *paymentIntent, c Charge, h holdEntry) {
	pi.CaptureMethod = "manual"
	switch c.Status {
	case ChargeAuthorized:
		pi.Status, pi.AmountCapturable = "requires_capture", c.Amount
	case ChargeVoided, ChargeExpired:
		pi.Status = "canceled"
		pi.CancellationReason = &h.CancellationReason
		canceled := h.CanceledAt.Unix()
		pi.CanceledAt = &canceled
	}
	pi.AmountReceived = 0
	if c.Status == ChargeSucceeded {
		pi.AmountReceived = c.captured()
	}
}

// stripeHoldAnswer renders a capture or a cancel of Stripe's dialect: the
// PaymentIntent after it, or Stripe's 400 with the PaymentIntent as it is:
// amount_too_large for a capture above the amount, and
// payment_intent_unexpected_state otherwise, whose status and
// cancellation_reason say why.
func stripeHoldAnswer(c Charge, h holdEntry, m *holdMove, decline string) *storedResponse {
	pi := paymentIntentOf(c, h)
	if decline == "" {
		body, _ := json.Marshal(pi)
		return &storedResponse{status: http.StatusOK, contentType: contentTypeJSON, body: body, chargeID: c.ID, outcome: m.made}
	}
	e := stripeError{Type: "invalid_request_error", Code: "payment_intent_unexpected_state", PaymentIntent: &pi}
	verb, allowed := "captured", "requires_capture"
	if m == voidMove {
		verb, allowed = "canceled", "requires_capture, requires_payment_method"
	}
	e.Message = fmt.Sprintf("This PaymentIntent could not be %s because it has a status of %s. Only a PaymentIntent with one of the following statuses may be %s: %s.", verb, pi.Status, verb, allowed)
	if decline == declineAmountTooLarge {
		e.Code, e.Param = "amount_too_large", "amount_to_capture"
		e.Message = "The amount_to_capture must be less than or equal to the PaymentIntent's amount_capturable."
	}
	resp := stripeAnswer(http.StatusBadRequest, e)
	resp.chargeID, resp.outcome = c.ID, m.refused
	return resp
}

// postStripeCapture serves POST /v1/payment_intents/{id}/capture: all of
// the amount, or amount_to_capture of it.
func (p *Provider) postStripeCapture(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	p.postStripeHoldMove(w, r, rec, captureMove, "amount_to_capture", func(v string) (holdRequest, *problem) {
		if v == "" {
			return holdRequest{}, nil
		}
		amount, err := strconv.ParseInt(v, 10, 64)
		if err != nil || amount <= 0 {
			return holdRequest{}, invalidField("amount_to_capture", msgAmountToCapture)
		}
		return holdRequest{Amount: amount}, nil
	})
}

// postStripeCancel serves POST /v1/payment_intents/{id}/cancel, the void
// of a hold, with an optional cancellation_reason.
func (p *Provider) postStripeCancel(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	p.postStripeHoldMove(w, r, rec, voidMove, "cancellation_reason", func(v string) (holdRequest, *problem) {
		if v != "" && !slices.Contains(stripeCancellationReasons, v) {
			return holdRequest{}, invalidField("cancellation_reason", msgCancellationReason)
		}
		return holdRequest{Reason: v}, nil
	})
}

// postStripeHoldMove serves a capture or a cancel in Stripe's dialect,
// whose form has one parameter of its own, param, read by read, beside
// expand: through the same idempotency layer and chaos modes as the IETF
// dialect's.
func (p *Provider) postStripeHoldMove(w http.ResponseWriter, r *http.Request, rec *RequestRecord, m *holdMove, param string, read func(string) (holdRequest, *problem)) {
	key, ok := p.stripeKey(w, r, rec)
	if !ok {
		return
	}
	form, prob := readForm(w, r, func(name string) bool { return name == param || isExpand(name) })
	var req holdRequest
	if prob == nil {
		req, prob = read(form.Get(param))
	}
	if prob != nil {
		stripe.fail(w, rec, outcomeBadRequest, prob)
		return
	}
	req.Charge = r.PathValue("id")
	p.holdMoveOnce(w, r, rec, stripe, key, m, req)
}

// isExpand reports whether name is an expand parameter: latest_charge is
// always expanded, and nothing else can be.
func isExpand(name string) bool {
	return strings.HasPrefix(name, "expand[")
}
