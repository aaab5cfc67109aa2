package notify_test

import (
	"context"
	"encoding/json"
	"io"
	stdlog "log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/internal/webhook"
	"chargeonce/notify"
	"chargeonce/store"
)

// received is one request that the receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a merchant's endpoint: it answers each request with what
// answer returns for the request's number, from 1, and keeps every
// request.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, w http.ResponseWriter)
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter)) *receiver {
	r := &receiver{answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		require.NoError(t, err)
		r.mu.Lock()
		r.got = append(r.got, received{header: req.Header.Clone(), body: body})
		n := len(r.got)
		r.mu.Unlock()
		r.answer(n, w)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func answerWith(status int) func(int, http.ResponseWriter) {
	return func(_ int, w http.ResponseWriter) { w.WriteHeader(status) }
}

// dropConnection closes the connection without an answer.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

type fixture struct {
	s        store.Store
	registry *prometheus.Registry
	// allows is the dispatcher's allowed networks: loopback, where the
	// test's receivers listen, unless a test says otherwise.
	allows notify.AllowedNetworks
}

func newFixture(t *testing.T) *fixture {
	s, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return &fixture{s: s, registry: prometheus.NewRegistry(), allows: notify.LoopbackNetworks}
}

// schedule is short, so that retries come at once.
var schedule = []time.Duration{time.Millisecond, 2 * time.Millisecond}

// run starts a dispatcher on schedule until the test ends.
func (f *fixture) run(t *testing.T, reg prometheus.Registerer) {
	f.runWith(t, reg, schedule)
}

func (f *fixture) runWith(t *testing.T, reg prometheus.Registerer, schedule []time.Duration) {
	d, err := notify.New(notify.Config{Store: f.s, Logger: slog.New(slog.DiscardHandler), Registerer: reg,
		Schedule: schedule, Poll: 5 * time.Millisecond, AllowedNetworks: f.allows})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		d.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func (f *fixture) endpoint(t *testing.T, url string) (store.Endpoint, webhook.Secret) {
	secret := webhook.NewSecret()
	e, err := f.s.CreateEndpoint(context.Background(), store.NewEndpoint{ID: chargeonce.NewEndpointID(), URL: url, Secret: secret, Now: time.Now()})
	require.NoError(t, err)
	parsed, err := webhook.ParseSecret(secret)
	require.NoError(t, err)
	return e, parsed
}

// declined settles a new order's attempt as declined, which writes a
// payment.declined event, and returns the order.
func (f *fixture) declined(t *testing.T) int64 {
	ctx := context.Background()
	o, err := f.s.CreateOrder(ctx, chargeonce.Money{Minor: 1250, Currency: "EUR"}, "A book")
	require.NoError(t, err)
	key, err := uuid.NewV7()
	require.NoError(t, err)
	_, a, _, err := f.s.GetOrStartAttempt(ctx, store.NewAttempt{OrderID: o.ID, CardHash: chargeonce.LegacyCardHash("tok_visa"),
		Key: key.String(), ReferencePrefix: "shop", Now: time.Now(), AbandonAfter: time.Hour, Provider: chargeonce.DefaultProvider})
	require.NoError(t, err)
	settled, err := f.s.SettleAttempt(ctx, a.Key, chargeonce.AttemptDeclined, "", time.Now())
	require.NoError(t, err)
	require.True(t, settled.Changed)
	return o.ID
}

// waitForLog waits until the endpoint's delivery log holds n tries, and
// returns their results, oldest first.
func (f *fixture) waitForLog(t *testing.T, endpointID string, n int) []store.DeliveryAttempt {
	var log []store.DeliveryAttempt
	require.Eventually(t, func() bool {
		var err error
		log, err = f.s.Deliveries(context.Background(), endpointID, store.MaxDeliveriesLimit)
		require.NoError(t, err)
		return len(log) >= n
	}, time.Minute, 5*time.Millisecond)
	require.Len(t, log, n)
	for i, j := 0, len(log)-1; i < j; i, j = i+1, j-1 {
		log[i], log[j] = log[j], log[i]
	}
	return log
}

func results(log []store.DeliveryAttempt) []string {
	out := make([]string, len(log))
	for i, a := range log {
		out[i] = string(a.Result)
	}
	return out
}

// TestDispatcher_DeliversTheSignedEvent: the receiver gets the event as
// Render shows it, as JSON, signed with the endpoint's secret, under the
// event's id.
func TestDispatcher_DeliversTheSignedEvent(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, answerWith(http.StatusNoContent))
	e, secret := f.endpoint(t, r.URL)
	orderID := f.declined(t)
	f.run(t, f.registry)

	log := f.waitForLog(t, e.ID, 1)
	require.Equal(t, []string{"delivered"}, results(log))
	require.Equal(t, 204, log[0].HTTPStatus)
	events, err := f.s.OrderEvents(context.Background(), orderID)
	require.NoError(t, err)
	require.Len(t, events, 1)

	got := r.requests()
	require.Len(t, got, 1)
	require.Equal(t, "application/json", got[0].header.Get("Content-Type"))
	id, err := webhook.NewVerifier([]webhook.Secret{secret}, nil).Verify(got[0].header, got[0].body)
	require.NoError(t, err)
	require.Equal(t, events[0].ID, id)
	var body wire.Event
	require.NoError(t, json.Unmarshal(got[0].body, &body))
	require.Equal(t, notify.Render(events[0]), body)
	require.Equal(t, wire.EventData{OrderID: orderID, Sequence: 1, OrderStatus: "placed", Payment: &wire.EventPayment{
		IdempotencyKey: events[0].AttemptKey, Status: "declined", Amount: "12.50", Currency: "EUR", Provider: chargeonce.DefaultProvider,
	}}, body.Data)
	require.NoError(t, testutil.GatherAndCompare(f.registry, strings.NewReader(`
# HELP chargeonce_event_deliveries_total Tries to deliver an event to a merchant's endpoint, by result: delivered, failed (tried again), gone (a 410 disabled the endpoint) or given_up (the retry schedule ran out).
# TYPE chargeonce_event_deliveries_total counter
chargeonce_event_deliveries_total{result="delivered"} 1
chargeonce_event_deliveries_total{result="failed"} 0
chargeonce_event_deliveries_total{result="given_up"} 0
chargeonce_event_deliveries_total{result="gone"} 0
# HELP chargeonce_event_deliveries_pending Deliveries of events to enabled endpoints that wait to be delivered.
# TYPE chargeonce_event_deliveries_pending gauge
chargeonce_event_deliveries_pending 0
# HELP chargeonce_event_endpoint_failing_seconds Per enabled endpoint, how long ago the oldest of its deliveries still pending first failed; 0 when none is failing.
# TYPE chargeonce_event_endpoint_failing_seconds gauge
chargeonce_event_endpoint_failing_seconds{endpoint="`+e.ID+`"} 0
`)))
}

// TestDispatcher_RetriesAfterA500AndADroppedConnection: each failure is
// tried again on the schedule, under the same webhook-id, until a 2xx.
func TestDispatcher_RetriesAfterA500AndADroppedConnection(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, func(n int, w http.ResponseWriter) {
		switch n {
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
		case 2:
			dropConnection(w)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	e, secret := f.endpoint(t, r.URL)
	f.declined(t)
	f.run(t, nil)

	log := f.waitForLog(t, e.ID, 3)
	require.Equal(t, []string{"failed", "failed", "delivered"}, results(log))
	require.Equal(t, []int{500, 0, 200}, []int{log[0].HTTPStatus, log[1].HTTPStatus, log[2].HTTPStatus})
	require.Equal(t, []store.DeliveryFailure{store.FailureHTTPStatus, store.FailureConnection, ""},
		[]store.DeliveryFailure{log[0].Failure, log[1].Failure, log[2].Failure}, "the log keeps the class of each failure")
	require.Equal(t, []int{1, 2, 3}, []int{log[0].Attempt, log[1].Attempt, log[2].Attempt})
	verifier := webhook.NewVerifier([]webhook.Secret{secret}, nil)
	for _, got := range r.requests() {
		id, err := verifier.Verify(got.header, got.body)
		require.NoError(t, err)
		require.Equal(t, log[0].EventID, id, "every try under the event's id")
	}
}

// TestDispatcher_GivesUpWhenTheScheduleRunsOut: a try per step of the
// schedule after the first, then none.
func TestDispatcher_GivesUpWhenTheScheduleRunsOut(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, answerWith(http.StatusServiceUnavailable))
	e, _ := f.endpoint(t, r.URL)
	f.declined(t)
	f.run(t, f.registry)

	log := f.waitForLog(t, e.ID, len(schedule)+1)
	require.Equal(t, []string{"failed", "failed", "given_up"}, results(log))
	require.Equal(t, 2.0, deliveries(t, f.registry, "failed"))
	require.Equal(t, 1.0, deliveries(t, f.registry, "given_up"))
}

// deliveries reads the deliveries counter of one result from reg.
func deliveries(t *testing.T, reg *prometheus.Registry, result string) float64 {
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() != "chargeonce_event_deliveries_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no deliveries counter of %s", result)
	return 0
}

// TestDispatcher_FailingEndpointShowsInTheGauge: an endpoint whose
// delivery failed and waits for its retry is failing since that try.
func TestDispatcher_FailingEndpointShowsInTheGauge(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, answerWith(http.StatusBadGateway))
	e, _ := f.endpoint(t, r.URL)
	f.declined(t)
	f.runWith(t, f.registry, []time.Duration{time.Hour})

	f.waitForLog(t, e.ID, 1)
	families, err := f.registry.Gather()
	require.NoError(t, err)
	var failing, pending float64
	for _, mf := range families {
		switch mf.GetName() {
		case "chargeonce_event_endpoint_failing_seconds":
			require.Len(t, mf.GetMetric(), 1)
			require.Equal(t, e.ID, mf.GetMetric()[0].GetLabel()[0].GetValue())
			failing = mf.GetMetric()[0].GetGauge().GetValue()
		case "chargeonce_event_deliveries_pending":
			pending = mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	require.Positive(t, failing)
	require.Equal(t, 1.0, pending)
}

// TestDispatcher_GoneDisablesTheEndpoint: a 410 disables the endpoint and
// is not tried again; once enabled, the endpoint gets new events.
func TestDispatcher_GoneDisablesTheEndpoint(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	e, _ := f.endpoint(t, r.URL)
	f.declined(t)
	f.run(t, nil)

	log := f.waitForLog(t, e.ID, 1)
	require.Equal(t, []string{"gone"}, results(log))
	got, err := f.s.GetEndpoint(ctx, e.ID)
	require.NoError(t, err)
	require.NotNil(t, got.DisabledAt)
	require.Equal(t, store.EndpointGoneReason, got.DisabledReason)

	_, err = f.s.SetEndpointDisabled(ctx, e.ID, false, "", time.Now())
	require.NoError(t, err)
	f.declined(t)
	log = f.waitForLog(t, e.ID, 2)
	require.Equal(t, []string{"gone", "delivered"}, results(log))
	require.NotEqual(t, log[0].EventID, log[1].EventID, "the gone event was not tried again")
	require.Len(t, r.requests(), 2)
}

// TestDispatcher_DoesNotFollowARedirect: a 3xx is a failed try, of class
// http_status, and its Location is never fetched, since it could point
// anywhere the endpoint's URL could not.
func TestDispatcher_DoesNotFollowARedirect(t *testing.T) {
	f := newFixture(t)
	elsewhere := newReceiver(t, answerWith(http.StatusOK))
	r := newReceiver(t, func(_ int, w http.ResponseWriter) {
		w.Header().Set("Location", elsewhere.URL+"/moved")
		w.WriteHeader(http.StatusFound)
	})
	e, _ := f.endpoint(t, r.URL)
	f.declined(t)
	f.runWith(t, nil, []time.Duration{time.Hour})

	log := f.waitForLog(t, e.ID, 1)
	require.Equal(t, []string{"failed"}, results(log))
	require.Equal(t, http.StatusFound, log[0].HTTPStatus)
	require.Equal(t, store.FailureHTTPStatus, log[0].Failure)
	require.Len(t, r.requests(), 1)
	require.Empty(t, elsewhere.requests(), "the Location was not fetched")
}

// TestDispatcher_RefusesAnInternalAddressUnlessItsNetworkIsAllowed: an
// endpoint on loopback, stored before the rule or while loopback was
// allowed, gets nothing once it is not, and its log says refused_address
// only, never the address.
func TestDispatcher_RefusesAnInternalAddressUnlessItsNetworkIsAllowed(t *testing.T) {
	f := newFixture(t)
	f.allows = nil
	r := newReceiver(t, answerWith(http.StatusOK))
	e, _ := f.endpoint(t, r.URL)
	f.declined(t)
	f.runWith(t, nil, []time.Duration{time.Hour})

	log := f.waitForLog(t, e.ID, 1)
	require.Equal(t, []string{"failed"}, results(log))
	require.Zero(t, log[0].HTTPStatus)
	require.Equal(t, store.FailureRefusedAddress, log[0].Failure)
	require.Empty(t, r.requests())
}

// TestDispatcher_ClassifiesWhatWentWrong: the log keeps the class of a
// failure with no answer, not the transport's words.
func TestDispatcher_ClassifiesWhatWentWrong(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens there any more
	untrusted := httptest.NewUnstartedServer(http.NotFoundHandler())
	untrusted.Config.ErrorLog = stdlog.New(io.Discard, "", 0) // the handshake's failure is the point
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)
	for name, c := range map[string]struct {
		url  string
		want store.DeliveryFailure
	}{
		"nothing listens":             {closed.URL, store.FailureConnectionRefused},
		"certificate does not verify": {untrusted.URL, store.FailureTLS},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			e, _ := f.endpoint(t, c.url)
			f.declined(t)
			f.runWith(t, nil, []time.Duration{time.Hour})
			log := f.waitForLog(t, e.ID, 1)
			require.Equal(t, c.want, log[0].Failure)
		})
	}
}

