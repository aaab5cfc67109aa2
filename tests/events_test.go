package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"chargeonce/api/wire"
	"chargeonce/fakeprovider"
	"chargeonce/internal/syncbuf"
)

// eventsRetries is the dispatcher's retry schedule in these tests: short
// waits, and enough of them to outlast the receiver's outage.
var eventsRetries = []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 5 * time.Second,
	5 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second,
	5 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second,
	10 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second}

// latencyOrders is how many more orders are paid once every endpoint is
// up, so that the p99 of commit to delivery is not merely the maximum.
const latencyOrders = 100

// latencyCustomers pay those orders at once.
const latencyCustomers = 4

// receipt is one POST that a test receiver took.
type receipt struct {
	id     string
	event  wire.Event
	body   []byte
	status int
	at     time.Time
}

// merchantReceiver is a merchant's endpoint for the tests: it verifies
// every event with the reference Go library of Standard Webhooks, not with
// chargeonce's own package, and answers what answer() says.
type merchantReceiver struct {
	t        *testing.T
	verifier *standardwebhooks.Webhook
	answer   func() int
	mu       sync.Mutex
	received []receipt
	// refused counts the requests that failed verification; none may.
	refused []string
}

func newMerchantReceiver(t *testing.T, secret string, answer func() int) *merchantReceiver {
	t.Helper()
	v, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	return &merchantReceiver{t: t, verifier: v, answer: answer}
}

func (m *merchantReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = m.verifier.Verify(body, r.Header)
	}
	var e wire.Event
	if err == nil {
		err = json.Unmarshal(body, &e)
	}
	if err == nil && r.Header.Get("webhook-id") != e.ID {
		err = errors.New("the webhook-id is not the event's id")
	}
	if err == nil && r.Header.Get("Content-Type") != "application/json" {
		err = errors.New("the Content-Type is " + r.Header.Get("Content-Type"))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.refused = append(m.refused, err.Error())
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	status := m.answer()
	m.received = append(m.received, receipt{id: e.ID, event: e, body: body, status: status, at: at})
	w.WriteHeader(status)
}

// delivered returns the events answered 2xx, by id.
func (m *merchantReceiver) delivered() map[string]receipt {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]receipt{}
	for _, r := range m.received {
		if r.status/100 == 2 {
			out[r.id] = r
		}
	}
	return out
}

// receipts returns a copy of every verified request, in arrival order.
func (m *merchantReceiver) receipts() ([]receipt, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.received), slices.Clone(m.refused)
}

// serveOn serves h on addr until the test ends.
func serveOn(t *testing.T, addr string, h http.Handler) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// registerEndpoint creates an endpoint through the API.
func (s *checkoutStack) registerEndpoint(t *testing.T, url string, types ...string) wire.Endpoint {
	t.Helper()
	if types == nil {
		types = []string{}
	}
	body, err := json.Marshal(wire.CreateEndpointRequest{URL: url, EventTypes: types, Description: "test receiver"})
	require.NoError(t, err)
	res, err := s.send(http.MethodPost, "/api/webhook-endpoints", string(body))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.status, "body: %s", res.body)
	var e wire.Endpoint
	require.NoError(t, json.Unmarshal(res.body, &e))
	return e
}

// getJSON GETs path from the API, expects 200 and decodes into v.
func (s *checkoutStack) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	res, err := s.send(http.MethodGet, path, "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	require.NoError(t, json.Unmarshal(res.body, v))
}

// orderEvents is GET /api/orders/{id}/events.
func (s *checkoutStack) orderEvents(t *testing.T, id int64) []wire.Event {
	t.Helper()
	var list wire.EventList
	s.getJSON(t, fmt.Sprintf("/api/orders/%d/events", id), &list)
	return list.Events
}

// eventOrders makes orders whose payments and refunds reach every outcome
// the stack can make on demand, and returns their ids.
func (s *checkoutStack) eventOrders(t *testing.T) []int64 {
	t.Helper()
	paid := s.paidOrder(t, "548.90")
	declined := s.createOrder(t, "12.00", "TRY")
	res := s.checkout(t, declined, "tok_chargeDeclined")
	require.Equal(t, http.StatusPaymentRequired, res.status, "body: %s", res.body)

	// The provider down: nothing processed; then back, and the order paid.
	notProcessed := s.createOrder(t, "30.00", "TRY")
	require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}))
	res = s.checkout(t, notProcessed, "tok_visa")
	require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
	require.Equal(t, http.StatusServiceUnavailable, res.status, "body: %s", res.body)
	res = s.checkout(t, notProcessed, "tok_visa")
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)

	refunded := s.paidOrder(t, "100.00")
	for _, amount := range []string{`"amount": "40.00", `, ``} {
		res = s.refund(t, refunded, uuid.NewString(), `{`+amount+`"reason": "returned"}`)
		require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	}
	return []int64{paid, declined, notProcessed, refunded}
}

