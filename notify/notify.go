// Package notify delivers the merchant events of the store's outbox to the
// merchant's endpoints: it claims the deliveries that are due, POSTs each
// event signed per Standard Webhooks (package internal/webhook), records
// the try, and schedules the next one after a failure.
//
// The event and its deliveries were committed with the change they report
// (store.SettleAttempt, SettleRefund, RecordLateCharge), so a dispatcher
// that stops loses nothing: the next one, in this process or another,
// claims what is due. Dispatchers share the outbox through the store's
// lease: a claimed delivery is no other dispatcher's for Lease, far longer
// than a try may take, so that one try is never sent twice in parallel.
// Delivery is at least once: a try whose answer was lost, or whose record
// was, is sent again, with the same webhook-id, by which the receiver
// drops the second.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"chargeonce/api/wire"
	"chargeonce/internal/webhook"
	"chargeonce/store"
)

// Timeout bounds one try: an endpoint that has not answered 2xx by then
// failed.
const Timeout = 10 * time.Second

// Lease is how long a claimed delivery is its dispatcher's alone; a
// dispatcher that stopped mid-try leaves it to the others after that.
const Lease = 30 * time.Second

// DefaultPoll is how often a dispatcher looks for due deliveries when it
// found none.
const DefaultPoll = 500 * time.Millisecond

// batch is how many deliveries one claim takes, and how many tries run at
// once: a batch of Timeout-long tries ends well within Lease.
const batch = 16

// userAgent names the sender to the receiver's logs.
const userAgent = "chargeonce-events/1"

// Config is what a Dispatcher runs with.
type Config struct {
	// Store holds the outbox.
	Store store.EventStore
	// Logger gets a line for each try that did not deliver, and one
	// (at debug level) for each that did.
	Logger *slog.Logger
	// Registerer gets the delivery metrics; nil registers none.
	Registerer prometheus.Registerer
	// Schedule is the wait after each failed try; nil means
	// DefaultSchedule.
	Schedule []time.Duration
	// Poll is how often to look for due deliveries; zero means
	// DefaultPoll.
	Poll time.Duration
	// AllowedNetworks are the internal networks that events may be sent
	// to; none by default, so that events reach public addresses only.
	AllowedNetworks AllowedNetworks
	// HTTPClient sends the events; nil means NewHTTPClient's, which
	// connects to the addresses AllowedNetworks allows only.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Dispatcher delivers the outbox's events.
type Dispatcher struct {
	store    store.EventStore
	log      *slog.Logger
	schedule []time.Duration
	poll     time.Duration
	client   *http.Client
	allows   AllowedNetworks
	now      func() time.Time
	results  *prometheus.CounterVec
}

// New checks cfg and returns a Dispatcher; its metrics are registered now.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Store == nil || cfg.Logger == nil {
		return nil, errors.New("notify: the store and the logger are required")
	}
	d := &Dispatcher{store: cfg.Store, log: cfg.Logger, schedule: cfg.Schedule, poll: cfg.Poll, client: cfg.HTTPClient, allows: cfg.AllowedNetworks, now: cfg.Now}
	if d.schedule == nil {
		d.schedule = DefaultSchedule
	}
	if err := ValidateSchedule(d.schedule); err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	switch {
	case d.poll == 0:
		d.poll = DefaultPoll
	case d.poll < 0:
		return nil, fmt.Errorf("notify: the poll period %v is negative", d.poll)
	}
	if d.client == nil {
		d.client = NewHTTPClient(d.allows)
	}
	if d.now == nil {
		d.now = time.Now
	}
	d.results = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chargeonce_event_deliveries_total",
		Help: "Tries to deliver an event to a merchant's endpoint, by result: delivered, failed (tried again), gone (a 410 disabled the endpoint) or given_up (the retry schedule ran out).",
	}, []string{"result"})
	for _, r := range []store.DeliveryResult{store.DeliveryDelivered, store.DeliveryFailed, store.DeliveryGone, store.DeliveryGivenUp} {
		d.results.WithLabelValues(string(r))
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(d.results); err != nil {
			return nil, fmt.Errorf("notify: %w", err)
		}
		if err := cfg.Registerer.Register(&outboxGauges{store: d.store, now: d.now, log: d.log}); err != nil {
			return nil, fmt.Errorf("notify: %w", err)
		}
	}
	return d, nil
}