// TestNewHTTPClient_RefusesANameThatResolvesToADisallowedAddress: the
// dialer judges the address a name resolved to, so that a name is no way
// around the rule.
func TestNewHTTPClient_RefusesANameThatResolvesToADisallowedAddress(t *testing.T) {
	r := newReceiver(t, answerWith(http.StatusOK))
	byName := strings.Replace(r.URL, "127.0.0.1", "localhost", 1)

	_, err := notify.NewHTTPClient(nil).Get(byName)
	var refused *notify.RefusedAddressError
	require.ErrorAs(t, err, &refused)
	require.True(t, refused.Addr.IsLoopback(), "refused %v", refused.Addr)
	require.Empty(t, r.requests())

	resp, err := notify.NewHTTPClient(notify.LoopbackNetworks).Get(byName)
	require.NoError(t, err, "allowed, the same name is reached")
	require.NoError(t, resp.Body.Close())
	require.Len(t, r.requests(), 1)
}

// TestNewHTTPClient_UsesNoProxy: a proxy from the environment would
// connect on the client's behalf, out of reach of its dialer's check.
// The proxy is on loopback, which the client may reach: had it taken the
// proxy, the proxy would have had the request for a documentation address
// that the client may not reach. (The environment's proxy is read once per
// process, so this holds only where no test read it before.)
func TestNewHTTPClient_UsesNoProxy(t *testing.T) {
	proxy := newReceiver(t, answerWith(http.StatusOK))
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	_, err := notify.NewHTTPClient(notify.LoopbackNetworks).Get("http://192.0.2.1/")
	var refused *notify.RefusedAddressError
	require.ErrorAs(t, err, &refused)
	require.Empty(t, proxy.requests())
}

