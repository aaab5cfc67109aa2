// Package metrics builds the Prometheus registry of a chargeonce process: the
// Go runtime and process collectors, the gauges of open payment attempts, of
// the lookup backlog and of the runs pinned to each version of the Worker
// Deployment, and the Temporal SDK's own metrics, all served from one
// /metrics endpoint.
package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// NewRegistry returns a registry with the Go runtime and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves the registry in the Prometheus text format.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// TemporalHandler returns a metrics handler for the Temporal SDK client that
// writes into reg. The SDK reports through OpenTelemetry; an OpenTelemetry
// Prometheus exporter bridges it into the same registry, so one scrape sees
// both our metrics and the SDK's (temporal_request, temporal_activity_execution_latency, …).
func TemporalHandler(reg prometheus.Registerer, logger *slog.Logger) (client.MetricsHandler, error) {
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: bridge the Temporal SDK metrics to Prometheus: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:             provider.Meter("temporal-sdk-go"),
		InitialAttributes: attribute.NewSet(),
		// The handler's default reaction to a recording error is to panic,
		// which must never take a payment worker down.
		OnError: func(err error) { logger.Warn("temporal sdk metric not recorded", "error", err) },
	}), nil
}

// AttemptStats reports the open payment attempts; the store implements it.
type AttemptStats interface {
	OpenAttemptStats(ctx context.Context) (open int, oldestCreated time.Time, err error)
}

// RefundStats reports the pending refunds; the store implements it.
type RefundStats interface {
	OpenRefundStats(ctx context.Context) (open int, oldestCreated time.Time, err error)
}

// openItems is a count of open things and the age of the oldest, read on
// every scrape, so the figures are never stale and no background loop is
// needed.
type openItems struct {
	read   func(ctx context.Context) (open int, oldestCreated time.Time, err error)
	what   string
	now    func() time.Time
	logger *slog.Logger
	count  *prometheus.Desc
	oldest *prometheus.Desc
}

// RegisterOpenAttempts registers the gauges chargeonce_open_attempts and
// chargeonce_oldest_open_attempt_age_seconds, read from stats at each scrape.
// An alert on the age is how an operator learns that reconciliation stopped
// before customers call to say they paid but their order is still pending.
func RegisterOpenAttempts(reg prometheus.Registerer, stats AttemptStats, logger *slog.Logger) error {
	return reg.Register(&openItems{
		read:   stats.OpenAttemptStats,
		what:   "open attempt",
		now:    time.Now,
		logger: logger,
		count: prometheus.NewDesc("chargeonce_open_attempts",
			"Payment attempts whose outcome is not known yet.", nil, nil),
		oldest: prometheus.NewDesc("chargeonce_oldest_open_attempt_age_seconds",
			"Age of the oldest open payment attempt; 0 when none is open.", nil, nil),
	})
}

// RegisterOpenRefunds registers the gauges chargeonce_open_refunds and
// chargeonce_oldest_open_refund_age_seconds, read from stats at each scrape.
// A refund is never abandoned, so an old pending one waits for a person: the
// age says how long a customer has waited for money back.
func RegisterOpenRefunds(reg prometheus.Registerer, stats RefundStats, logger *slog.Logger) error {
	return reg.Register(&openItems{
		read:   stats.OpenRefundStats,
		what:   "open refund",
		now:    time.Now,
		logger: logger,
		count: prometheus.NewDesc("chargeonce_open_refunds",
			"Refunds whose outcome is not known yet.", nil, nil),
		oldest: prometheus.NewDesc("chargeonce_oldest_open_refund_age_seconds",
			"Age of the oldest pending refund; 0 when none is pending.", nil, nil),
	})
}

// Describe implements prometheus.Collector.
func (o *openItems) Describe(ch chan<- *prometheus.Desc) {
	ch <- o.count
	ch <- o.oldest
}

// Collect implements prometheus.Collector.
func (o *openItems) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	open, oldest, err := o.read(ctx)
	if err != nil {
		o.logger.Warn(o.what+" metrics not collected", "error", err)
		ch <- prometheus.NewInvalidMetric(o.count, err)
		return
	}
	age := 0.0
	if open > 0 {
		age = o.now().Sub(oldest).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(o.count, prometheus.GaugeValue, float64(open))
	ch <- prometheus.MustNewConstMetric(o.oldest, prometheus.GaugeValue, age)
}
