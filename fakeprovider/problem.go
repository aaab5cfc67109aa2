package fakeprovider

import (
	"encoding/json"
	"net/http"
)

// problemCode is the machine-readable reason carried in every error body.
type problemCode string

const (
	codeInvalidKey     problemCode = "idempotency_key_invalid"
	codeInvalidRequest problemCode = "invalid_request"
	codeKeyReused      problemCode = "idempotency_key_reused"
	codeKeyInFlight    problemCode = "idempotency_key_in_flight"
	codeCardDeclined   problemCode = "card_declined"
	// codeSourceRefused: the source is not a payment method the provider
	// can charge. It is the customer's card that is wrong, not the request,
	// so it is a 402 like a decline, though nothing is processed or stored.
	codeSourceRefused problemCode = "invalid_source"
	codeRateLimited   problemCode = "rate_limited"
	codeUnavailable   problemCode = "provider_unavailable"
	codeTimeout       problemCode = "gateway_timeout"
	codeNotFound      problemCode = "not_found"
	codeUnauthorized  problemCode = "unauthorized"

	// The refusals of a refund: results stored under the key, like a
	// decline.
	codeChargeNotRefundable   problemCode = "charge_not_refundable"
	codeChargeAlreadyRefunded problemCode = "charge_already_refunded"
	codeRefundTooLarge        problemCode = "amount_too_large"
	codeCurrencyMismatch      problemCode = "currency_mismatch"

	// The refusals of a capture and of a void, whose decline_code says
	// why: results stored under the key, like a decline.
	codeChargeNotCapturable problemCode = "charge_not_capturable"
	codeChargeNotVoidable   problemCode = "charge_not_voidable"
)

// problemKinds is the single map from code to HTTP status and title.
var problemKinds = map[problemCode]struct {
	status int
	title  string
}{
	codeInvalidKey:     {http.StatusBadRequest, "Invalid Idempotency-Key"},
	codeInvalidRequest: {http.StatusBadRequest, "Invalid request"},
	codeKeyReused:      {http.StatusUnprocessableEntity, "Idempotency-Key reused with a different body"},
	codeKeyInFlight:    {http.StatusConflict, "Request with this Idempotency-Key in flight"},
	codeCardDeclined:   {http.StatusPaymentRequired, "Card declined"},
	codeSourceRefused:  {http.StatusPaymentRequired, "Payment source refused"},
	codeRateLimited:    {http.StatusTooManyRequests, "Too many requests"},
	codeUnavailable:    {http.StatusServiceUnavailable, "Provider unavailable"},
	codeTimeout:        {http.StatusGatewayTimeout, "Provider timed out"},
	codeNotFound:       {http.StatusNotFound, "Not found"},
	codeUnauthorized:   {http.StatusUnauthorized, "Unauthorized"},

	codeChargeNotRefundable:   {http.StatusPaymentRequired, "Charge not refundable"},
	codeChargeAlreadyRefunded: {http.StatusPaymentRequired, "Charge already refunded"},
	codeRefundTooLarge:        {http.StatusPaymentRequired, "Refund larger than what remains of the charge"},
	codeCurrencyMismatch:      {http.StatusPaymentRequired, "Refund in another currency than the charge"},

	codeChargeNotCapturable: {http.StatusForbidden, "Charge not capturable"},
	codeChargeNotVoidable:   {http.StatusForbidden, "Charge not voidable"},
}

// refusalDetails words each refusal of a refund.
var refusalDetails = map[problemCode]string{
	codeChargeNotRefundable:   "no succeeded charge has this id, so there is nothing to refund",
	codeChargeAlreadyRefunded: "the charge has been refunded in full already",
	codeRefundTooLarge:        "the amount is more than what remains of the charge after its refunds that have not failed",
	codeCurrencyMismatch:      "the currency is not the charge's currency",
}

// problemTypeBase prefixes every problem type URI. The .invalid top-level
// domain is reserved, which is honest for a fake: the URI names the problem
// and is not meant to be fetched.
const problemTypeBase = "https://fakeprovider.invalid/problems/"

