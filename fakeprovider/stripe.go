package fakeprovider

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"chargeonce/internal/idemkey"
)

// StripeTestKey is a secret key the Stripe dialect accepts, as it accepts
// any sk_test_… or sk_live_… key: the fake checks the shape of a key, never
// its value.
const StripeTestKey = "sk_test_fakeprovider"

// The paths of the Stripe dialect.
const (
	stripeChargePath = "/v1/payment_intents"
	stripeSearchPath = "/v1/payment_intents/search"
)

// stripeErrors maps each problem to Stripe's error type, code and status.
// Stripe refuses a key reused with other parameters with a 400
// idempotency_error, where the draft says 422.
var stripeErrors = map[problemCode]struct {
	status  int
	errType string
	code    string
}{
	codeInvalidKey:     {http.StatusBadRequest, "invalid_request_error", ""},
	codeInvalidRequest: {http.StatusBadRequest, "invalid_request_error", "parameter_invalid"},
	codeKeyReused:      {http.StatusBadRequest, "idempotency_error", ""},
	codeKeyInFlight:    {http.StatusConflict, "idempotency_error", "idempotency_key_in_use"},
	codeCardDeclined:   {http.StatusPaymentRequired, "card_error", "card_declined"},
	// Stripe answers a payment method it does not have so, with param
	// payment_method ("No such PaymentMethod: 'visa'").
	codeSourceRefused: {http.StatusBadRequest, "invalid_request_error", "resource_missing"},
	codeRateLimited:   {http.StatusTooManyRequests, "invalid_request_error", "rate_limit"},
	codeUnavailable:   {http.StatusServiceUnavailable, "api_error", ""},
	codeTimeout:       {http.StatusGatewayTimeout, "api_error", ""},
	codeNotFound:      {http.StatusNotFound, "invalid_request_error", "resource_missing"},
	codeUnauthorized:  {http.StatusUnauthorized, "invalid_request_error", ""},
	// Stripe refuses a refund it cannot make with a 400, and stores it
	// under the key like any answer of a request it began to execute.
	codeChargeNotRefundable:   {http.StatusBadRequest, "invalid_request_error", "charge_not_refundable"},
	codeChargeAlreadyRefunded: {http.StatusBadRequest, "invalid_request_error", "charge_already_refunded"},
	codeRefundTooLarge:        {http.StatusBadRequest, "invalid_request_error", "amount_too_large"},
	codeCurrencyMismatch:      {http.StatusBadRequest, "invalid_request_error", "parameter_invalid"},
}

// stripeError is the "error" member of Stripe's error answers.
type stripeError struct {
	Type          string         `json:"type"`
	Code          string         `json:"code,omitempty"`
	DeclineCode   string         `json:"decline_code,omitempty"`
	Message       string         `json:"message"`
	Param         string         `json:"param,omitempty"`
	PaymentIntent *paymentIntent `json:"payment_intent,omitempty"`
}

func stripeProblem(p *problem) *storedResponse {
	kind := stripeErrors[p.Code]
	return stripeAnswer(kind.status, stripeError{Type: kind.errType, Code: kind.code, Message: p.Detail, Param: p.Param})
}

func stripeAnswer(status int, e stripeError) *storedResponse {
	body, _ := json.Marshal(struct {
		Error stripeError `json:"error"`
	}{e})
	return &storedResponse{status: status, contentType: contentTypeJSON, body: body}
}

