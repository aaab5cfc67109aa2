package fakeprovider

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/webhook"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// received is one event that reached a receiver.
type received struct {
	id    string
	event receivedEvent
}

// receivedEvent is an event's body with its data kept raw, since it is a
// charge or a refund by its type.
type receivedEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// charge reads the data of a charge event.
func (e receivedEvent) charge(t *testing.T) Charge {
	t.Helper()
	var c Charge
	require.NoError(t, json.Unmarshal(e.Data, &c))
	return c
}

// refund reads the data of a refund event.
func (e receivedEvent) refund(t *testing.T) Refund {
	t.Helper()
	var r Refund
	require.NoError(t, json.Unmarshal(e.Data, &r))
	return r
}

// receiver is a webhook endpoint that verifies every event, records it and
// answers with the status answer returns for the n-th request (from 1).
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	answer func(n int) int
	mu     sync.Mutex
	events []received
	calls  int
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	t.Helper()
	secret, err := webhook.ParseSecret(testSecret)
	require.NoError(t, err)
	v := webhook.NewVerifier([]webhook.Secret{secret}, nil)
	r := &receiver{t: t, answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		id, err := v.Verify(req.Header, body)
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev receivedEvent
		if err := json.Unmarshal(body, &ev); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.calls++
		n := r.calls
		r.events = append(r.events, received{id: id, event: ev})
		r.mu.Unlock()
		w.WriteHeader(r.answer(n))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func always(status int) func(int) int { return func(int) int { return status } }

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.events...)
}

// awaitDeliveries waits until the provider has recorded n tries.
func awaitDeliveries(t *testing.T, p *Provider, n int) []Delivery {
	t.Helper()
	require.Eventually(t, func() bool { return len(p.Webhooks().Deliveries) >= n }, 5*time.Second, 5*time.Millisecond)
	return p.Webhooks().Deliveries
}

func webhookConfig(urls ...string) WebhookConfig {
	return WebhookConfig{URLs: urls, Secrets: []string{testSecret}, Schedule: Schedule{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}}
}

func TestWebhooks_AFinishedChargeIsPostedSignedToEveryEndpoint(t *testing.T) {
	a, b := newReceiver(t, always(http.StatusOK)), newReceiver(t, always(http.StatusNoContent))
	f := newFixture(t, Config{Webhooks: webhookConfig(a.srv.URL, b.srv.URL)})

	approved := decode[Charge](t, f.do(t, post("key-1", chargeBody(54890, "tok_visa", "ref-1"))))
	f.do(t, post("key-2", chargeBody(54890, "tok_chargeDeclined", "ref-2")))

	deliveries := awaitDeliveries(t, f.p, 4)
	for _, r := range []*receiver{a, b} {
		got := r.received()
		require.Len(t, got, 2)
		byType := map[string]Charge{}
		for _, ev := range got {
			byType[ev.event.Type] = ev.event.charge(t)
		}
		require.Equal(t, approved, byType[webhook.EventChargeSucceeded])
		require.Equal(t, ChargeFailed, byType[webhook.EventChargeFailed].Status)
		require.Equal(t, "do_not_honor", byType[webhook.EventChargeFailed].DeclineCode)
		require.NotEqual(t, got[0].id, got[1].id, "every event has an id of its own")
	}
	for _, d := range deliveries {
		require.Equal(t, 1, d.Try)
		require.Equal(t, DeliveryDelivered, d.Outcome)
		require.NotZero(t, d.Status)
	}
}

func TestWebhooks_AChargeNeverWaitsForDelivery(t *testing.T) {
	release := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(stuck.Close)
	t.Cleanup(func() { close(release) })
	f := newFixture(t, Config{Webhooks: webhookConfig(stuck.URL)})

	for i, key := range []string{"key-1", "key-2", "key-3"} {
		r := f.do(t, post(key, chargeBody(54890, "tok_visa", "ref-"+key)))
		require.Equal(t, http.StatusCreated, r.status, "charge %d answered while the endpoint hangs", i+1)
	}
	require.Empty(t, f.p.Webhooks().Deliveries)
}

