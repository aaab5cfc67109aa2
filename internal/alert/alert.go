// Package alert is chargeonce's one convention for what needs a human: an
// Error log line that carries the attribute alert=<name>, written with Attr,
// and the counter chargeonce_alerts_total{alert="<name>"}, which the
// process's logger increments for every such line (Counting) and on which
// deploy/alerts.yml pages.
//
// Because the count is taken from the log, code that raises an alert makes
// no metrics call of its own. That suits workflow code: the SDK's workflow
// logger writes nothing while a workflow replays, so a replay counts nothing
// twice.
package alert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// Name says what an alert is about. The log line it marks says which order
// and what to do.
type Name string

// The alerts. Each is logged once, by the layer that knows the event best.
const (
	// ContractViolation: the provider refused our request as a contract
	// violation (a 422 for a reused key with another body, a malformed
	// answer): a bug on our side. The attempt is marked failed.
	ContractViolation Name = "contract_violation"
	// ChargeMismatch: the provider holds a succeeded charge for an attempt
	// whose amount or currency differs. The attempt is marked failed.
	ChargeMismatch Name = "charge_mismatch"
	// DoubleCharge: the provider holds more than one succeeded charge for one
	// attempt. All but one must be refunded.
	DoubleCharge Name = "double_charge"
	// NeedsReview: a customer tried to pay an order whose earlier attempt
	// failed; only a human may offer the order for payment again.
	NeedsReview Name = "needs_review"
	// OutcomeUnrecorded: the provider's answer could not be written to the
	// merchant database for good; a human must record it.
	OutcomeUnrecorded Name = "outcome_unrecorded"
	// HandlerPanic: an API handler panicked.
	HandlerPanic Name = "handler_panic"
	// UnknownCharge: the provider's settlement report holds a charge that
	// no succeeded attempt made, such as a double charge or a charge for an
	// abandoned attempt. The customer paid for nothing: a refund candidate.
	UnknownCharge Name = "unknown_charge"
	// RefundUnknown: a refund's outcome is still unknown when the
	// provider's retention of its key nears. It is never sent again and
	// stays pending, with its request log as the evidence: a person asks
	// the provider (its dashboard, by the refund's merchant reference)
	// whether the refund exists, and then sends the workflow the
	// refund-event signal so that it looks the refund up once more, or
	// refunds again under a new refund if the provider holds none.
	RefundUnknown Name = "refund_unknown"
	// LateChargeRefunded: a charge arrived for an order that another charge
	// had paid (an attempt abandoned before the provider finished it, or a
	// second charge), and a refund of the whole late charge was started. A
	// person checks that the refund succeeds and tells the customer, who
	// was charged twice for a while.
	LateChargeRefunded Name = "late_charge_refunded"
	// RefundFailedAfterSuccess: the provider failed a refund that it had
	// reported as succeeded, so the customer has not got the money back. A
	// person refunds the customer another way, or refunds again once the
	// provider's reason (failure_reason) is resolved.
	RefundFailedAfterSuccess Name = "refund_failed_after_success"
	// RefundMismatch: the provider holds a refund under a refund's merchant
	// reference whose amount or currency differs from the refund. The
	// refund is marked failed; a person compares it with the provider's and
	// corrects the books.
	RefundMismatch Name = "refund_mismatch"
	// AuthorizationExpiring: a hold that nobody captured or voided nears
	// its deadline, when chargeonce ends it as the merchant chose (a void,
	// unless the checkout asked for a capture). A person who wants the
	// other outcome captures or voids it through the API before then.
	AuthorizationExpiring Name = "authorization_expiring"
	// HoldUnresolved: a hold is still authorized at the provider after
	// the time it should have expired there, or the provider's answer
	// cannot be read. A person looks the charge up on the provider's
	// dashboard, and voids or captures it there.
	HoldUnresolved Name = "hold_unresolved"
)

// names are every Name, which the counter starts at zero so that the alert
// rules see 0 rather than no series before the first alert.
var names = []Name{
	ContractViolation, ChargeMismatch, DoubleCharge, NeedsReview, OutcomeUnrecorded, HandlerPanic, UnknownCharge,
	RefundUnknown, LateChargeRefunded, RefundFailedAfterSuccess, RefundMismatch, AuthorizationExpiring, HoldUnresolved,
}

// key is the attribute key of an alert.
const key = "alert"

// Attr marks a log line as the alert n. Log it at Error, which every log
// level writes, so that the alert is both written and counted.
func Attr(n Name) slog.Attr {
	return slog.String(key, string(n))
}

// MetricName is the counter of alerts, by the label "alert".
const MetricName = "chargeonce_alerts_total"

// Counting returns a logger that writes what l writes and counts every
// record carrying Attr in MetricName on reg. The counter is registered once
// per registry: a second call with the same registry counts into the first
// one's counter.
func Counting(l *slog.Logger, reg prometheus.Registerer) (*slog.Logger, error) {
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricName,
		Help: "Log lines that need a human, by alert name.",
	}, []string{key})
	if err := reg.Register(counter); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return nil, fmt.Errorf("alert: register %s: %w", MetricName, err)
		}
		existing, ok := already.ExistingCollector.(*prometheus.CounterVec)
		if !ok {
			return nil, fmt.Errorf("alert: %s is registered as a %T, not a counter", MetricName, already.ExistingCollector)
		}
		counter = existing
	}
	for _, n := range names {
		counter.WithLabelValues(string(n))
	}
	return slog.New(countingHandler{Handler: l.Handler(), counter: counter}), nil
}

// countingHandler counts the alerts among the records it passes on.
type countingHandler struct {
	slog.Handler
	counter *prometheus.CounterVec
	// name is the alert that a logger derived with With(Attr(…)) carries.
	name string
}

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	name := h.name
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			name = a.Value.String()
			return false
		}
		return true
	})
	if name != "" {
		h.counter.WithLabelValues(name).Inc()
	}
	return h.Handler.Handle(ctx, r)
}

func (h countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	for _, a := range as {
		if a.Key == key {
			h.name = a.Value.String()
		}
	}
	h.Handler = h.Handler.WithAttrs(as)
	return h
}

func (h countingHandler) WithGroup(name string) slog.Handler {
	h.Handler = h.Handler.WithGroup(name)
	return h
}