// TestDispatcher_SignsWithBothSecretsWhileTheOldOneLives: after a rotation,
// a receiver that knows either secret verifies the event.
func TestDispatcher_SignsWithBothSecretsWhileTheOldOneLives(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := newReceiver(t, answerWith(http.StatusOK))
	e, old := f.endpoint(t, r.URL)
	next := webhook.NewSecret()
	_, err := f.s.RotateEndpointSecret(ctx, e.ID, next, time.Now().Add(time.Hour), time.Now())
	require.NoError(t, err)
	f.declined(t)
	f.run(t, nil)

	f.waitForLog(t, e.ID, 1)
	got := r.requests()[0]
	sigs, err := webhook.ParseSignatures(got.header.Get(webhook.HeaderSignature))
	require.NoError(t, err)
	require.Len(t, sigs, 2)
	nextSecret, err := webhook.ParseSecret(next)
	require.NoError(t, err)
	for _, s := range []webhook.Secret{old, nextSecret} {
		_, err := webhook.NewVerifier([]webhook.Secret{s}, nil).Verify(got.header, got.body)
		require.NoError(t, err)
	}
}

// TestDispatcher_TwoDispatchersDeliverEachTryOnce: two dispatchers on one
// outbox, each with its own connection to the database, send every event,
// each once.
func TestDispatcher_TwoDispatchersDeliverEachTryOnce(t *testing.T) {
	const events = 20
	path := filepath.Join(t.TempDir(), "store.db")
	first, err := store.Open(context.Background(), "sqlite:"+path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, first.Close()) })
	second, err := store.Open(context.Background(), "sqlite:"+path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, second.Close()) })
	f1, f2 := &fixture{s: first, allows: notify.LoopbackNetworks}, &fixture{s: second, allows: notify.LoopbackNetworks}

	r := newReceiver(t, answerWith(http.StatusOK))
	e, _ := f1.endpoint(t, r.URL)
	for range events {
		f1.declined(t)
	}
	f1.run(t, nil)
	f2.run(t, nil)

	log := f1.waitForLog(t, e.ID, events)
	ids := make(map[string]int)
	for _, got := range r.requests() {
		ids[got.header.Get(webhook.HeaderID)]++
	}
	require.Len(t, ids, events)
	for id, n := range ids {
		require.Equal(t, 1, n, "event %s", id)
	}
	for _, a := range log {
		require.Equal(t, store.DeliveryDelivered, a.Result)
	}
}

func TestParseSchedule(t *testing.T) {
	got, err := notify.ParseSchedule("5s, 30s,2m")
	require.NoError(t, err)
	require.Equal(t, []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute}, got)
	got, err = notify.ParseSchedule(notify.FormatSchedule(notify.DefaultSchedule))
	require.NoError(t, err)
	require.Equal(t, notify.DefaultSchedule, got)

	for input, want := range map[string]string{
		"":                                "empty",
		"5s,,1m":                          `retry 2, "", is not a duration`,
		"5s,soon":                         `retry 2, "soon", is not a duration`,
		"0s":                              "retry 1 waits 0s; each wait must be positive",
		"-1s":                             "must be positive",
		"1m,30s":                          "retry 2 waits 30s, less than retry 1's 1m0s",
		strings.Repeat("1s,", 30) + "1s":  "31 retries; at most 30",
		strings.Repeat("1s,", 29) + "1s ": "",
	} {
		_, err := notify.ParseSchedule(input)
		if want == "" {
			require.NoError(t, err, input)
			continue
		}
		require.ErrorContains(t, err, want, input)
	}
}