// stripe is the dialect of Stripe's PaymentIntents API.
var stripe = &dialect{
	salt:     "stripe\n",
	idPrefix: "pi_",
	answer: func(c Charge) *storedResponse {
		pi := paymentIntentOf(c, holdEntry{})
		if c.Status == ChargeFailed {
			resp := stripeAnswer(http.StatusPaymentRequired, stripeError{
				Type: "card_error", Code: "card_declined", DeclineCode: c.DeclineCode,
				Message: "the card was declined: " + c.DeclineCode, PaymentIntent: &pi,
			})
			resp.chargeID, resp.outcome = c.ID, outcomeDeclined
			return resp
		}
		body, _ := json.Marshal(pi)
		return &storedResponse{status: http.StatusOK, contentType: contentTypeJSON, body: body, chargeID: c.ID, outcome: outcomeCreated}
	},
	problem:      stripeProblem,
	refundAnswer: stripeRefundAnswer,
	holdAnswer:   stripeHoldAnswer,
	notFound: func() *problem {
		prob := newProblem(codeNotFound, msgNoSuchPaymentIntent)
		prob.Param = "id"
		return prob
	},
}

// paymentIntent is the part of Stripe's PaymentIntent object the fake keeps.
type paymentIntent struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Amount           int64             `json:"amount"`
	AmountCapturable int64             `json:"amount_capturable"`
	AmountReceived   int64             `json:"amount_received"`
	Currency         string            `json:"currency"`
	Status           string            `json:"status"`
	Created          int64             `json:"created"`
	Description      *string           `json:"description"`
	Metadata         map[string]string `json:"metadata"`
	CaptureMethod    string            `json:"capture_method"`
	Livemode         bool              `json:"livemode"`
	LastPaymentError *stripeError      `json:"last_payment_error"`
	// LatestCharge is always expanded.
	LatestCharge       *stripeCharge `json:"latest_charge"`
	CancellationReason *string       `json:"cancellation_reason"`
	CanceledAt         *int64        `json:"canceled_at"`
}

// paymentIntentOf is a charge of the Stripe dialect, whose hold is h, as a
// PaymentIntent: a declined one waits for another payment method, as at
// Stripe, and a hold is one of capture_method manual.
func paymentIntentOf(c Charge, h holdEntry) paymentIntent {
	pi := paymentIntent{
		ID:            c.ID,
		Object:        "payment_intent",
		Amount:        c.Amount,
		Currency:      strings.ToLower(c.Currency),
		Status:        "succeeded",
		Created:       c.Created.Unix(),
		Metadata:      map[string]string{stripeReference: c.MerchantReference},
		CaptureMethod: "automatic",
		LatestCharge:  stripeChargeOf(c),
	}
	if c.Description != "" {
		pi.Description = &c.Description
	}
	if c.Status == ChargeFailed {
		pi.Status = "requires_payment_method"
		pi.LastPaymentError = &stripeError{Type: "card_error", Code: "card_declined", DeclineCode: c.DeclineCode, Message: "the card was declined: " + c.DeclineCode}
	} else {
		pi.AmountReceived = c.Amount
	}
	if c.AmountCaptured != nil {
		holdStatus(&pi, c, h)
	}
	return pi
}

// stripeReference is the metadata key the merchant reference travels in.
const stripeReference = "merchant_reference"

// Outcomes and details of the Stripe dialect, beside those it shares.
const (
	outcomeUnauthorized    = "rejected request without a secret key"
	msgUnauthorized        = "a secret key sk_test_… or sk_live_… is required, as a Bearer token or as the user of Basic authentication"
	msgStripeKeyMissing    = "the fake provider needs an Idempotency-Key on every PaymentIntent it creates"
	msgFormContentType     = "Content-Type must be application/x-www-form-urlencoded"
	msgFormUnreadable      = "the request body is not a readable form"
	msgConfirm             = "the fake provider only creates PaymentIntents confirmed at once: confirm must be true"
	msgPaymentMethod       = "payment_method must be a test payment method such as pm_card_visa, or a test token such as tok_visa"
	msgSearchQuery         = "query must be metadata['merchant_reference']:'…', the only search the fake provider understands"
	msgNoSuchPaymentIntent = "no PaymentIntent has this id"
)

// authorized checks the secret key the way Stripe reads it: as a Bearer
// token, or as the user of Basic authentication.
func authorized(r *http.Request) bool {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		key, _, ok = r.BasicAuth()
	}
	return ok && (strings.HasPrefix(key, "sk_test_") || strings.HasPrefix(key, "sk_live_"))
}