func TestWebhooks_UnacknowledgedEventsAreRetriedOnTheScheduleThenGivenUp(t *testing.T) {
	// Two failures, then an acknowledgment.
	flaky := newReceiver(t, func(n int) int {
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	down := newReceiver(t, always(http.StatusServiceUnavailable))
	f := newFixture(t, Config{Webhooks: webhookConfig(flaky.srv.URL)})
	f.do(t, post("key-1", validBody))
	deliveries := awaitDeliveries(t, f.p, 3)
	require.Equal(t, []int{1, 2, 3}, tries(deliveries))
	require.Equal(t, []int{500, 500, 200}, statuses(deliveries))
	require.Equal(t, DeliveryDelivered, deliveries[2].Outcome)
	got := flaky.received()
	require.Equal(t, got[0].id, got[2].id, "a retry carries the same id")

	g := newFixture(t, Config{Webhooks: webhookConfig(down.srv.URL)})
	g.do(t, post("key-1", validBody))
	deliveries = awaitDeliveries(t, g.p, 4)
	require.Equal(t, []int{1, 2, 3, 4}, tries(deliveries), "the first try and one per wait of the schedule")
	require.Equal(t, DeliveryGaveUp, deliveries[3].Outcome)
	require.Zero(t, g.p.Webhooks().Pending)
}

func TestWebhooks_410StopsDeliveryToThatEndpoint(t *testing.T) {
	gone, ok := newReceiver(t, always(http.StatusGone)), newReceiver(t, always(http.StatusOK))
	f := newFixture(t, Config{Webhooks: webhookConfig(gone.srv.URL, ok.srv.URL)})
	f.do(t, post("key-1", chargeBody(54890, "tok_visa", "ref-1")))
	awaitDeliveries(t, f.p, 2)
	f.do(t, post("key-2", chargeBody(54890, "tok_visa", "ref-2")))
	awaitDeliveries(t, f.p, 3)

	require.Len(t, gone.received(), 1, "one try, then nothing more")
	require.Len(t, ok.received(), 2)
	st := f.p.Webhooks()
	require.Equal(t, []WebhookEndpoint{{URL: gone.srv.URL, Gone: true}, {URL: ok.srv.URL}}, st.Endpoints)
}

func TestWebhooks_ChaosDropsDuplicatesAndDelays(t *testing.T) {
	t.Run("drop", func(t *testing.T) {
		r := newReceiver(t, always(http.StatusOK))
		cfg := webhookConfig(r.srv.URL)
		cfg.Chaos = WebhookChaos{DropRate: 1}
		f := newFixture(t, Config{Webhooks: cfg})
		f.do(t, post("key-1", validBody))
		deliveries := awaitDeliveries(t, f.p, 4)
		require.Equal(t, []string{DeliveryDropped, DeliveryDropped, DeliveryDropped, DeliveryGaveUp}, outcomes(deliveries))
		require.Empty(t, r.received())
	})
	t.Run("duplicate", func(t *testing.T) {
		r := newReceiver(t, always(http.StatusOK))
		cfg := webhookConfig(r.srv.URL)
		cfg.Chaos = WebhookChaos{DuplicateRate: 1}
		f := newFixture(t, Config{Webhooks: cfg})
		f.do(t, post("key-1", validBody))
		deliveries := awaitDeliveries(t, f.p, 2)
		require.Equal(t, []string{DeliveryDelivered, DeliveryDuplicate}, outcomes(deliveries))
		got := r.received()
		require.Len(t, got, 2)
		require.Equal(t, got[0], got[1])
	})
	t.Run("delay", func(t *testing.T) {
		r := newReceiver(t, always(http.StatusOK))
		cfg := webhookConfig(r.srv.URL)
		cfg.Chaos = WebhookChaos{Delay: 200 * time.Millisecond}
		f := newFixture(t, Config{Webhooks: cfg})
		before := time.Now()
		f.do(t, post("key-1", validBody))
		deliveries := awaitDeliveries(t, f.p, 1)
		require.GreaterOrEqual(t, deliveries[0].Time.Sub(before), 200*time.Millisecond)
	})
}

func TestWebhooks_AdminShowsDeliveriesAndSetsTheChaos(t *testing.T) {
	r := newReceiver(t, always(http.StatusOK))
	f := newFixture(t, Config{Webhooks: webhookConfig(r.srv.URL)})
	f.do(t, post("key-1", validBody))
	awaitDeliveries(t, f.p, 1)

	st := decode[WebhookState](t, f.do(t, get("/_admin/webhooks")))
	require.Len(t, st.Deliveries, 1)
	d := st.Deliveries[0]
	require.NotEmpty(t, d.ID)
	require.Equal(t, 1, d.Try)
	require.Equal(t, http.StatusOK, d.Status)
	require.False(t, d.Time.IsZero())
	require.Equal(t, []string{"1ms", "2ms", "4ms"}, st.Schedule)

	chaos := `{"delay":"2s","drop_rate":0.25,"duplicate_rate":0.5,"reorder":"1s","seed":7}`
	resp := f.do(t, call{method: http.MethodPut, path: "/_admin/webhooks", body: chaos})
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.JSONEq(t, chaos, string(resp.body))
	require.Equal(t, WebhookChaos{Delay: 2 * time.Second, DropRate: 0.25, DuplicateRate: 0.5, Reorder: time.Second, Seed: 7}, f.p.Webhooks().Chaos)

	for _, bad := range []string{`{"drop_rate":2}`, `{"delay":"-1s"}`, `{"delay":"soon"}`, `{"rate":1}`} {
		resp := f.do(t, call{method: http.MethodPut, path: "/_admin/webhooks", body: bad})
		require.Equal(t, http.StatusBadRequest, resp.status, bad)
	}
	require.Equal(t, 7, int(f.p.Webhooks().Chaos.Seed), "a refused chaos changes nothing")
}

func TestWebhooks_BadConfigIsRefused(t *testing.T) {
	for name, cfg := range map[string]WebhookConfig{
		"relative URL":  {URLs: []string{"/webhooks"}, Secrets: []string{testSecret}},
		"no secret":     {URLs: []string{"http://127.0.0.1:8080/webhooks/provider"}},
		"bad secret":    {URLs: []string{"http://127.0.0.1:8080/webhooks/provider"}, Secrets: []string{"secret"}},
		"zero wait":     {Schedule: Schedule{0}},
		"negative rate": {Chaos: WebhookChaos{DuplicateRate: -0.1}},
	} {
		_, err := New(Config{Webhooks: cfg})
		require.Error(t, err, name)
	}
}

func TestWebhooks_CloseEndsDeliveriesInFlightAndLeavesNoGoroutine(t *testing.T) {
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices the client going away only once the body is
		// read.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(stuck.Close)
	before := runtime.NumGoroutine()
	cfg := webhookConfig(stuck.URL)
	cfg.Timeout = time.Hour
	p, err := New(Config{Webhooks: cfg})
	require.NoError(t, err)
	c := Charge{ID: "ch_000001", Status: ChargeSucceeded, MerchantReference: "ref-1"}
	p.webhooks.enqueue(chargeEventType(c), c, c.ID, "")
	require.Eventually(t, func() bool { return len(p.webhooks.slots) == 1 }, 5*time.Second, time.Millisecond, "the try is in flight")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, p.Close(ctx))
	// Polled here rather than with require.Eventually, whose own
	// goroutines would be counted.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; time.Sleep(time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "goroutines left behind: %d, were %d", runtime.NumGoroutine(), before)
	}
}

func tries(ds []Delivery) []int {
	out := make([]int, len(ds))
	for i, d := range ds {
		out[i] = d.Try
	}
	return out
}

func statuses(ds []Delivery) []int {
	out := make([]int, len(ds))
	for i, d := range ds {
		out[i] = d.Status
	}
	return out
}

func outcomes(ds []Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Outcome
	}
	return out
}
