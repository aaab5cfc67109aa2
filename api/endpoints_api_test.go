package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/internal/apikey"
	"chargeonce/store"
)

const endpointURL = "https://shop.example/chargeonce-events"

// createEndpoint registers an endpoint through the API and returns the
// answer.
func createEndpoint(t *testing.T, a *testAPI, body string) (wire.Endpoint, http.Header) {
	t.Helper()
	status, header, data := a.send(t, http.MethodPost, "/api/webhook-endpoints", "application/json", body)
	require.Equal(t, http.StatusCreated, status, "body: %s", data)
	var e wire.Endpoint
	require.NoError(t, json.Unmarshal(data, &e))
	return e, header
}

// getJSON GETs path, expects 200 and decodes the body into v.
func getJSON(t *testing.T, a *testAPI, path string, v any) {
	t.Helper()
	status, _, data := a.send(t, http.MethodGet, path, "", "")
	require.Equal(t, http.StatusOK, status, "body: %s", data)
	require.NoError(t, json.Unmarshal(data, v))
}

// postJSON POSTs body to path, expects want and decodes the answer into v.
func postJSON(t *testing.T, a *testAPI, path, body string, want int, v any) {
	t.Helper()
	status, _, data := a.send(t, http.MethodPost, path, "application/json", body)
	require.Equal(t, want, status, "body: %s", data)
	require.NoError(t, json.Unmarshal(data, v))
}

// endpointsSnapshot is every endpoint as the store keeps it, secrets too,
// to prove that a refused request changed nothing.
func endpointsSnapshot(t *testing.T, a *testAPI) []store.Endpoint {
	t.Helper()
	list, err := a.store.Endpoints(context.Background())
	require.NoError(t, err)
	return list
}

// paidOrderEvent stores an order paid by one attempt, which writes its
// payment.succeeded event, and returns the order's id.
func paidOrderEvent(t *testing.T, a *testAPI) int64 {
	t.Helper()
	attempt := a.openAttempt(t)
	settled, err := a.store.SettleAttempt(context.Background(), attempt.Key, chargeonce.AttemptSucceeded, "ch_000001", time.Now())
	require.NoError(t, err)
	require.True(t, settled.Changed)
	return attempt.OrderID
}

func TestEventEndpoints_CreateShowsTheSecretOnceAndDisableAndEnableChangeTheStatus(t *testing.T) {
	a := startTestAPI(t)
	e, header := createEndpoint(t, a, `{"url": "`+endpointURL+`", "eventTypes": ["payment.succeeded", "refund.succeeded"], "description": "Shop backend"}`)
	require.Regexp(t, `^we_[0-9a-f]{32}$`, e.ID)
	require.Equal(t, "/api/webhook-endpoints/"+e.ID, header.Get("Location"))
	require.Regexp(t, `^whsec_`, e.Secret)
	require.Equal(t, endpointURL, e.URL)
	require.Equal(t, []string{"payment.succeeded", "refund.succeeded"}, e.EventTypes)
	require.Equal(t, "Shop backend", e.Description)
	require.Equal(t, "enabled", e.Status)
	require.Nil(t, e.DisabledReason)
	require.Nil(t, e.FailingSince)
	require.Nil(t, e.PreviousSecretExpiresAt)
	stored, err := a.store.GetEndpoint(context.Background(), e.ID)
	require.NoError(t, err)
	require.Equal(t, e.Secret, stored.Secret, "the secret shown is the one that signs")

	// Reading it never shows the secret again.
	status, _, data := a.send(t, http.MethodGet, "/api/webhook-endpoints/"+e.ID, "", "")
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, string(data), "whsec_")
	require.NotContains(t, string(data), `"secret"`)
	var got wire.Endpoint
	require.NoError(t, json.Unmarshal(data, &got))
	e.Secret = ""
	require.Equal(t, e, got)

	all, _ := createEndpoint(t, a, `{"url": "https://hooks.shop.example/events", "eventTypes": [], "description": ""}`)
	require.Empty(t, all.EventTypes, "an empty list is every type")
	var list wire.EndpointList
	getJSON(t, a, "/api/webhook-endpoints", &list)
	require.Len(t, list.Endpoints, 2)
	require.Equal(t, []string{e.ID, all.ID}, []string{list.Endpoints[0].ID, list.Endpoints[1].ID}, "oldest first")
	require.NotContains(t, fmt.Sprint(list), "whsec_")

	var disabled wire.Endpoint
	postJSON(t, a, "/api/webhook-endpoints/"+e.ID+"/disable", `{}`, http.StatusOK, &disabled)
	require.Equal(t, "disabled", disabled.Status)
	require.NotNil(t, disabled.DisabledReason)
	require.Equal(t, "disabled through the API", *disabled.DisabledReason)
	require.Empty(t, disabled.Secret)

	var enabled wire.Endpoint
	postJSON(t, a, "/api/webhook-endpoints/"+e.ID+"/enable", `{}`, http.StatusOK, &enabled)
	require.Equal(t, "enabled", enabled.Status)
	require.Nil(t, enabled.DisabledReason)
}

