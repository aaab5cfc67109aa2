package activities

import (
	"github.com/prometheus/client_golang/prometheus"

	"chargeonce"
	"chargeonce/provider"
)

// Metrics counts what the activities see at the provider. A nil *Metrics
// counts nothing, so that tests and tools may leave it out.
type Metrics struct {
	chargeRequests  *prometheus.CounterVec
	replays         prometheus.Counter
	reconciliations *prometheus.CounterVec
	refunds         *prometheus.CounterVec
}

// Reconciliation results, the values of the "result" label of
// chargeonce_reconciliation_checks_total, besides the Found values.
const (
	reconcileMismatch     = "mismatch"
	reconcileDoubleCharge = "double_charge"
	reconcileError        = "error"
)

// NewMetrics creates the counters and registers them with reg. It panics if
// they are already registered, which is a wiring mistake caught at start.
// A nil reg creates unregistered counters.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		chargeRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chargeonce_provider_charge_requests_total",
			Help: "Charge requests to the provider, by outcome (approved, declined, in_flight, timeout, breaker_open, ...).",
		}, []string{"outcome"}),
		replays: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chargeonce_provider_replays_total",
			Help: "Charge answers that the provider replayed from its idempotency store.",
		}),
		reconciliations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chargeonce_reconciliation_checks_total",
			Help: "Lookups of an attempt at the provider by merchant reference, by result (succeeded, failed_only, none, mismatch, double_charge, error).",
		}, []string{"result"}),
		refunds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chargeonce_refunds_total",
			Help: "Refunds settled in the merchant database, by status (succeeded, failed, not_processed).",
		}, []string{"status"}),
	}
	// The settled statuses start at zero, so that a rate over them exists
	// before the first refund.
	for _, s := range []chargeonce.RefundStatus{chargeonce.RefundSucceeded, chargeonce.RefundFailed, chargeonce.RefundNotProcessed} {
		m.refunds.WithLabelValues(string(s))
	}
	if reg != nil {
		reg.MustRegister(m.chargeRequests, m.replays, m.reconciliations, m.refunds)
	}
	return m
}

func (m *Metrics) chargeRequest(outcome provider.Outcome, replayed bool) {
	if m == nil {
		return
	}
	m.chargeRequests.WithLabelValues(string(outcome)).Inc()
	if replayed {
		m.replays.Inc()
	}
}

func (m *Metrics) reconciliation(result string) {
	if m == nil {
		return
	}
	m.reconciliations.WithLabelValues(result).Inc()
}

func (m *Metrics) refundSettled(status chargeonce.RefundStatus) {
	if m == nil {
		return
	}
	m.refunds.WithLabelValues(string(status)).Inc()
}