// stripeAPI wraps a handler of the Stripe dialect: a request without a
// secret key is refused before anything else, as at Stripe.
func stripeAPI(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
		if !authorized(r) {
			stripe.fail(w, rec, outcomeUnauthorized, newProblem(codeUnauthorized, msgUnauthorized))
			return
		}
		h(w, r, rec)
	}
}

// postPaymentIntent serves POST /v1/payment_intents: a PaymentIntent
// created and confirmed at once, under the Idempotency-Key, through the same
// idempotency layer and chaos modes as POST /v1/charges.
func (p *Provider) postPaymentIntent(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	key, ok := p.stripeKey(w, r, rec)
	if !ok {
		return
	}
	req, prob := decodePaymentIntent(w, r)
	if prob != nil {
		stripe.fail(w, rec, requestOutcome(prob), prob)
		return
	}
	p.chargeOnce(w, r, rec, stripe, key, req)
}

// stripeKey reads the plain Idempotency-Key of a creation in Stripe's
// dialect, after the chaos modes have had their chance; it answers and
// returns false when the key cannot be used.
func (p *Provider) stripeKey(w http.ResponseWriter, r *http.Request, rec *RequestRecord) (string, bool) {
	key := r.Header.Get("Idempotency-Key")
	rec.Key = key
	if p.misbehave(w, r, rec, stripe) {
		return "", false
	}
	switch {
	case key == "":
		stripe.fail(w, rec, outcomeBadKey, newProblem(codeInvalidKey, msgStripeKeyMissing))
		return "", false
	case len(key) > idemkey.MaxLength:
		stripe.fail(w, rec, outcomeBadKey, newProblem(codeInvalidKey, msgKeyTooLong))
		return "", false
	}
	return key, true
}

// readForm reads a form-encoded body of at most maxBodyBytes whose every
// parameter is known and given once.
func readForm(w http.ResponseWriter, r *http.Request, known func(string) bool) (url.Values, *problem) {
	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/x-www-form-urlencoded" {
		return nil, newProblem(codeInvalidRequest, msgFormContentType)
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, newProblem(codeInvalidRequest, msgBodyTooLarge)
		}
		return nil, newProblem(codeInvalidRequest, msgFormUnreadable)
	}
	for name, values := range r.PostForm {
		if !known(name) {
			return nil, invalidField(name, "received unknown parameter: "+name)
		}
		// A repeated parameter would mean whichever copy a reader takes.
		if len(values) > 1 {
			return nil, invalidField(name, "received parameter more than once: "+name)
		}
	}
	return r.PostForm, nil
}

// decodePaymentIntent reads the form of a PaymentIntent creation as a
// charge request. Stripe's test payment methods pm_card_<name> stand for
// the test tokens tok_<name>, whose outcomes the fake knows, and the tokens
// themselves are accepted too.
func decodePaymentIntent(w http.ResponseWriter, r *http.Request) (chargeRequest, *problem) {
	form, prob := readForm(w, r, knownPaymentIntentParam)
	if prob != nil {
		return chargeRequest{}, prob
	}
	if form.Get("confirm") != "true" {
		return chargeRequest{}, invalidField("confirm", msgConfirm)
	}
	amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
	if err != nil {
		return chargeRequest{}, invalidField("amount", msgAmount)
	}
	var capture *bool
	switch form.Get("capture_method") {
	case "", "automatic", "automatic_async":
	case "manual":
		capture = new(bool)
	default:
		return chargeRequest{}, invalidField("capture_method", msgCaptureMethod)
	}
	source := form.Get("payment_method")
	if name, ok := strings.CutPrefix(source, "pm_card_"); ok {
		source = "tok_" + name
	}
	req := chargeRequest{
		Amount:            amount,
		Capture:           capture,
		Currency:          strings.ToUpper(form.Get("currency")),
		Description:       form.Get("description"),
		MerchantReference: form.Get("metadata[" + stripeReference + "]"),
		Source:            source,
	}
	if p := req.validate(); p != nil {
		return chargeRequest{}, stripeField(p, form.Get("payment_method"))
	}
	return req, nil
}