func TestEventEndpoints_BadRequestsAre400AndChangeNothing(t *testing.T) {
	a := startTestAPI(t)
	e, _ := createEndpoint(t, a, `{"url": "`+endpointURL+`", "eventTypes": [], "description": ""}`)
	for _, tc := range []struct{ name, method, path, body, want string }{
		{"no URL", "POST", "/api/webhook-endpoints", `{"eventTypes": [], "description": ""}`, `field "url" is required`},
		{"plain http to another host", "POST", "/api/webhook-endpoints", `{"url": "http://shop.example/hooks", "eventTypes": [], "description": ""}`, "not a loopback host"},
		{"an unknown type", "POST", "/api/webhook-endpoints", `{"url": "` + endpointURL + `", "eventTypes": ["payment.refunded"], "description": ""}`, `item 1 is "payment.refunded"`},
		{"a type twice", "POST", "/api/webhook-endpoints", `{"url": "` + endpointURL + `", "eventTypes": ["payment.declined", "payment.declined"], "description": ""}`, "twice"},
		{"eventTypes not a list", "POST", "/api/webhook-endpoints", `{"url": "` + endpointURL + `", "eventTypes": "payment.declined", "description": ""}`, "eventTypes"},
		{"a long description", "POST", "/api/webhook-endpoints", `{"url": "` + endpointURL + `", "eventTypes": [], "description": "` + strings.Repeat("d", 501) + `"}`, `field "description" has 501 characters`},
		{"an unknown field", "POST", "/api/webhook-endpoints", `{"url": "` + endpointURL + `", "secret": "whsec_mine"}`, "secret"},
		{"a disable without a body", "POST", "/api/webhook-endpoints/" + e.ID + "/disable", ``, ""},
		{"a disable with a field", "POST", "/api/webhook-endpoints/" + e.ID + "/disable", `{"reason": "gone"}`, "reason"},
		{"a malformed endpoint id", "POST", "/api/webhook-endpoints/we_XYZ/disable", `{}`, `endpoint id "we_XYZ" must be we_`},
		{"a negative keep", "POST", "/api/webhook-endpoints/" + e.ID + "/rotate-secret", `{"keepPreviousFor": "-1h"}`, `"keepPreviousFor" is "-1h"`},
		{"a keep over 30 days", "POST", "/api/webhook-endpoints/" + e.ID + "/rotate-secret", `{"keepPreviousFor": "721h"}`, `to "720h"`},
		{"a limit of 0", "GET", "/api/webhook-endpoints/" + e.ID + "/deliveries?limit=0", ``, "limit is a whole number from 1 to 1000"},
		{"a limit over 1000", "GET", "/api/webhook-endpoints/" + e.ID + "/deliveries?limit=1001", ``, "limit"},
		{"a limit that is no number", "GET", "/api/webhook-endpoints/" + e.ID + "/deliveries?limit=ten", ``, "limit"},
		{"two limits", "GET", "/api/webhook-endpoints/" + e.ID + "/deliveries?limit=1&limit=2", ``, "given once"},
		{"a malformed event id", "POST", "/api/events/evt_1/replay", `{"endpointId": "` + e.ID + `"}`, `event id "evt_1" must be evt_`},
		{"a replay without an endpoint", "POST", "/api/events/evt_0123456789abcdef0123456789abcdef/replay", `{}`, `field "endpointId" is required`},
		// What the document forbids, sent on purpose: null where it
		// requires a value of a type.
		{"a null description", "POST", "/api/webhook-endpoints", `{"url": "` + endpointURL + `", "eventTypes": [], "description": null}`, `field "description" must not be null`},
		{"null eventTypes", "POST", "/api/webhook-endpoints", `{"url": "` + endpointURL + `", "eventTypes": null}`, `field "eventTypes" must not be null`},
		{"a null URL", "POST", "/api/webhook-endpoints", `{"url": null}`, `field "url" must not be null`},
		{"a null keep", "POST", "/api/webhook-endpoints/" + e.ID + "/rotate-secret", `{"keepPreviousFor": null}`, `field "keepPreviousFor" must not be null`},
		{"a null endpoint to replay to", "POST", "/api/events/evt_0123456789abcdef0123456789abcdef/replay", `{"endpointId": null}`, `field "endpointId" must not be null`},
		{"an order id of events that is no number", "GET", "/api/orders/abc/events", ``, `order id "abc"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := endpointsSnapshot(t, a)
			status, header, data := a.sendInvalid(t, tc.method, tc.path, "application/json", tc.body)
			p := requireProblem(t, http.StatusBadRequest, status, header, data)
			require.Equal(t, string(wire.ProblemInvalidRequest), p.Type)
			require.Contains(t, p.Detail, tc.want)
			require.Equal(t, before, endpointsSnapshot(t, a))
		})
	}
}

// TestEventEndpoints_InternalAddressesAreRefusedAndNothingIsStored: the
// URLs that pointed the dispatcher at the service's own network are each a
// 400, where no network is allowed (production's default).
func TestEventEndpoints_InternalAddressesAreRefusedAndNothingIsStored(t *testing.T) {
	a := startTestAPI(t)
	for _, u := range []string{
		"https://169.254.169.254/",
		"https://10.0.0.1/",
		"https://127.0.0.1:8443/",
		"https://0.0.0.0:8443/",
		"https://[::ffff:169.254.169.254]/",
		"https://2130706433/",
		"https://0177.0.0.1/",
		"https://localhost:8443/",
		"http://127.0.0.1:8097/events",
	} {
		t.Run(u, func(t *testing.T) {
			status, header, data := a.send(t, http.MethodPost, "/api/webhook-endpoints", "application/json",
				`{"url": "`+u+`", "eventTypes": [], "description": ""}`)
			p := requireProblem(t, http.StatusBadRequest, status, header, data)
			require.Equal(t, string(wire.ProblemInvalidRequest), p.Type)
			require.Contains(t, p.Detail, `field "url"`)
			require.Empty(t, endpointsSnapshot(t, a))
		})
	}
}

// TestEventEndpoints_TheDeliveryLogShowsTheClassOfEachFailureNeverItsText:
// the log of an endpoint shows http_status for an answer and a class for
// no answer; a try recorded before classes, whose text named an address,
// shows its class only.
func TestEventEndpoints_TheDeliveryLogShowsTheClassOfEachFailureNeverItsText(t *testing.T) {
	ctx := context.Background()
	a := startTestAPI(t)
	e, _ := createEndpoint(t, a, `{"url": "`+endpointURL+`", "eventTypes": [], "description": ""}`)
	paidOrderEvent(t, a)
	at := time.Now()
	due, err := a.store.ClaimDeliveries(ctx, at, time.Minute, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	for i, try := range []store.DeliveryAttempt{
		{HTTPStatus: 0, Failure: store.FailureTLS},
		{HTTPStatus: 302, Failure: store.FailureHTTPStatus},
		{HTTPStatus: 0, Failure: store.FailureRefusedAddress},
	} {
		try.DeliveryID, try.Attempt, try.Result = due[0].ID, i+1, store.DeliveryFailed
		try.At, try.NextAttemptAt = at, at
		require.NoError(t, a.store.RecordDeliveryAttempt(ctx, try))
	}
	_, err = a.db.ExecContext(ctx, `UPDATE event_delivery_attempts SET error = ? WHERE attempt = 1`,
		"x509: cannot validate certificate for 10.0.0.1 because it doesn't contain any IP SANs")
	require.NoError(t, err)

	status, _, data := a.send(t, http.MethodGet, "/api/webhook-endpoints/"+e.ID+"/deliveries", "", "")
	require.Equal(t, http.StatusOK, status, "body: %s", data)
	require.NotContains(t, string(data), "10.0.0.1")
	var log wire.DeliveryList
	require.NoError(t, json.Unmarshal(data, &log))
	var failures []string
	for _, d := range log.Deliveries {
		failures = append(failures, *d.Failure)
	}
	require.Equal(t, []string{"refused_address", "http_status", "connection_failed"}, failures, "newest first")
	require.Equal(t, 302, *log.Deliveries[1].HTTPStatus)
}

func TestEventEndpoints_UnknownEndpointsAndEventsAre404(t *testing.T) {
	a := startTestAPI(t)
	e, _ := createEndpoint(t, a, `{"url": "`+endpointURL+`", "eventTypes": [], "description": ""}`)
	const unknown = "we_00000000000000000000000000000000"
	const unknownEvent = "evt_00000000000000000000000000000000"
	for _, tc := range []struct{ method, path, body, want string }{
		{"GET", "/api/webhook-endpoints/" + unknown, "", "no webhook endpoint " + unknown},
		{"POST", "/api/webhook-endpoints/" + unknown + "/disable", "{}", "no webhook endpoint " + unknown},
		{"POST", "/api/webhook-endpoints/" + unknown + "/enable", "{}", "no webhook endpoint " + unknown},
		{"POST", "/api/webhook-endpoints/" + unknown + "/rotate-secret", "{}", "no webhook endpoint " + unknown},
		{"GET", "/api/webhook-endpoints/" + unknown + "/deliveries", "", "no webhook endpoint " + unknown},
		{"POST", "/api/events/" + unknownEvent + "/replay", `{"endpointId": "` + e.ID + `"}`, "no event " + unknownEvent},
		{"GET", "/api/orders/999999/events", "", "no order 999999"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			before := endpointsSnapshot(t, a)
			status, header, data := a.send(t, tc.method, tc.path, "application/json", tc.body)
			p := requireProblem(t, http.StatusNotFound, status, header, data)
			require.Equal(t, tc.want, p.Detail)
			require.Equal(t, before, endpointsSnapshot(t, a))
		})
	}
	order := paidOrderEvent(t, a)
	var events wire.EventList
	getJSON(t, a, fmt.Sprintf("/api/orders/%d/events", order), &events)
	require.Len(t, events.Events, 1)
	status, header, data := a.send(t, "POST", "/api/events/"+events.Events[0].ID+"/replay", "application/json", `{"endpointId": "`+unknown+`"}`)
	p := requireProblem(t, http.StatusNotFound, status, header, data)
	require.Equal(t, "no webhook endpoint "+unknown, p.Detail)
}

func TestEventEndpoints_NeedTheOperatorScope(t *testing.T) {
	a := startTestAPI(t)
	e, _ := createEndpoint(t, a, `{"url": "`+endpointURL+`", "eventTypes": [], "description": ""}`)
	checkoutKey := a.newKey(t, apikey.ScopeCheckout, apikey.ScopeRefund)
	before := endpointsSnapshot(t, a)
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/webhook-endpoints", `{"url": "` + endpointURL + `", "eventTypes": [], "description": ""}`},
		{"GET", "/api/webhook-endpoints", ""},
		{"GET", "/api/webhook-endpoints/" + e.ID, ""},
		{"POST", "/api/webhook-endpoints/" + e.ID + "/disable", "{}"},
		{"POST", "/api/webhook-endpoints/" + e.ID + "/rotate-secret", "{}"},
		{"GET", "/api/webhook-endpoints/" + e.ID + "/deliveries", ""},
		{"POST", "/api/events/evt_00000000000000000000000000000000/replay", `{"endpointId": "` + e.ID + `"}`},
	} {
		status, header, data := a.sendWith(t, map[string]string{"Authorization": "Bearer " + checkoutKey, "Content-Type": "application/json"}, r.method, r.path, r.body)
		p := requireProblem(t, http.StatusForbidden, status, header, data)
		require.Contains(t, p.Detail, "needs the scope operator", r.path)
	}
	require.Equal(t, before, endpointsSnapshot(t, a))

	// An order's events are the checkout scope's, as the order is.
	onlyCheckout := a.newKey(t, apikey.ScopeCheckout)
	order := paidOrderEvent(t, a)
	status, _, data := a.sendWith(t, map[string]string{"Authorization": "Bearer " + onlyCheckout}, "GET", fmt.Sprintf("/api/orders/%d/events", order), "")
	require.Equal(t, http.StatusOK, status, "body: %s", data)
}

func TestEventEndpoints_RotationShowsTheNewSecretAndKeepsThePreviousOneSigningForAWhile(t *testing.T) {
	a := startTestAPI(t)
	e, _ := createEndpoint(t, a, `{"url": "`+endpointURL+`", "eventTypes": [], "description": ""}`)

	before := time.Now()
	var rotated wire.Endpoint
	postJSON(t, a, "/api/webhook-endpoints/"+e.ID+"/rotate-secret", `{}`, http.StatusOK, &rotated)
	require.Regexp(t, `^whsec_`, rotated.Secret)
	require.NotEqual(t, e.Secret, rotated.Secret)
	require.NotNil(t, rotated.PreviousSecretExpiresAt)
	require.WithinRange(t, *rotated.PreviousSecretExpiresAt, before.Add(24*time.Hour-time.Second), time.Now().Add(24*time.Hour))
	stored, err := a.store.GetEndpoint(context.Background(), e.ID)
	require.NoError(t, err)
	require.Equal(t, rotated.Secret, stored.Secret)
	require.Equal(t, e.Secret, stored.PreviousSecret)

	var shown wire.Endpoint
	getJSON(t, a, "/api/webhook-endpoints/"+e.ID, &shown)
	require.Empty(t, shown.Secret)
	require.Equal(t, rotated.PreviousSecretExpiresAt, shown.PreviousSecretExpiresAt)

	// "0s" retires the previous secret at once: nothing but the new one signs.
	var again wire.Endpoint
	postJSON(t, a, "/api/webhook-endpoints/"+e.ID+"/rotate-secret", `{"keepPreviousFor": "0s"}`, http.StatusOK, &again)
	require.NotEqual(t, rotated.Secret, again.Secret)
	require.Nil(t, again.PreviousSecretExpiresAt)
}

func TestOrderEvents_ReplayQueuesTheEventAgainUnlessTheEndpointIsDisabled(t *testing.T) {
	a := startTestAPI(t)
	e, _ := createEndpoint(t, a, `{"url": "`+endpointURL+`", "eventTypes": [], "description": ""}`)
	order := paidOrderEvent(t, a)

	var events wire.EventList
	getJSON(t, a, fmt.Sprintf("/api/orders/%d/events", order), &events)
	require.Len(t, events.Events, 1)
	ev := events.Events[0]
	require.Regexp(t, `^evt_[0-9a-f]{32}$`, ev.ID)
	require.Equal(t, "payment.succeeded", ev.Type)
	require.Equal(t, order, ev.Data.OrderID)
	require.Equal(t, int64(1), ev.Data.Sequence)
	require.Equal(t, "paid", ev.Data.OrderStatus)
	require.NotNil(t, ev.Data.Payment)
	require.Equal(t, "548.90", ev.Data.Payment.Amount)
	require.Nil(t, ev.Data.Refund)

	// An order without events has an empty list, not null.
	other, err := a.store.CreateOrder(context.Background(), chargeonce.Money{Minor: 100, Currency: "TRY"}, "")
	require.NoError(t, err)
	status, _, data := a.send(t, "GET", fmt.Sprintf("/api/orders/%d/events", other.ID), "", "")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"events": []}`, string(data))

	var answer wire.ReplayAnswer
	postJSON(t, a, "/api/events/"+ev.ID+"/replay", `{"endpointId": "`+e.ID+`"}`, http.StatusAccepted, &answer)
	require.Equal(t, ev.ID, answer.EventID)
	require.Equal(t, e.ID, answer.EndpointID)
	require.WithinDuration(t, time.Now(), answer.NextAttemptAt, time.Minute)
	due, err := a.store.ClaimDeliveries(context.Background(), time.Now().Add(time.Second), time.Minute, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, ev.ID, due[0].Event.ID)
	require.Equal(t, e.ID, due[0].Endpoint.ID)

	var disabled wire.Endpoint
	postJSON(t, a, "/api/webhook-endpoints/"+e.ID+"/disable", `{}`, http.StatusOK, &disabled)
	status, header, data := a.send(t, "POST", "/api/events/"+ev.ID+"/replay", "application/json", `{"endpointId": "`+e.ID+`"}`)
	p := requireProblem(t, http.StatusConflict, status, header, data)
	require.Equal(t, string(wire.ProblemEndpointDisabled), p.Type)
	require.Contains(t, p.Detail, "/enable")

	var deliveries wire.DeliveryList
	getJSON(t, a, "/api/webhook-endpoints/"+e.ID+"/deliveries?limit=5", &deliveries)
	require.NotNil(t, deliveries.Deliveries)
	require.Empty(t, deliveries.Deliveries, "nothing was tried yet: no dispatcher runs here")
}
