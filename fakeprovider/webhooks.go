package fakeprovider

import (
	"bytes"
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"chargeonce/internal/strictjson"
	"chargeonce/internal/webhook"
)

// DefaultWebhookSchedule is the wait before each retry of an event that was
// not acknowledged: the schedule of the Standard Webhooks specification,
// whose first try is immediate.
var DefaultWebhookSchedule = Schedule{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// DefaultWebhookTimeout bounds one delivery when WebhookConfig.Timeout is
// zero: an endpoint slower than this has failed the try.
const DefaultWebhookTimeout = 15 * time.Second

// maxConcurrentDeliveries bounds the deliveries in flight at once, so that
// a slow endpoint holds up only this many.
const maxConcurrentDeliveries = 8

// WebhookConfig configures the events the provider sends when a charge
// finishes or a refund settles. The zero value sends none.
type WebhookConfig struct {
	// URLs are the endpoints every event is posted to.
	URLs []string
	// Secrets sign every event, one signature each, as whsec_ strings;
	// several while the receiver rotates from one to the next. Required
	// with URLs.
	Secrets []string
	// Schedule is the wait before each retry; nil means
	// DefaultWebhookSchedule. After the last one the event is given up.
	Schedule Schedule
	// Timeout bounds one try; zero means DefaultWebhookTimeout.
	Timeout time.Duration
	// Chaos is how delivery misbehaves; the zero value does not.
	Chaos WebhookChaos
}

// WebhookChaos is how event delivery misbehaves, so that receivers can be
// tested against late, lost, repeated and reordered events.
type WebhookChaos struct {
	// Delay holds every event back before its first try.
	Delay time.Duration
	// DropRate is the probability, 0 to 1, that a try is lost on the way:
	// nothing reaches the endpoint, and the event is retried on the
	// schedule as after a timeout.
	DropRate float64
	// DuplicateRate is the probability, 0 to 1, that a delivered event is
	// delivered once more, with the same webhook-id.
	DuplicateRate float64
	// Reorder holds every event back by a random extra time below it, so
	// that events overtake one another.
	Reorder time.Duration
	// Seed seeds the random source behind the rates and Reorder.
	Seed uint64
}

// Validate reports the first problem that makes c unusable.
func (c WebhookChaos) Validate() error {
	switch {
	case c.Delay < 0:
		return fmt.Errorf("webhook delay must not be negative, got %s", c.Delay)
	case c.Reorder < 0:
		return fmt.Errorf("webhook reorder window must not be negative, got %s", c.Reorder)
	case !(c.DropRate >= 0 && c.DropRate <= 1):
		return fmt.Errorf("webhook drop rate must be between 0 and 1, got %v", c.DropRate)
	case !(c.DuplicateRate >= 0 && c.DuplicateRate <= 1):
		return fmt.Errorf("webhook duplicate rate must be between 0 and 1, got %v", c.DuplicateRate)
	}
	return nil
}

// webhookChaosJSON is the wire form of WebhookChaos, with durations as Go
// duration strings.
type webhookChaosJSON struct {
	Delay         string  `json:"delay"`
	DropRate      float64 `json:"drop_rate"`
	DuplicateRate float64 `json:"duplicate_rate"`
	Reorder       string  `json:"reorder"`
	Seed          uint64  `json:"seed"`
}

// MarshalJSON encodes c as {"delay", "drop_rate", "duplicate_rate",
// "reorder", "seed"}.
func (c WebhookChaos) MarshalJSON() ([]byte, error) {
	return json.Marshal(webhookChaosJSON{Delay: c.Delay.String(), DropRate: c.DropRate, DuplicateRate: c.DuplicateRate, Reorder: c.Reorder.String(), Seed: c.Seed})
}

// UnmarshalJSON decodes the form of MarshalJSON and refuses unknown
// fields. It does not validate; call Validate.
func (c *WebhookChaos) UnmarshalJSON(b []byte) error {
	var w webhookChaosJSON
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return err
	}
	delay, err := parseOptionalDuration("delay", w.Delay)
	if err != nil {
		return err
	}
	reorder, err := parseOptionalDuration("reorder", w.Reorder)
	if err != nil {
		return err
	}
	*c = WebhookChaos{Delay: delay, DropRate: w.DropRate, DuplicateRate: w.DuplicateRate, Reorder: reorder, Seed: w.Seed}
	return nil
}

func parseOptionalDuration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s must be a duration such as 5s, got %q", field, s)
	}
	return d, nil
}

// Schedule is a list of waits, as a flag takes it: durations separated by
// commas.
type Schedule []time.Duration

