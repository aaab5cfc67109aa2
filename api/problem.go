package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"chargeonce/api/wire"
	"chargeonce/checkout"
	"chargeonce/provider/routing"
	"chargeonce/store"
)

// problemError is an error that tells the client what went wrong: its
// problem type, and a detail written for people, such as which field of the
// body breaks which rule. fail answers it as it is.
type problemError struct {
	typ    wire.ProblemType
	detail string
}

func (e *problemError) Error() string { return string(e.typ) + ": " + e.detail }

// badRequest is the problemError of a request that breaks a rule of the
// contract. The handlers answer it with 400 before anything touches the
// database.
func badRequest(format string, args ...any) error {
	return &problemError{typ: wire.ProblemInvalidRequest, detail: fmt.Sprintf(format, args...)}
}

// writeProblem answers with p as application/problem+json.
func writeProblem(w http.ResponseWriter, log *slog.Logger, p wire.Problem) {
	writeJSON(w, log, p.Status, "application/problem+json", p)
}

// writeJSON answers with v as JSON of the given content type.
func writeJSON(w http.ResponseWriter, log *slog.Logger, status int, contentType string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Every value written here is one of the wire bodies; failing to
		// marshal one is a bug, answered as such.
		log.Error("encode response", "error", err)
		status, contentType = http.StatusInternalServerError, "application/problem+json"
		body, _ = json.Marshal(wire.NewProblem(wire.ProblemInternalError, ""))
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// noWorkerRetryAfter is when a checkout refused for want of a payment worker
// may be tried again: about the time a worker takes to start.
const noWorkerRetryAfter = 5 * time.Second

// fail answers err as a problem: it is the one place where an error becomes
// an answer. A *problemError is answered with its type and detail, and the
// errors that the store and the checkout service name with the problem the
// contract gives each. Any other error is logged and answered 500 without a
// detail, so that no internal error text reaches the client.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var (
		p       wire.Problem
		pe      *problemError
		noRoute *routing.NoRouteError
	)
	switch {
	case errors.As(err, &pe):
		p = wire.NewProblem(pe.typ, pe.detail)
	case errors.As(err, &noRoute):
		s.log.Warn("checkout refused: no routing rule covers the payment", "path", r.URL.Path, "currency", noRoute.Amount.Currency, "amount", noRoute.Amount.Decimal())
		p = wire.NewProblem(wire.ProblemNoRoute, "No payment provider here takes payments of "+noRoute.Amount.Currency+" "+noRoute.Amount.Decimal()+
			", so nothing was stored or charged.")
	case errors.Is(err, store.ErrNotFound):
		// Only orders are read by an id of the path; the settlement routes
		// answer a date not settled as a problemError of their own.
		p = wire.NewProblem(wire.ProblemNotFound, "no order "+r.PathValue("id"))
	case errors.Is(err, checkout.ErrConflict):
		p = wire.NewProblem(wire.ProblemPaymentInProgress, "Another card or amount is being verified for this order. Wait for it to settle, or retry with the same card.")
	case errors.Is(err, checkout.ErrNoTiming):
		s.log.Warn("checkout refused: no payment worker has published its timing in the merchant database yet", "path", r.URL.Path)
		w.Header().Set("Retry-After", strconv.Itoa(int(noWorkerRetryAfter/time.Second)))
		p = wire.NewProblem(wire.ProblemNoPaymentWorker, "The payment workers have not started yet; try again in a few seconds.")
	case errors.Is(err, checkout.ErrTimingUnreadable):
		// A deployment fault, not the customer's: the log says what to do.
		s.log.Error("checkout refused: this API cannot use the payment timing the workers published", "path", r.URL.Path, "error", err)
		p = wire.NewProblem(wire.ProblemUnavailable, "Payments are paused by a configuration fault on our side; nothing was charged. Try again later.")
	case errors.Is(err, checkout.ErrNeedsReview):
		p = wire.NewProblem(wire.ProblemPaymentNeedsReview, "An earlier payment of this order failed because of an error on our side. It is being reviewed; do not pay again.")
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		p = wire.NewProblem(wire.ProblemInternalError, "")
	}
	writeProblem(w, s.log, p)
}
