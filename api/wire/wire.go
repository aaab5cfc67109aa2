// Package wire declares, in Go, the checkout API's wire format that
// docs/openapi.json owns: the JSON bodies of its requests and answers, and
// its problem types. The API writes these bodies and the Go client
// (package client, which the starter, the chaos customers and the cluster
// benchmark use) reads them, from this one declaration. A test holds every
// type equal to its schema in the document, and the tests of each side
// pin the JSON with literal bodies of their own, so a change here that
// breaks the contract fails them.
//
// It imports only the standard library, so that a client links nothing of
// the server.
package wire

import (
	"net/http"
	"time"
)

// CreateOrderRequest is the body of POST /api/orders. Amount and Currency
// are pointers, so that a missing field is told from an empty one; Amount
// is a string, so that a JSON number, which a client may have rounded
// through a float, is refused.
type CreateOrderRequest struct {
	Amount      *string `json:"amount"`
	Currency    *string `json:"currency"`
	Description string  `json:"description"`
}

// CheckoutRequest is the body of POST /api/orders/{id}/checkout.
type CheckoutRequest struct {
	CardToken string `json:"card_token"`
	// Capture is "automatic" or "manual"; absent means the merchant's
	// configured mode.
	Capture *string `json:"capture,omitempty"`
	// OnDeadline is what the deadline of a manual capture's hold does,
	// "void" (the default) or "capture"; only with capture "manual".
	OnDeadline *string `json:"on_deadline,omitempty"`
}

// Order is an order as GET /api/orders/{id} and POST /api/orders show it.
type Order struct {
	ID int64 `json:"id"`
	// Status is one of chargeonce's order statuses.
	Status            string    `json:"status"`
	Total             string    `json:"total"`
	Currency          string    `json:"currency"`
	Description       string    `json:"description"`
	ProviderPaymentID *string   `json:"providerPaymentId"`
	CreatedAt         time.Time `json:"createdAt"`
	UpdatedAt         time.Time `json:"updatedAt"`
	// Attempts are the order's payment attempts, oldest first.
	Attempts []Attempt `json:"attempts"`
	// Refunds are the order's refunds, oldest first.
	Refunds []Refund `json:"refunds"`
	// Hold is the order's hold, when a manual capture authorized one.
	Hold *Hold `json:"hold,omitempty"`
	// Moves are the captures and voids of the order's hold, oldest first.
	Moves []Move `json:"moves"`
}

// Attempt is one payment attempt of an order.
type Attempt struct {
	IdempotencyKey string `json:"idempotencyKey"`
	// Status is one of chargeonce's attempt statuses.
	Status            string `json:"status"`
	MerchantReference string `json:"merchantReference"`
	// Provider names the provider the attempt is sent to, and RoutedBy
	// says why, for people: the routing rule, or a failover; nil for the
	// attempts stored before attempts said.
	Provider          string     `json:"provider"`
	RoutedBy          *string    `json:"routedBy"`
	Total             string     `json:"total"`
	Currency          string     `json:"currency"`
	ProviderPaymentID *string    `json:"providerPaymentId"`
	CreatedAt         time.Time  `json:"createdAt"`
	LastCheckedAt     *time.Time `json:"lastCheckedAt"`
	AbandonAt         time.Time  `json:"abandonAt"`
	// Requests are the charge requests that went on the wire, oldest first.
	Requests []ProviderRequest `json:"requests"`
}

// ProviderRequest is one charge request of an attempt to the provider.
type ProviderRequest struct {
	At time.Time `json:"at"`
	// Status is the provider's HTTP status, null when no response arrived.
	Status *int `json:"status"`
	// Outcome is how the answer was read, one of provider's outcomes.
	Outcome    string `json:"outcome"`
	Replayed   bool   `json:"replayed"`
	DurationMS int64  `json:"durationMs"`
}

// CheckoutAnswer is the body of a checkout answered 200 (paid) or 202
// (pending).
type CheckoutAnswer struct {
	OrderID int64 `json:"orderId"`
	// Status is the order's status that the answer leaves it in.
	Status            string  `json:"status"`
	Total             string  `json:"total"`
	Currency          string  `json:"currency"`
	ProviderPaymentID *string `json:"providerPaymentId"`
	IdempotencyKey    string  `json:"idempotencyKey"`
}