// Problem details, asserted exactly by the tests.
const (
	msgKeyMissing             = "Idempotency-Key header is required"
	msgKeyEmpty               = "Idempotency-Key must not be empty"
	msgKeyTooLong             = "Idempotency-Key must be at most 255 characters"
	msgKeyMalformed           = `Idempotency-Key must be a Structured Field String such as "8e03978e-40d5-43e8-bc93-6894a57f9324", or a bare token`
	msgContentType            = "Content-Type must be application/json"
	msgBodyTooLarge           = "request body must be at most 65536 bytes"
	msgAmount                 = "amount must be a positive integer in minor units"
	msgAmountTooLarge         = "amount must be at most 99999999 minor units"
	msgCurrency               = "currency must be an upper-case ISO 4217 code such as TRY"
	msgSourceMissing          = "source is required"
	msgSourceNotToken         = "source must be a card token starting with tok_"
	msgSourceTooLong          = "source must be at most 255 characters"
	msgReferenceMissing       = "merchant_reference is required"
	msgReferenceTooLong       = "merchant_reference must be at most 255 characters"
	msgDescriptionLong        = "description must be at most 1000 characters"
	msgKeyReused              = "this Idempotency-Key was already used with a different request body"
	msgKeyInFlight            = "a request with this Idempotency-Key is still being processed; retry after Retry-After seconds"
	msgRateLimited            = "too many requests; retry after Retry-After seconds"
	msgLookupLimited          = "too many lookups: past the rate that GET /v1/idempotency publishes; retry after Retry-After seconds"
	msgUnavailable            = "the provider is temporarily unavailable; nothing was processed"
	msgShuttingDown           = "the provider is shutting down; nothing was processed"
	msgDataFileFailed         = "the provider could not write its data file; nothing was charged or changed"
	msgTimeout                = "the provider did not answer in time"
	msgChargeNotFound         = "no charge has this id"
	msgReferenceParam         = "merchant_reference query parameter is required, once"
	msgOlderThan              = "older_than must be a non-negative duration such as 0s or 24h"
	msgRefundChargeMissing    = "charge is required"
	msgRefundChargeTooLong    = "charge must be at most 255 characters"
	msgReasonLong             = "reason must be at most 1000 characters"
	msgRefundNotFound         = "no refund has this id"
	msgSettleStatus           = "status must be succeeded or failed"
	msgSettleMove             = "a pending refund can succeed or fail, and a succeeded one fail; this one is %s and cannot become %s"
	msgFailureReasonMissing   = "a failed refund needs its failure_reason, such as expired_or_canceled_card"
	msgFailureReasonSucceeded = "a succeeded refund has no failure_reason"
	msgFailureReasonLong      = "failure_reason must be at most 255 characters"
	msgChargeID               = "the charge id must be 1 to 255 letters, digits, _ or -"
	msgCaptureCurrency        = "currency must be the charge's currency, "
)

// problem is an RFC 9457 problem details body with the contract's extra
// members.
type problem struct {
	Type        string      `json:"type"`
	Title       string      `json:"title"`
	Status      int         `json:"status"`
	Detail      string      `json:"detail"`
	Code        problemCode `json:"code"`
	Param       string      `json:"param,omitempty"`
	DeclineCode string      `json:"decline_code,omitempty"`
	ChargeID    string      `json:"charge_id,omitempty"`
	RefundID    string      `json:"refund_id,omitempty"`
}

func newProblem(code problemCode, detail string) *problem {
	kind := problemKinds[code]
	return &problem{
		Type:   problemTypeBase + string(code),
		Title:  kind.title,
		Status: kind.status,
		Detail: detail,
		Code:   code,
	}
}

// invalidField is a 400 that names the offending field.
func invalidField(param, detail string) *problem {
	return fieldProblem(codeInvalidRequest, param, detail)
}

// fieldProblem is the problem of code about the field param.
func fieldProblem(code problemCode, param, detail string) *problem {
	p := newProblem(code, detail)
	p.Param = param
	return p
}

// requestOutcome is the request log's word for refusing a request body
// with p: a refused source is the customer's card, any other problem a
// request built wrong.
func requestOutcome(p *problem) string {
	if p.Code == codeSourceRefused {
		return outcomeSourceRefused
	}
	return outcomeBadRequest
}

const (
	contentTypeJSON    = "application/json"
	contentTypeProblem = "application/problem+json"
)

// encode renders the problem; it cannot fail because every member is a
// string or an int.
func (p *problem) encode() []byte {
	b, _ := json.Marshal(p)
	return b
}

func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeJSON renders v, which is always one of this package's own types and
// therefore always encodable.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	writeBody(w, status, contentTypeJSON, b)
}