// Run delivers until ctx ends. A try that ctx cuts short is not recorded:
// its lease runs out, and it is sent again.
func (d *Dispatcher) Run(ctx context.Context) {
	for {
		due, err := d.store.ClaimDeliveries(ctx, d.now(), Lease, batch)
		if err != nil && ctx.Err() == nil {
			d.log.Error("event deliveries not claimed; trying again", "error", err, "retry_in", d.poll)
		}
		var tries sync.WaitGroup
		for _, dd := range due {
			tries.Go(func() { d.deliver(ctx, dd) })
		}
		tries.Wait()
		if len(due) == batch {
			continue // more may be due
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(d.poll):
		}
	}
}

// deliver makes one try of dd and records it.
func (d *Dispatcher) deliver(ctx context.Context, dd store.DueDelivery) {
	at := d.now()
	status, failure, sendErr := d.send(ctx, dd, at)
	if ctx.Err() != nil {
		return
	}
	a := store.DeliveryAttempt{DeliveryID: dd.ID, Attempt: dd.Attempt, At: at, HTTPStatus: status, Failure: failure, Duration: d.now().Sub(at)}
	switch {
	case failure == "":
		a.Result = store.DeliveryDelivered
	case status == http.StatusGone:
		a.Result = store.DeliveryGone
	default:
		if w, ok := wait(d.schedule, dd.FailedInRound); ok {
			a.Result, a.NextAttemptAt = store.DeliveryFailed, at.Add(w)
		} else {
			a.Result = store.DeliveryGivenUp
		}
	}
	if err := d.store.RecordDeliveryAttempt(context.WithoutCancel(ctx), a); err != nil {
		// The lease runs out and another try is made: at least once.
		d.log.Error("event delivery not recorded; it will be tried again", "event", dd.Event.ID, "endpoint", dd.Endpoint.ID,
			"attempt", dd.Attempt, "error", err)
		return
	}
	d.results.WithLabelValues(string(a.Result)).Inc()
	attrs := []any{"event", dd.Event.ID, "type", dd.Event.Type, "order", dd.Event.OrderID, "sequence", dd.Event.Sequence,
		"endpoint", dd.Endpoint.ID, "attempt", dd.Attempt, "status", status, "duration", a.Duration.Round(time.Millisecond)}
	if a.Failure != "" {
		attrs = append(attrs, "failure", a.Failure)
	}
	if sendErr != nil {
		attrs = append(attrs, "error", sendErr)
	}
	switch a.Result {
	case store.DeliveryDelivered:
		d.log.Debug("event delivered", attrs...)
	case store.DeliveryFailed:
		d.log.Warn("event delivery failed; tried again later", append(attrs, "next_attempt_at", a.NextAttemptAt.UTC().Format(time.RFC3339))...)
	case store.DeliveryGone:
		d.log.Warn("endpoint answered 410 Gone: it is disabled, and nothing more is sent there", attrs...)
	case store.DeliveryGivenUp:
		d.log.Error("event delivery given up: the retry schedule ran out; a replay sends it again", attrs...)
	}
}

