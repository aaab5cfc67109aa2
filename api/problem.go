package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
)

// kind is what went wrong with a request, as far as the client needs to
// know. Every error answer names one, and problems maps it to its status.
type kind string

const (
	kindInvalid          kind = "invalid-request"
	kindNotFound         kind = "not-found"
	kindMethodNotAllowed kind = "method-not-allowed"
	kindDeclined         kind = "card-declined"
	kindConflict         kind = "payment-in-progress"
	kindFailed           kind = "payment-failed"
	kindNeedsReview      kind = "payment-needs-review"
	kindUnavailable      kind = "unavailable"
	kindNoWorker         kind = "no-payment-worker"
	kindNotProcessed     kind = "provider-unavailable"
	kindInternal         kind = "internal-error"
	kindUnauthorized     kind = "unauthorized"
)

// problemTypeBase prefixes the problem kind to form the RFC 9457 type URI.
const problemTypeBase = "urn:chargeonce:problem:"

// titleConflict is the title the contract fixes for a checkout refused while
// an earlier attempt is open.
const titleConflict = "A previous payment for this order is still being verified."

// problems is the one place that maps each kind to its HTTP status and title.
var problems = map[kind]struct {
	status int
	title  string
}{
	kindInvalid:          {http.StatusBadRequest, "The request is not valid."},
	kindNotFound:         {http.StatusNotFound, "The resource does not exist."},
	kindMethodNotAllowed: {http.StatusMethodNotAllowed, "The method is not allowed on this resource."},
	kindDeclined:         {http.StatusPaymentRequired, "The card was declined."},
	kindConflict:         {http.StatusConflict, titleConflict},
	kindFailed:           {http.StatusInternalServerError, "The payment failed because of an error on our side."},
	kindNeedsReview:      {http.StatusInternalServerError, "A previous payment for this order failed and is being reviewed."},
	kindUnavailable:      {http.StatusServiceUnavailable, "The service is unavailable."},
	kindNoWorker:         {http.StatusServiceUnavailable, "No payment worker has started yet; nothing was charged"},
	kindNotProcessed:     {http.StatusServiceUnavailable, "The payment provider is unavailable; nothing was charged."},
	kindInternal:         {http.StatusInternalServerError, "An internal error occurred."},
	kindUnauthorized:     {http.StatusUnauthorized, "The request's signature is missing or not valid."},
}

// problem is an RFC 9457 problem details object.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// DeclineCode is the provider's reason for a declined card.
	DeclineCode string `json:"declineCode,omitempty"`
	// OrderID names the order the problem is about, when there is one.
	OrderID int64 `json:"orderId,omitempty"`
}

func newProblem(k kind, detail string) problem {
	p, ok := problems[k]
	if !ok {
		k, p = kindInternal, problems[kindInternal]
	}
	return problem{Type: problemTypeBase + string(k), Title: p.title, Status: p.status, Detail: detail}
}

// writeProblem answers with p as application/problem+json.
func writeProblem(w http.ResponseWriter, log *slog.Logger, p problem) {
	writeJSON(w, log, p.Status, "application/problem+json", p)
}

// writeJSON answers with v as JSON of the given content type.
func writeJSON(w http.ResponseWriter, log *slog.Logger, status int, contentType string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Every value written here is built from plain structs; failing to
		// marshal one is a bug, answered as such.
		log.Error("encode response", "error", err)
		status, contentType = http.StatusInternalServerError, "application/problem+json"
		body, _ = json.Marshal(newProblem(kindInternal, ""))
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
