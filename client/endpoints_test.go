package client_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/api/wire"
	"chargeonce/internal/apikey"
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
	api := a.client(t, apikey.ScopeOperator)

	_, err := api.CreateEndpoint(ctx, wire.CreateEndpointRequest{URL: "http://shop.example/events"})
	requireProblem(t, err, http.StatusBadRequest, wire.ProblemInvalidRequest)
	_, err = api.CreateEndpoint(ctx, wire.CreateEndpointRequest{URL: "https://shop.example/events", EventTypes: []string{"payment.charged"}})
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
	_, err = api.Deliveries(ctx, e.ID, 1001)
	requireProblem(t, err, http.StatusBadRequest, wire.ProblemInvalidRequest)
	_, err = api.ReplayEvent(ctx, "evt_00000000000000000000000000000000", e.ID)
	requireProblem(t, err, http.StatusNotFound, wire.ProblemNotFound)

	_, err = a.client(t, apikey.ScopeCheckout).Endpoints(ctx)
	requireProblem(t, err, http.StatusForbidden, wire.ProblemForbidden)
}
