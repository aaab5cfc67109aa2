package client_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/internal/apikey"
	"chargeonce/store"
)

func TestClient_RegistersListsRotatesAndDisablesAnEndpoint(t *testing.T) {
	ctx := context.Background()
	api := startAPI(t, true).client(t, apikey.ScopeOperator)

	created, err := api.CreateEndpoint(ctx, wire.CreateEndpointRequest{URL: "https://shop.example/events", EventTypes: []string{"payment.succeeded"}, Description: "the shop"})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(created.Secret, "whsec_"), created.Secret)
	require.Equal(t, "enabled", created.Status)

	listed, err := api.Endpoints(ctx)
	require.NoError(t, err)
	require.Len(t, listed, 1)
	read, err := api.GetEndpoint(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, listed[0], read)
	require.Empty(t, read.Secret, "the secret is shown only when it is made")
	require.Equal(t, created.URL, read.URL)

	rotated, err := api.RotateEndpointSecret(ctx, created.ID, wire.RotateSecretRequest{KeepPreviousFor: "1h"})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(rotated.Secret, "whsec_"), rotated.Secret)
	require.NotEqual(t, created.Secret, rotated.Secret)
	require.NotNil(t, rotated.PreviousSecretExpiresAt)
	require.WithinDuration(t, time.Now().Add(time.Hour), *rotated.PreviousSecretExpiresAt, time.Minute)

	disabled, err := api.DisableEndpoint(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, "disabled", disabled.Status)
	require.NotNil(t, disabled.DisabledReason)
	enabled, err := api.EnableEndpoint(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, "enabled", enabled.Status)

	deliveries, err := api.Deliveries(ctx, created.ID, 10)
	require.NoError(t, err)
	require.Empty(t, deliveries)
}

func TestClient_RefusedEndpointsAndUnknownEventsAreProblems(t *testing.T) {
	ctx := context.Background()
	a := startAPI(t, true)
	api, bad := a.client(t, apikey.ScopeOperator), a.badInputClient(t, apikey.ScopeOperator)

	_, err := api.CreateEndpoint(ctx, wire.CreateEndpointRequest{URL: "http://shop.example/events"})
	requireProblem(t, err, http.StatusBadRequest, wire.ProblemInvalidRequest)
	_, err = bad.CreateEndpoint(ctx, wire.CreateEndpointRequest{URL: "https://shop.example/events", EventTypes: []string{"payment.charged"}})
	requireProblem(t, err, http.StatusBadRequest, wire.ProblemInvalidRequest)
	listed, err := api.Endpoints(ctx)
	require.NoError(t, err)
	require.Empty(t, listed, "a refused endpoint is not registered")

	_, err = api.GetEndpoint(ctx, "we_00000000000000000000000000000000")
	requireProblem(t, err, http.StatusNotFound, wire.ProblemNotFound)
	_, err = api.Deliveries(ctx, "we_00000000000000000000000000000000", 0)
	requireProblem(t, err, http.StatusNotFound, wire.ProblemNotFound)

	e, err := api.CreateEndpoint(ctx, wire.CreateEndpointRequest{URL: "http://127.0.0.1:9/events"})
	require.NoError(t, err)
	_, err = bad.Deliveries(ctx, e.ID, 1001)
	requireProblem(t, err, http.StatusBadRequest, wire.ProblemInvalidRequest)
	_, err = api.ReplayEvent(ctx, "evt_00000000000000000000000000000000", e.ID)
	requireProblem(t, err, http.StatusNotFound, wire.ProblemNotFound)

	_, err = a.client(t, apikey.ScopeCheckout).Endpoints(ctx)
	requireProblem(t, err, http.StatusForbidden, wire.ProblemForbidden)
}

// paidOrder stores an order paid by one attempt, as the payment worker
// would, which writes its payment.succeeded event, and returns the event's
// id.
func paidOrder(t *testing.T, a *testAPI) string {
	t.Helper()
	ctx := context.Background()
	order, err := a.store.CreateOrder(ctx, chargeonce.Money{Minor: 54890, Currency: "TRY"}, "")
	require.NoError(t, err)
	_, attempt, _, err := a.store.GetOrStartAttempt(ctx, store.NewAttempt{
		OrderID: order.ID, CardHash: chargeonce.LegacyCardHash("tok_visa"), Key: uuid.Must(uuid.NewV7()).String(),
		ReferencePrefix: "chargeonce", Now: time.Now(), AbandonAfter: 30 * time.Minute,
		Provider: chargeonce.DefaultProvider,
	})
	require.NoError(t, err)
	settled, err := a.store.SettleAttempt(ctx, attempt.Key, chargeonce.AttemptSucceeded, "ch_000001", time.Now())
	require.NoError(t, err)
	require.True(t, settled.Changed)
	events, err := a.store.OrderEvents(ctx, order.ID)
	require.NoError(t, err)
	require.Len(t, events, 1)
	return events[0].ID
}

func TestClient_ReplaysAnEventUnlessTheEndpointIsDisabled(t *testing.T) {
	ctx := context.Background()
	a := startAPI(t, true)
	api := a.client(t, apikey.ScopeOperator)
	e, err := api.CreateEndpoint(ctx, wire.CreateEndpointRequest{URL: "http://127.0.0.1:9/events"})
	require.NoError(t, err)
	event := paidOrder(t, a)

	replay, err := api.ReplayEvent(ctx, event, e.ID)
	require.NoError(t, err)
	require.Equal(t, event, replay.EventID)
	require.Equal(t, e.ID, replay.EndpointID)

	_, err = api.DisableEndpoint(ctx, e.ID)
	require.NoError(t, err)
	_, err = api.ReplayEvent(ctx, event, e.ID)
	requireProblem(t, err, http.StatusConflict, wire.ProblemEndpointDisabled)
}