// Settlement is the body of GET /api/settlements/{date}, and of a POST
// /api/settlements/{date}/run that finished in time: one provider's books
// of the date.
type Settlement struct {
	// Provider names the provider whose report was matched: each
	// provider's books are settled on their own.
	Provider string `json:"provider"`
	Date     string `json:"date"`
	// Status is provisional while succeeded attempts await their report
	// line within the grace period, final otherwise.
	Status     string            `json:"status"`
	FinishedAt time.Time         `json:"finishedAt"`
	GraceDays  int               `json:"graceDays"`
	Lines      int               `json:"lines"`
	Matched    int               `json:"matched"`
	Awaiting   int               `json:"awaiting"`
	Totals     []SettlementTotal `json:"totals"`
	// ExceptionCounts counts every exception by kind; Exceptions lists the
	// first of them, up to the API's batch.
	ExceptionCounts map[string]int        `json:"exceptionCounts"`
	Exceptions      []SettlementException `json:"exceptions"`
	// OpenExceptions counts the exceptions that no one has resolved yet:
	// every exception but the resolved ones of Exceptions.
	OpenExceptions int `json:"openExceptions"`
}

// SettlementTotal sums the report's lines of one currency.
type SettlementTotal struct {
	Currency string `json:"currency"`
	Lines    int    `json:"lines"`
	Gross    string `json:"gross"`
	Fee      string `json:"fee"`
	Net      string `json:"net"`
}

// SettlementException is one thing a settlement found wrong.
type SettlementException struct {
	Kind              string `json:"kind"`
	ChargeID          string `json:"chargeId,omitempty"`
	MerchantReference string `json:"merchantReference,omitempty"`
	OrderID           int64  `json:"orderId,omitempty"`
	IdempotencyKey    string `json:"idempotencyKey,omitempty"`
	// Line is the report line, absent when the report has none.
	Line int `json:"line,omitempty"`
	// Reported is what the report says, Expected what the attempt holds.
	Reported *Amount `json:"reported,omitempty"`
	Expected *Amount `json:"expected,omitempty"`
	// Detail is a sentence a person can act on.
	Detail string `json:"detail"`
	// ID names the exception by what it is about (16 hex digits), the same
	// across reruns of the date: the resolve route takes it.
	ID string `json:"id"`
	// Resolution is what a person decided about the exception; null while
	// it is open.
	Resolution *ExceptionResolution `json:"resolution"`
}

// ResolveExceptionRequest is the body of POST
// /api/settlements/{date}/exceptions/{id}/resolve.
type ResolveExceptionRequest struct {
	// Note says what was done about the exception and why: free text of 1
	// to 1000 characters, not blank.
	Note string `json:"note"`
}

// ExceptionResolution is the resolution of one settlement exception, as
// the resolve route answers it and a settlement's exception shows it.
type ExceptionResolution struct {
	ExceptionID string `json:"exceptionId"`
	// Provider and Date name the provider's settlement of the exception.
	Provider   string    `json:"provider"`
	Date       string    `json:"date"`
	Note       string    `json:"note"`
	ResolvedBy KeyRef    `json:"resolvedBy"`
	ResolvedAt time.Time `json:"resolvedAt"`
}

// KeyRef names the API key that did something: its public id and its
// name, never the key.
type KeyRef struct {
	KeyID   string `json:"keyId"`
	KeyName string `json:"keyName"`
}

// AuditEntry is one operator action as GET /api/audit-log shows it: who,
// what, when, the request and the result.
type AuditEntry struct {
	// ID orders the entries: a later entry has a larger one.
	ID int64     `json:"id"`
	At time.Time `json:"at"`
	// KeyID and KeyName name the API key that acted.
	KeyID   string `json:"keyId"`
	KeyName string `json:"keyName"`
	// Via is "api", or "console" for an action of the operator console.
	Via string `json:"via"`
	// Action names what was done, such as "refund_order".
	Action string `json:"action"`
	Method string `json:"method"`
	Path   string `json:"path"`
	// Request is the request's body, its first 8 KiB when longer, with
	// "…(cut)" at the end.
	Request string `json:"request"`
	// IdempotencyKey is the request's Idempotency-Key; null when it had
	// none.
	IdempotencyKey *string `json:"idempotencyKey"`
	// Status is the HTTP status of the answer.
	Status int `json:"status"`
	// Result says in one line what the answer was: the Location of what
	// it created, "ok", or the problem's detail. It never holds a secret.
	Result string `json:"result"`
}

// AuditLog is the body of GET /api/audit-log: a page of the audit log,
// newest first.
type AuditLog struct {
	Entries []AuditEntry `json:"entries"`
	// NextBefore is the before of the next page when this one is full;
	// null when it is the last.
	NextBefore *int64 `json:"nextBefore"`
}

