package activities

import (
	"github.com/prometheus/client_golang/prometheus"

	"chargeonce"
	"chargeonce/provider"
)

// Metrics counts what the activities see at the providers, by provider and
// by operation (chargeonce.Operation), so that one dashboard serves every
// money movement at every provider. A nil *Metrics counts nothing, so that
// tests and tools may leave it out.
type Metrics struct {
	requests *prometheus.CounterVec
	replays  *prometheus.CounterVec
	lookups  *prometheus.CounterVec
	refunds  *prometheus.CounterVec
}

// Lookup results, the values of the "result" label of
// chargeonce_provider_lookups_total, besides the Found values.
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
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chargeonce_provider_requests_total",
			Help: "Requests that create something at a provider (a charge, a refund), by provider, operation and outcome (approved, declined, in_flight, timeout, breaker_open, ...).",
		}, []string{"provider", "operation", "outcome"}),
		replays: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chargeonce_provider_replays_total",
			Help: "Answers that a provider replayed from its idempotency store, by provider and operation.",
		}, []string{"provider", "operation"}),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chargeonce_provider_lookups_total",
			Help: "Lookups at a provider by merchant reference, by provider, operation and result (succeeded, failed_only, failed, pending, none, mismatch, double_charge, error).",
		}, []string{"provider", "operation", "result"}),
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
		reg.MustRegister(m.requests, m.replays, m.lookups, m.refunds)
	}
	return m
}

// request counts one request of op at the provider named name.
func (m *Metrics) request(name string, op chargeonce.Operation, ex provider.Exchange) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(name, string(op), string(ex.Outcome)).Inc()
	if ex.Replayed {
		m.replays.WithLabelValues(name, string(op)).Inc()
	}
}

// lookup counts one lookup of op at the provider named name.
func (m *Metrics) lookup(name string, op chargeonce.Operation, result string) {
	if m == nil {
		return
	}
	m.lookups.WithLabelValues(name, string(op), result).Inc()
}

func (m *Metrics) refundSettled(status chargeonce.RefundStatus) {
	if m == nil {
		return
	}
	m.refunds.WithLabelValues(string(status)).Inc()
}