// send POSTs the event of dd, signed at at, and returns the endpoint's
// status, 0 when no answer arrived, and the class of the failure unless
// it answered 2xx; the error says what the class does not, for the
// worker's log.
func (d *Dispatcher) send(ctx context.Context, dd store.DueDelivery, at time.Time) (int, store.DeliveryFailure, error) {
	secrets, err := LiveSecrets(dd.Endpoint, at)
	if err != nil {
		return 0, store.FailureNotSent, err
	}
	body, err := json.Marshal(Render(dd.Event))
	if err != nil {
		return 0, store.FailureNotSent, fmt.Errorf("encode the event: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dd.Endpoint.URL, bytes.NewReader(body))
	if err != nil {
		return 0, store.FailureNotSent, fmt.Errorf("the endpoint's URL: %w", err)
	}
	// An endpoint registered before the rule, or while a wider list
	// was allowed, is held to it now.
	if err := d.allows.CheckURL(req.URL); err != nil {
		return 0, store.FailureRefusedAddress, fmt.Errorf("the endpoint's URL %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	webhook.Sign(req.Header, dd.Event.ID, at, body, secrets...)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, classify(err), err
	}
	defer resp.Body.Close()
	// Read a little of the answer, so that the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, store.FailureHTTPStatus, nil
	}
	return resp.StatusCode, "", nil
}

// LiveSecrets are the endpoint's secrets that sign at at: the current
// one, and the previous one until it expires.
func LiveSecrets(e store.Endpoint, at time.Time) ([]webhook.Secret, error) {
	current, err := webhook.ParseSecret(e.Secret)
	if err != nil {
		return nil, fmt.Errorf("the endpoint's secret: %w", err)
	}
	secrets := []webhook.Secret{current}
	if e.PreviousSecret != "" && e.PreviousSecretExpiresAt != nil && at.Before(*e.PreviousSecretExpiresAt) {
		previous, err := webhook.ParseSecret(e.PreviousSecret)
		if err != nil {
			return nil, fmt.Errorf("the endpoint's previous secret: %w", err)
		}
		secrets = append(secrets, previous)
	}
	return secrets, nil
}

// Render is the wire form of an event: the body of every try, and an entry
// of GET /api/orders/{id}/events.
func Render(ev store.MerchantEvent) wire.Event {
	out := wire.Event{
		ID:        ev.ID,
		Type:      string(ev.Type),
		Timestamp: ev.CreatedAt.UTC(),
		Data: wire.EventData{
			OrderID:     ev.OrderID,
			Sequence:    ev.Sequence,
			OrderStatus: string(ev.OrderStatus),
		},
	}
	if ev.RefundKey != "" {
		out.Data.Refund = &wire.EventRefund{
			ID:               ev.RefundKey,
			ChargeID:         ev.ChargeID,
			Status:           ev.Status,
			Amount:           ev.Amount.Decimal(),
			Currency:         ev.Amount.Currency,
			ProviderRefundID: optional(ev.ProviderID),
			FailureReason:    optional(ev.FailureReason),
			Provider:         ev.Provider,
		}
		return out
	}
	out.Data.Payment = &wire.EventPayment{
		IdempotencyKey:    ev.AttemptKey,
		Status:            ev.Status,
		Amount:            ev.Amount.Decimal(),
		Currency:          ev.Amount.Currency,
		ProviderPaymentID: optional(ev.ProviderID),
		Provider:          ev.Provider,
		RoutedBy:          optional(ev.RoutedBy),
	}
	return out
}

// optional is nil for an empty string, which the wire shows as null.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// outboxGauges reads the outbox's gauges from the store at each scrape,
// so that every dispatcher's process shows the same figures, never stale.
type outboxGauges struct {
	store store.EventStore
	now   func() time.Time
	log   *slog.Logger
}

var (
	pendingDesc = prometheus.NewDesc("chargeonce_event_deliveries_pending",
		"Deliveries of events to enabled endpoints that wait to be delivered.", nil, nil)
	failingDesc = prometheus.NewDesc("chargeonce_event_endpoint_failing_seconds",
		"Per enabled endpoint, how long ago the oldest of its deliveries still pending first failed; 0 when none is failing.",
		[]string{"endpoint"}, nil)
)

// Describe implements prometheus.Collector.
func (g *outboxGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- failingDesc
}

// Collect implements prometheus.Collector.
func (g *outboxGauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stats, err := g.store.DeliveryStats(ctx)
	var endpoints []store.Endpoint
	if err == nil {
		endpoints, err = g.store.Endpoints(ctx)
	}
	if err != nil {
		g.log.Warn("event delivery metrics not collected", "error", err)
		ch <- prometheus.NewInvalidMetric(pendingDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(stats.Pending))
	now := g.now()
	for _, e := range endpoints {
		if e.DisabledAt != nil {
			continue
		}
		age := 0.0
		if since, ok := stats.FailingSince[e.ID]; ok {
			age = max(now.Sub(since).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(failingDesc, prometheus.GaugeValue, age, e.ID)
	}
}