// Amount is a decimal amount beside its currency.
type Amount struct {
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

// SettlementRunning is the body of a POST /api/settlements/{date}/run
// answered 202: the run goes on.
type SettlementRunning struct {
	Provider string `json:"provider"`
	Date     string `json:"date"`
	// Status is always "running".
	Status     string `json:"status"`
	WorkflowID string `json:"workflowId"`
}

// EventReceipt is the body of POST /webhooks/provider answered 200: what
// handling the event did.
type EventReceipt struct {
	Result string `json:"result"`
}

// SettlementRunRequest is the body of POST /api/settlements/{date}/run: an
// empty JSON object. The body is required, as application/json, so that no
// cross-site form post can run the books.
type SettlementRunRequest struct{}

// Health is the body of GET /healthz answered 200.
type Health struct {
	Status string `json:"status"`
}

// ProblemType is the RFC 9457 type URI of an error answer: what went wrong,
// as far as the client needs to know.
type ProblemType string

// The problem types of the checkout API.
const (
	ProblemInvalidRequest      ProblemType = "urn:chargeonce:problem:invalid-request"
	ProblemNotFound            ProblemType = "urn:chargeonce:problem:not-found"
	ProblemMethodNotAllowed    ProblemType = "urn:chargeonce:problem:method-not-allowed"
	ProblemCardDeclined        ProblemType = "urn:chargeonce:problem:card-declined"
	ProblemPaymentInProgress   ProblemType = "urn:chargeonce:problem:payment-in-progress"
	ProblemPaymentFailed       ProblemType = "urn:chargeonce:problem:payment-failed"
	ProblemPaymentNeedsReview  ProblemType = "urn:chargeonce:problem:payment-needs-review"
	ProblemUnavailable         ProblemType = "urn:chargeonce:problem:unavailable"
	ProblemNoPaymentWorker     ProblemType = "urn:chargeonce:problem:no-payment-worker"
	ProblemProviderUnavailable ProblemType = "urn:chargeonce:problem:provider-unavailable"
	ProblemInternalError       ProblemType = "urn:chargeonce:problem:internal-error"
	ProblemUnauthorized        ProblemType = "urn:chargeonce:problem:unauthorized"
	// ProblemAPIKeyRequired: no API key, or one that is unknown, revoked or
	// malformed.
	ProblemAPIKeyRequired ProblemType = "urn:chargeonce:problem:api-key-required"
	// ProblemForbidden: the API key is valid but lacks the route's scope.
	ProblemForbidden ProblemType = "urn:chargeonce:problem:forbidden"
	// ProblemIdempotencyKeyRequired: a refund, capture or void request
	// without a valid Idempotency-Key header.
	ProblemIdempotencyKeyRequired ProblemType = "urn:chargeonce:problem:idempotency-key-required"
	// ProblemIdempotencyKeyReused: the Idempotency-Key was sent before with
	// another request.
	ProblemIdempotencyKeyReused ProblemType = "urn:chargeonce:problem:idempotency-key-reused"
	// ProblemRequestInProgress: the first request with this Idempotency-Key
	// is still being answered.
	ProblemRequestInProgress ProblemType = "urn:chargeonce:problem:request-in-progress"
	// ProblemNotRefundable: the order was never paid, or the charge is not
	// one the books hold.
	ProblemNotRefundable ProblemType = "urn:chargeonce:problem:not-refundable"
	// ProblemRefundExceedsCharge: the refund would return more than the
	// charge can still refund.
	ProblemRefundExceedsCharge ProblemType = "urn:chargeonce:problem:refund-exceeds-charge"
	// ProblemNothingRefunded: no refund request can have been processed;
	// the same request may be sent again.
	ProblemNothingRefunded ProblemType = "urn:chargeonce:problem:nothing-refunded"
	// ProblemNotHeld: the order holds no authorization to capture or
	// void: it was never authorized, or its hold has ended.
	ProblemNotHeld ProblemType = "urn:chargeonce:problem:not-held"
	// ProblemHoldMoving: another capture or void of the hold is pending.
	ProblemHoldMoving ProblemType = "urn:chargeonce:problem:hold-moving"
	// ProblemCaptureExceedsHold: the capture asks for more than the hold.
	ProblemCaptureExceedsHold ProblemType = "urn:chargeonce:problem:capture-exceeds-hold"
	// ProblemNothingMoved: no request of the capture or void can have been
	// processed, so the hold is as it was; the same request may be sent
	// again.
	ProblemNothingMoved ProblemType = "urn:chargeonce:problem:nothing-moved"
	// ProblemEndpointDisabled: an event cannot be replayed to a disabled
	// endpoint; enable it first.
	ProblemEndpointDisabled ProblemType = "urn:chargeonce:problem:endpoint-disabled"
	// ProblemAlreadyResolved: the settlement exception was resolved
	// before with another note; the first resolution is kept.
	ProblemAlreadyResolved ProblemType = "urn:chargeonce:problem:already-resolved"
	// ProblemNoRoute: no provider of the routing takes a payment of the
	// order's currency and amount; nothing was stored or charged.
	ProblemNoRoute ProblemType = "urn:chargeonce:problem:no-route"
)

// problemTypes is the one map from each problem type to its HTTP status and
// its title.
var problemTypes = map[ProblemType]struct {
	status int
	title  string
}{
	ProblemInvalidRequest:         {http.StatusBadRequest, "The request is not valid."},
	ProblemNotFound:               {http.StatusNotFound, "The resource does not exist."},
	ProblemMethodNotAllowed:       {http.StatusMethodNotAllowed, "The method is not allowed on this resource."},
	ProblemCardDeclined:           {http.StatusPaymentRequired, "The card was declined."},
	ProblemPaymentInProgress:      {http.StatusConflict, "A previous payment for this order is still being verified."},
	ProblemPaymentFailed:          {http.StatusInternalServerError, "The payment failed because of an error on our side."},
	ProblemPaymentNeedsReview:     {http.StatusInternalServerError, "A previous payment for this order failed and is being reviewed."},
	ProblemUnavailable:            {http.StatusServiceUnavailable, "The service is unavailable."},
	ProblemNoPaymentWorker:        {http.StatusServiceUnavailable, "No payment worker has started yet; nothing was charged"},
	ProblemProviderUnavailable:    {http.StatusServiceUnavailable, "The payment provider is unavailable; nothing was charged."},
	ProblemInternalError:          {http.StatusInternalServerError, "An internal error occurred."},
	ProblemUnauthorized:           {http.StatusUnauthorized, "The request's signature is missing or not valid."},
	ProblemAPIKeyRequired:         {http.StatusUnauthorized, "A valid API key is required."},
	ProblemForbidden:              {http.StatusForbidden, "The API key may not do this."},
	ProblemIdempotencyKeyRequired: {http.StatusBadRequest, "An Idempotency-Key header is required."},
	ProblemIdempotencyKeyReused:   {http.StatusUnprocessableEntity, "The Idempotency-Key was used with another request."},
	ProblemRequestInProgress:      {http.StatusConflict, "A request with this Idempotency-Key is still in progress."},
	ProblemNotRefundable:          {http.StatusConflict, "There is nothing to refund."},
	ProblemRefundExceedsCharge:    {http.StatusUnprocessableEntity, "The refund exceeds what the charge can still refund."},
	ProblemNothingRefunded:        {http.StatusServiceUnavailable, "The payment provider is unavailable; nothing was refunded."},
	ProblemEndpointDisabled:       {http.StatusConflict, "The endpoint is disabled."},
	ProblemAlreadyResolved:        {http.StatusConflict, "The exception is resolved already."},
	ProblemNoRoute:                {http.StatusUnprocessableEntity, "No payment provider takes this payment; nothing was charged."},
	ProblemNotHeld:                {http.StatusConflict, "The order holds no authorization."},
	ProblemHoldMoving:             {http.StatusConflict, "Another capture or void of the hold is pending."},
	ProblemCaptureExceedsHold:     {http.StatusUnprocessableEntity, "The capture exceeds the authorized amount."},
	ProblemNothingMoved:           {http.StatusServiceUnavailable, "The payment provider is unavailable; the hold is unchanged."},
}

// Problem is an error answer of the API, an RFC 9457 problem details object
// sent as application/problem+json.
type Problem struct {
	Type   ProblemType `json:"type"`
	Title  string      `json:"title"`
	Status int         `json:"status"`
	Detail string      `json:"detail,omitempty"`
	// DeclineCode is the provider's reason for a declined card.
	DeclineCode string `json:"declineCode,omitempty"`
	// OrderID names the order the problem is about, when there is one.
	OrderID int64 `json:"orderId,omitempty"`
}

// NewProblem is the problem of type t, with its status and title, and the
// detail, which is written for the client and may be empty. A type that is
// not one of the API's is an internal error.
func NewProblem(t ProblemType, detail string) Problem {
	p, ok := problemTypes[t]
	if !ok {
		t, p = ProblemInternalError, problemTypes[ProblemInternalError]
	}
	return Problem{Type: t, Title: p.title, Status: p.status, Detail: detail}
}