// stripeField renames the field of a validation problem to Stripe's
// parameter, and words a refused payment method as Stripe does.
func stripeField(p *problem, paymentMethod string) *problem {
	switch {
	case p.Code == codeSourceRefused:
		p.Param, p.Detail = "payment_method", fmt.Sprintf("No such PaymentMethod: '%s'", paymentMethod)
	case p.Param == "source":
		p.Param, p.Detail = "payment_method", msgPaymentMethod
	case p.Param == "merchant_reference":
		p.Param = "metadata[" + stripeReference + "]"
	case p.Param == "charge":
		p.Param, p.Detail = "payment_intent", strings.Replace(p.Detail, "charge", "payment_intent", 1)
	}
	return p
}

// knownPaymentIntentParam reports whether name is a parameter the fake
// reads, or one that does not change what it does.
func knownPaymentIntentParam(name string) bool {
	switch name {
	case "amount", "currency", "confirm", "payment_method", "description", "error_on_requires_action", "payment_method_types[]", "capture_method":
		return true
	}
	return strings.HasPrefix(name, "metadata[") || strings.HasPrefix(name, "payment_method_types[") || isExpand(name)
}

// searchPaymentIntents serves GET /v1/payment_intents/search for the one
// query the fake understands, metadata['merchant_reference']:'…'. Its
// search reads the books at once, with no consistency delay. Like the
// lookups of the IETF dialect, every request counts against the lookup
// rate.
func (p *Provider) searchPaymentIntents(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	q, ok := p.lookupReference(w, r, rec, stripe, "query", msgSearchQuery)
	if !ok {
		return
	}
	ref, ok := referenceQuery(q)
	if !ok {
		stripe.fail(w, rec, outcomeBadRequest, invalidField("query", msgSearchQuery))
		return
	}
	p.mu.Lock()
	p.expireHoldsLocked()
	data := []paymentIntent{}
	for _, i := range p.byRef[ref] {
		if c := p.charges[i]; strings.HasPrefix(c.ID, stripe.idPrefix) {
			data = append(data, paymentIntentOf(c, p.holds[c.ID]))
		}
	}
	p.mu.Unlock()
	rec.Outcome = outcomeChargesListed
	writeJSON(w, http.StatusOK, struct {
		Object  string          `json:"object"`
		URL     string          `json:"url"`
		HasMore bool            `json:"has_more"`
		Data    []paymentIntent `json:"data"`
	}{"search_result", stripeSearchPath, false, data})
}

// referenceQuery reads metadata['merchant_reference']:'REF', where a
// backslash escapes the next character of REF.
func referenceQuery(q string) (string, bool) {
	quoted, ok := strings.CutPrefix(strings.TrimSpace(q), "metadata['"+stripeReference+"']:'")
	if !ok {
		return "", false
	}
	var ref strings.Builder
	for i := 0; i < len(quoted); i++ {
		switch c := quoted[i]; {
		case c == '\\' && i+1 < len(quoted):
			i++
			ref.WriteByte(quoted[i])
		case c == '\'':
			return ref.String(), i == len(quoted)-1 && ref.Len() > 0
		default:
			ref.WriteByte(c)
		}
	}
	return "", false
}

// getPaymentIntent serves GET /v1/payment_intents/{id}.
func (p *Provider) getPaymentIntent(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	charge, h, ok := p.lookupCharge(r.PathValue("id"))
	if !ok || !strings.HasPrefix(charge.ID, stripe.idPrefix) {
		stripe.fail(w, rec, outcomeChargeNotFound, stripe.notFound())
		return
	}
	rec.Outcome = outcomeChargeFound
	rec.ChargeID = charge.ID
	writeJSON(w, http.StatusOK, paymentIntentOf(charge, h))
}