// TestEvents_AReceiverDownThenFailingThenBackGetsEveryEvent: a merchant's
// receiver refuses connections for a minute, then answers 500, then 204.
// It gets every event of every order, each signed (as an independent
// Standard Webhooks implementation checks), each order's sequence without
// gaps, and a second copy of an event only after its earlier tries failed.
// Beside it, an endpoint that answers 410 is disabled and sent nothing more
// until a replay, and one that is always up gives the figure of the time
// from a change's commit to its delivery.
func TestEvents_AReceiverDownThenFailingThenBackGetsEveryEvent(t *testing.T) {
	t.Parallel()
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget, EventRetries: eventsRetries})

	// The outage: nothing listens at the endpoint's address yet.
	addr := unusedAddress(t)
	flaky := s.registerEndpoint(t, "http://"+addr+"/events")
	var phase struct {
		sync.Mutex
		status int
	}
	phase.status = http.StatusInternalServerError
	flakyReceiver := newMerchantReceiver(t, flaky.Secret, func() int { phase.Lock(); defer phase.Unlock(); return phase.status })

	upAddr := unusedAddress(t)
	up := s.registerEndpoint(t, "http://"+upAddr+"/events")
	upReceiver := newMerchantReceiver(t, up.Secret, func() int { return http.StatusNoContent })
	serveOn(t, upAddr, upReceiver)

	goneAddr := unusedAddress(t)
	gone := s.registerEndpoint(t, "http://"+goneAddr+"/events", "payment.succeeded")
	var goneStatus atomic.Int32
	goneStatus.Store(http.StatusGone)
	goneReceiver := newMerchantReceiver(t, gone.Secret, func() int { return int(goneStatus.Load()) })
	serveOn(t, goneAddr, goneReceiver)

	downSince := time.Now()
	orders := s.eventOrders(t)
	// The outage itself is the scenario: the receiver stays down a full
	// minute of wall time, whatever the dispatcher tried meanwhile.
	time.Sleep(time.Until(downSince.Add(time.Minute)))

	// Back, but failing: a few tries are answered 500.
	serveOn(t, addr, flakyReceiver)
	require.Eventually(t, func() bool { r, _ := flakyReceiver.receipts(); return len(r) >= 3 }, time.Minute, 100*time.Millisecond)
	orders = append(orders, s.eventOrders(t)...)
	phase.Lock()
	phase.status = http.StatusNoContent
	phase.Unlock()
	orders = append(orders, s.eventOrders(t)...)
	// More payments, for the figure of commit to delivery, by a few
	// customers at once.
	extra := make([]int64, latencyOrders)
	for i := range extra {
		extra[i] = s.createOrder(t, "10.00", "TRY")
	}
	statuses := make([]int, len(extra))
	var customers sync.WaitGroup
	for c := range latencyCustomers {
		customers.Go(func() {
			for i := c; i < len(extra); i += latencyCustomers {
				statuses[i] = s.checkoutNoFatal(extra[i], "tok_visa").status
			}
		})
	}
	customers.Wait()
	for i, status := range statuses {
		require.Equal(t, http.StatusOK, status, "order %d", extra[i])
	}
	orders = append(orders, extra...)

	// Every order's events, as the API lists them, reach both endpoints.
	want := map[string]wire.Event{}
	for _, id := range orders {
		events := s.orderEvents(t, id)
		for i, e := range events {
			require.Equal(t, int64(i+1), e.Data.Sequence, "order %d: sequences from 1 without gaps", id)
			want[e.ID] = e
		}
	}
	require.Len(t, want, 3*(1+1+2+3)+latencyOrders, "per round: paid; declined; not processed and paid; paid and two refunds")
	for _, m := range []*merchantReceiver{flakyReceiver, upReceiver} {
		require.Eventually(t, func() bool { return len(m.delivered()) == len(want) }, 2*time.Minute, 100*time.Millisecond)
	}
	for name, m := range map[string]*merchantReceiver{"flaky": flakyReceiver, "up": upReceiver} {
		received, refused := m.receipts()
		require.Empty(t, refused, "%s: every request verifies", name)
		acked := map[string]bool{}
		for _, r := range received {
			e, ok := want[r.id]
			require.True(t, ok, "%s: %s is an event of the orders", name, r.id)
			require.Equal(t, e, r.event, "%s: the event is sent as the API lists it", name)
			require.False(t, acked[r.id], "%s: %s came again after it was delivered", name, r.id)
			acked[r.id] = r.status/100 == 2
		}
		require.Len(t, acked, len(want))
	}
	received, _ := flakyReceiver.receipts()
	retried := 0
	for _, r := range received {
		if r.status == http.StatusInternalServerError {
			retried++
		}
	}
	require.NotZero(t, retried)

	// The flaky endpoint's log shows the outage, the 500s and the end, once
	// the dispatcher has recorded the last answers.
	results := map[string]int{}
	require.Eventually(t, func() bool {
		var log wire.DeliveryList
		s.getJSON(t, "/api/webhook-endpoints/"+flaky.ID+"/deliveries?limit=1000", &log)
		require.Less(t, len(log.Deliveries), 1000, "the whole log is read")
		clear(results)
		for _, d := range log.Deliveries {
			switch {
			case d.Result == "failed" && d.HTTPStatus == nil:
				require.Equal(t, "connection_refused", *d.Failure)
				results["refused"]++
			case d.Result == "failed":
				require.Equal(t, http.StatusInternalServerError, *d.HTTPStatus)
				results["500"]++
			default:
				require.Equal(t, "delivered", d.Result)
				results["delivered"]++
			}
		}
		return results["delivered"] == len(want)
	}, 30*time.Second, 100*time.Millisecond)
	require.NotZero(t, results["refused"])
	require.Equal(t, retried, results["500"])
	var shown wire.Endpoint
	s.getJSON(t, "/api/webhook-endpoints/"+flaky.ID, &shown)
	require.Nil(t, shown.FailingSince, "nothing is undelivered")

	// The 410 endpoint got one event, and was disabled by it.
	goneReceived, _ := goneReceiver.receipts()
	require.Len(t, goneReceived, 1)
	require.Eventually(t, func() bool {
		s.getJSON(t, "/api/webhook-endpoints/"+gone.ID, &shown)
		return shown.Status == "disabled"
	}, 30*time.Second, 100*time.Millisecond)
	require.Equal(t, "the endpoint answered 410 Gone", *shown.DisabledReason)
	// Enabled again and replayed, the event arrives with its own id.
	goneStatus.Store(http.StatusOK)
	res, err := s.send(http.MethodPost, "/api/webhook-endpoints/"+gone.ID+"/enable", "{}")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	res, err = s.send(http.MethodPost, "/api/events/"+goneReceived[0].id+"/replay", fmt.Sprintf(`{"endpointId": %q}`, gone.ID))
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, res.status, "body: %s", res.body)
	replayed := goneReceived[0]
	require.Eventually(t, func() bool { _, ok := goneReceiver.delivered()[replayed.id]; return ok }, time.Minute, 100*time.Millisecond)
	require.Equal(t, replayed.event, goneReceiver.delivered()[replayed.id].event)

	// From commit to delivery, at the endpoint that was always up.
	upReceived, _ := upReceiver.receipts()
	latencies := make([]time.Duration, 0, len(upReceived))
	for _, r := range upReceived {
		latencies = append(latencies, r.at.Sub(r.event.Timestamp))
	}
	slices.Sort(latencies)
	t.Logf("commit to delivery, %d events at an endpoint that is up: p50 %v, p99 %v, max %v",
		len(latencies), latencies[len(latencies)/2], latencies[(len(latencies)*99+99)/100-1], latencies[len(latencies)-1])
}