// String implements flag.Value.
func (s *Schedule) String() string {
	parts := make([]string, len(*s))
	for i, d := range *s {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}

// Set implements flag.Value: it replaces the schedule with the one in v.
func (s *Schedule) Set(v string) error {
	var out Schedule
	for part := range strings.SplitSeq(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d <= 0 {
			return fmt.Errorf("a schedule is positive durations separated by commas, such as 5s,5m,30m; got %q", part)
		}
		out = append(out, d)
	}
	*s = out
	return nil
}

func (c WebhookConfig) withDefaults() WebhookConfig {
	if c.Schedule == nil {
		c.Schedule = DefaultWebhookSchedule
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultWebhookTimeout
	}
	return c
}

// Validate reports the first problem that makes c unusable.
func (c WebhookConfig) Validate() error {
	for _, raw := range c.URLs {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("webhook URL %q must be an absolute http or https URL", raw)
		}
	}
	if len(c.URLs) > 0 {
		if _, err := webhook.ParseSecrets(c.Secrets); err != nil {
			return fmt.Errorf("webhook secret: %w", err)
		}
	}
	for _, d := range c.Schedule {
		if d <= 0 {
			return fmt.Errorf("webhook schedule waits must be positive, got %s", d)
		}
	}
	if c.Timeout < 0 {
		return fmt.Errorf("webhook timeout must not be negative, got %s", c.Timeout)
	}
	return c.Chaos.Validate()
}

// Delivery is one try of one event at one endpoint.
type Delivery struct {
	// ID is the event's webhook-id, the same on every try.
	ID       string `json:"id"`
	Endpoint string `json:"endpoint"`
	Type     string `json:"type"`
	ChargeID string `json:"charge_id"`
	// RefundID is the refund of a refund event; empty for a charge's.
	RefundID string `json:"refund_id,omitempty"`
	// Try counts the tries of the event at the endpoint, from 1.
	Try int `json:"try"`
	// Status is the endpoint's answer; 0 when none came.
	Status int       `json:"status"`
	Time   time.Time `json:"time"`
	// Outcome says what became of the try.
	Outcome string `json:"outcome"`
}

// The outcomes of a delivery try, as Delivery.Outcome says them.
const (
	DeliveryDelivered = "delivered"
	DeliveryDuplicate = "delivered again as a duplicate"
	DeliveryDropped   = "dropped on the way; retried on the schedule"
	DeliveryFailed    = "not acknowledged; retried on the schedule"
	DeliveryGaveUp    = "not acknowledged; the schedule is over, the event is given up"
	DeliveryGone      = "410 Gone: no more events to this endpoint"
)

// event is the body of an event: data is a Charge or a Refund.
type event struct {
	Type string `json:"type"`
	Data any    `json:"data"`
}

// pending is an event waiting for its next try at one endpoint.
type pending struct {
	id, endpoint, typ, chargeID, refundID string
	body                                  []byte
	// tries is how many tries were made.
	tries int
	due   time.Time
}

// pendingQueue orders the pending events by when they are due.
type pendingQueue []*pending

func (q pendingQueue) Len() int           { return len(q) }
func (q pendingQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q pendingQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *pendingQueue) Push(x any)        { *q = append(*q, x.(*pending)) }
func (q *pendingQueue) Pop() any {
	old := *q
	last := old[len(old)-1]
	*q = old[:len(old)-1]
	return last
}

// webhooks delivers the events, at least once, from a queue of its own:
// a charge only enqueues its event and never waits for a delivery.
type webhooks struct {
	cfg     WebhookConfig
	secrets []webhook.Secret
	client  *http.Client
	log     *slog.Logger
	// ctx ends every delivery at close.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan struct{}
	slots  chan struct{}

	mu         sync.Mutex
	chaos      WebhookChaos
	rng        *mrand.Rand
	queue      pendingQueue
	gone       map[string]bool
	deliveries []Delivery
}

// newWebhooks starts the delivery of cfg, which Validate has accepted.
func newWebhooks(cfg WebhookConfig, log *slog.Logger) *webhooks {
	cfg = cfg.withDefaults()
	secrets, _ := webhook.ParseSecrets(cfg.Secrets)
	ctx, cancel := context.WithCancel(context.Background())
	w := &webhooks{
		cfg:     cfg,
		secrets: secrets,
		// A transport of its own, so that close can drop its idle
		// connections and leave no goroutine behind.
		client: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		log:    log,
		ctx:    ctx,
		cancel: cancel,
		wake:   make(chan struct{}, 1),
		slots:  make(chan struct{}, maxConcurrentDeliveries),
		chaos:  cfg.Chaos,
		rng:    newRand(cfg.Chaos.Seed),
		gone:   map[string]bool{},
	}
	if len(cfg.URLs) > 0 {
		w.wg.Add(1)
		go w.run()
	}
	return w
}