// TestEvents_TheDevReceiverPrintsEachVerifiedEventAndIsRegisteredOnce: the
// dev stack registers its receiver as an endpoint on first start, reuses
// it when restarted on the same data directory, and the receiver prints a
// line per event it verified.
func TestEvents_TheDevReceiverPrintsEachVerifiedEventAndIsRegisteredOnce(t *testing.T) {
	t.Parallel()
	dataDir, addr := t.TempDir(), unusedAddress(t)
	var endpoint string
	for start := range 2 {
		out := &syncbuf.Buffer{}
		s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget, DataDir: dataDir, Receiver: addr, ReceiverOut: out})
		require.Equal(t, "http://"+addr+"/events", s.stack.ReceiverURL())
		var list wire.EndpointList
		s.getJSON(t, "/api/webhook-endpoints", &list)
		require.Len(t, list.Endpoints, 1, "start %d: one endpoint, however often the stack starts", start+1)
		require.Equal(t, s.stack.ReceiverURL(), list.Endpoints[0].URL)
		if endpoint == "" {
			endpoint = list.Endpoints[0].ID
		}
		require.Equal(t, endpoint, s.stack.ReceiverEndpoint())

		id := s.paidOrder(t, "548.90")
		events := s.orderEvents(t, id)
		require.Len(t, events, 1)
		want := fmt.Sprintf("event payment.succeeded order=%d seq=1 status=paid %s\n", id, events[0].ID)
		require.Eventually(t, func() bool { return strings.Contains(out.String(), want) }, 30*time.Second, 50*time.Millisecond)
		require.NotContains(t, out.String(), "refused")
		require.NoError(t, s.stack.Close(t.Context()))
	}
}