// chargeEventType is the type of the event that a finished charge sends:
// charge.authorized for a hold.
func chargeEventType(c Charge) string {
	switch c.Status {
	case ChargeFailed:
		return webhook.EventChargeFailed
	case ChargeAuthorized:
		return webhook.EventChargeAuthorized
	}
	return webhook.EventChargeSucceeded
}

// enqueue queues an event of type typ about data, a Charge or a Refund,
// for every endpoint; chargeID and refundID name it in the deliveries.
func (w *webhooks) enqueue(typ string, data any, chargeID, refundID string) {
	if len(w.cfg.URLs) == 0 {
		return
	}
	body, _ := json.Marshal(event{Type: typ, Data: data})
	id := "msg_" + rand.Text()
	w.mu.Lock()
	now := time.Now()
	for _, endpoint := range w.cfg.URLs {
		if w.gone[endpoint] {
			continue
		}
		due := now.Add(w.chaos.Delay)
		if w.chaos.Reorder > 0 {
			due = due.Add(time.Duration(w.rng.Int64N(int64(w.chaos.Reorder))))
		}
		heap.Push(&w.queue, &pending{id: id, endpoint: endpoint, typ: typ, chargeID: chargeID, refundID: refundID, body: body, due: due})
	}
	w.mu.Unlock()
	w.notify()
}

func (w *webhooks) notify() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run starts each pending try when it is due, until close.
func (w *webhooks) run() {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		var timer *time.Timer
		var due <-chan time.Time
		if len(w.queue) > 0 {
			if wait := time.Until(w.queue[0].due); wait > 0 {
				timer = time.NewTimer(wait)
				due = timer.C
			} else {
				next := heap.Pop(&w.queue).(*pending)
				w.mu.Unlock()
				select {
				case w.slots <- struct{}{}:
				case <-w.ctx.Done():
					return
				}
				w.wg.Add(1)
				go w.try(next)
				continue
			}
		}
		w.mu.Unlock()
		select {
		case <-w.ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-w.wake:
		case <-due:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// try makes one try of p and queues the next one when p was not
// acknowledged.
func (w *webhooks) try(p *pending) {
	defer w.wg.Done()
	defer func() { <-w.slots }()
	w.mu.Lock()
	if w.gone[p.endpoint] {
		w.mu.Unlock()
		return
	}
	drop := w.rng.Float64() < w.chaos.DropRate
	duplicate := w.rng.Float64() < w.chaos.DuplicateRate
	w.mu.Unlock()

	p.tries++
	d := Delivery{ID: p.id, Endpoint: p.endpoint, Type: p.typ, ChargeID: p.chargeID, RefundID: p.refundID, Try: p.tries, Time: time.Now().UTC()}
	if !drop {
		d.Status = w.post(p)
	}
	switch {
	case !drop && d.Status >= 200 && d.Status < 300:
		d.Outcome = DeliveryDelivered
	case !drop && d.Status == http.StatusGone:
		d.Outcome = DeliveryGone
	case p.tries > len(w.cfg.Schedule):
		d.Outcome = DeliveryGaveUp
	case drop:
		d.Outcome = DeliveryDropped
	default:
		d.Outcome = DeliveryFailed
	}
	w.record(d)
	switch d.Outcome {
	case DeliveryDelivered:
		if duplicate {
			again := d
			again.Try, again.Time = p.tries+1, time.Now().UTC()
			again.Status = w.post(p)
			again.Outcome = DeliveryDuplicate
			w.record(again)
		}
	case DeliveryGone:
		w.stopEndpoint(p.endpoint)
	case DeliveryDropped, DeliveryFailed:
		p.due = time.Now().Add(w.cfg.Schedule[p.tries-1])
		w.mu.Lock()
		heap.Push(&w.queue, p)
		w.mu.Unlock()
		w.notify()
	}
}

// post sends p, signed now, and returns the status of the answer, 0 when
// none came in time.
func (w *webhooks) post(p *pending) int {
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(p.body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", contentTypeJSON)
	req.Header.Set("User-Agent", "chargeonce-fakeprovider")
	webhook.Sign(req.Header, p.id, time.Now(), p.body, w.secrets...)
	resp, err := w.client.Do(req)
	if err != nil {
		if !errors.Is(ctx.Err(), context.Canceled) {
			w.log.Warn("webhook try got no answer", "event", p.id, "endpoint", p.endpoint, "try", p.tries, "err", err)
		}
		return 0
	}
	// Read to the end, so that the connection is reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBodyBytes))
	_ = resp.Body.Close()
	return resp.StatusCode
}

func (w *webhooks) record(d Delivery) {
	level := slog.LevelInfo
	if d.Outcome != DeliveryDelivered && d.Outcome != DeliveryDuplicate {
		level = slog.LevelWarn
	}
	w.log.Log(context.Background(), level, "webhook "+d.Outcome, "event", d.ID, "type", d.Type, "charge", d.ChargeID, "refund", d.RefundID, "endpoint", d.Endpoint, "try", d.Try, "status", d.Status)
	w.mu.Lock()
	w.deliveries = append(w.deliveries, d)
	w.mu.Unlock()
}

// stopEndpoint stops every delivery to an endpoint that answered 410.
func (w *webhooks) stopEndpoint(endpoint string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gone[endpoint] = true
	kept := w.queue[:0]
	for _, p := range w.queue {
		if p.endpoint != endpoint {
			kept = append(kept, p)
		}
	}
	w.queue = kept
	heap.Init(&w.queue)
}

// close stops every delivery, those in flight too, and waits for them. The
// events still queued are dropped: receivers look charges up anyway.
func (w *webhooks) close() {
	w.cancel()
	w.wg.Wait()
	w.client.CloseIdleConnections()
}

// StopWebhooks stops every delivery of events, as Close does, while the
// provider goes on serving: a program that stops its receiver before the
// provider calls it first, so that no delivery fails against a receiver
// that is gone. Events still queued are dropped, as at Close.
func (p *Provider) StopWebhooks() { p.webhooks.close() }

// WebhookEndpoint is an endpoint the provider posts events to.
type WebhookEndpoint struct {
	URL string `json:"url"`
	// Gone is true once the endpoint answered 410: nothing more is sent.
	Gone bool `json:"gone"`
}

// WebhookState is what GET /_admin/webhooks shows.
type WebhookState struct {
	Endpoints []WebhookEndpoint `json:"endpoints"`
	Schedule  []string          `json:"schedule"`
	Chaos     WebhookChaos      `json:"chaos"`
	// Pending counts the tries waiting in the queue.
	Pending    int        `json:"pending"`
	Deliveries []Delivery `json:"deliveries"`
}

// Webhooks returns the endpoints, the schedule, the chaos and every try so
// far, oldest first.
func (p *Provider) Webhooks() WebhookState {
	w := p.webhooks
	w.mu.Lock()
	defer w.mu.Unlock()
	st := WebhookState{Chaos: w.chaos, Pending: len(w.queue), Deliveries: append([]Delivery{}, w.deliveries...), Schedule: []string{}, Endpoints: []WebhookEndpoint{}}
	for _, u := range w.cfg.URLs {
		st.Endpoints = append(st.Endpoints, WebhookEndpoint{URL: u, Gone: w.gone[u]})
	}
	for _, d := range w.cfg.Schedule {
		st.Schedule = append(st.Schedule, d.String())
	}
	return st
}

// SetWebhookChaos changes how delivery misbehaves from the next event or
// try on, and reseeds its random source with c.Seed. An invalid c is
// refused and nothing changes.
func (p *Provider) SetWebhookChaos(c WebhookChaos) error {
	if err := c.Validate(); err != nil {
		return err
	}
	w := p.webhooks
	w.mu.Lock()
	defer w.mu.Unlock()
	w.chaos = c
	w.rng = newRand(c.Seed)
	return nil
}

// forgetDeliveries clears the list of tries, as Reset forgets the charges.
func (w *webhooks) forgetDeliveries() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deliveries = nil
}

const (
	outcomeWebhooksRead    = "webhooks read"
	outcomeWebhooksChanged = "webhook chaos changed"
	outcomeWebhooksRefused = "refused invalid webhook chaos"
)

// getWebhooks serves GET /_admin/webhooks.
func (p *Provider) getWebhooks(w http.ResponseWriter, _ *http.Request, rec *RequestRecord) {
	rec.Outcome = outcomeWebhooksRead
	writeJSON(w, http.StatusOK, p.Webhooks())
}

// putWebhooks serves PUT /_admin/webhooks, which sets the chaos.
func (p *Provider) putWebhooks(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	var c WebhookChaos
	if prob := decodeJSON(w, r, &c); prob != nil {
		rec.fail(w, outcomeWebhooksRefused, prob)
		return
	}
	if err := p.SetWebhookChaos(c); err != nil {
		rec.fail(w, outcomeWebhooksRefused, newProblem(codeInvalidRequest, err.Error()))
		return
	}
	rec.Outcome = outcomeWebhooksChanged
	writeJSON(w, http.StatusOK, c)
}
