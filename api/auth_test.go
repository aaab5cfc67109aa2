package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/apikey"
)

// keyedRoutes are the routes that need an API key, with a body each would
// accept.
var keyedRoutes = []struct{ method, path, body string }{
	{http.MethodPost, "/api/orders", `{"amount": "1.00", "currency": "TRY"}`},
	{http.MethodPost, "/api/orders/1001/checkout", `{"card_token": "tok_visa"}`},
	{http.MethodGet, "/api/orders/1001", ""},
	{http.MethodGet, "/api/settlements/2026-03-14", ""},
	{http.MethodPost, "/api/settlements/2026-03-14/run", `{}`},
	{http.MethodGet, "/metrics", ""},
	{http.MethodGet, "/no/such/path", ""},
}

func bearer(key string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
}

func TestAPI_RequestsWithoutAWorkingKeyAre401AndChangeNothing(t *testing.T) {
	a := startTestAPI(t)
	createOrder(t, a, `{"amount": "5.00", "currency": "TRY"}`)
	unknown, _, err := apikey.New("never stored", apikey.AllScopes(), time.Now())
	require.NoError(t, err)
	// The stored key's id with another secret.
	wrongSecret := a.key[:20] + strings.Repeat("0", 64)
	headers := map[string]map[string]string{
		"no key":          {"Content-Type": "application/json"},
		"basic auth":      {"Authorization": "Basic dXNlcjpwYXNz", "Content-Type": "application/json"},
		"malformed key":   bearer("ck_123"),
		"unknown key":     bearer(unknown.String()),
		"wrong secret":    bearer(wrongSecret),
		"key without ck_": bearer(strings.TrimPrefix(a.key, "ck_")),
	}
	for name, header := range headers {
		for _, route := range keyedRoutes {
			t.Run(name+" "+route.method+" "+route.path, func(t *testing.T) {
				before := a.snapshot(t)
				status, h, body := a.sendInvalidWith(t, header, route.method, route.path, route.body)
				p := requireProblem(t, http.StatusUnauthorized, status, h, body)
				require.Equal(t, "urn:chargeonce:problem:api-key-required", p.Type)
				require.Equal(t, `Bearer realm="chargeonce"`, h.Get("WWW-Authenticate"))
				require.Equal(t, before, a.snapshot(t))
			})
		}
	}

	status, _, _ := a.sendWith(t, nil, http.MethodGet, "/healthz", "")
	require.Equal(t, http.StatusOK, status, "the health check needs no key")
}

func TestAPI_KeyWithoutTheRoutesScopeIs403AndChangesNothing(t *testing.T) {
	a := startTestAPI(t)
	id, _ := createOrder(t, a, `{"amount": "5.00", "currency": "TRY"}`)
	checkoutOnly := a.newKey(t, apikey.ScopeCheckout)
	operatorOnly := a.newKey(t, apikey.ScopeOperator, apikey.ScopeRefund)
	tests := []struct {
		key                string
		method, path, body string
	}{
		{checkoutOnly, http.MethodGet, "/api/settlements/2026-03-14", ""},
		{checkoutOnly, http.MethodPost, "/api/settlements/2026-03-14/run", `{}`},
		{checkoutOnly, http.MethodGet, "/metrics", ""},
		{operatorOnly, http.MethodPost, "/api/orders", `{"amount": "1.00", "currency": "TRY"}`},
		{operatorOnly, http.MethodPost, fmt.Sprintf("/api/orders/%d/checkout", id), `{"card_token": "tok_visa"}`},
		{operatorOnly, http.MethodGet, fmt.Sprintf("/api/orders/%d", id), ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			before := a.snapshot(t)
			status, h, body := a.sendWith(t, bearer(tt.key), tt.method, tt.path, tt.body)
			p := requireProblem(t, http.StatusForbidden, status, h, body)
			require.Equal(t, "urn:chargeonce:problem:forbidden", p.Type)
			require.Contains(t, p.Detail, "needs the scope")
			require.Equal(t, before, a.snapshot(t))
		})
	}

	status, _, body := a.sendWith(t, bearer(checkoutOnly), http.MethodGet, fmt.Sprintf("/api/orders/%d", id), "")
	require.Equal(t, http.StatusOK, status, "body: %s", body)
	status, _, body = a.sendWith(t, bearer(operatorOnly), http.MethodGet, "/metrics", "")
	require.Equal(t, http.StatusOK, status, "body: %s", body)
}

func TestAPI_RotationKeepsTheOldKeyUntilItsRevocationThen401(t *testing.T) {
	a := startTestAPI(t)
	id, _ := createOrder(t, a, `{"amount": "5.00", "currency": "TRY"}`)
	path := fmt.Sprintf("/api/orders/%d", id)
	old := a.newKey(t, apikey.ScopeCheckout)
	oldKey, err := apikey.Parse(old)
	require.NoError(t, err)

	// The new key is made, and the old one revoked an hour from now, as
	// "apikey revoke --after 1h" does.
	fresh := a.newKey(t, apikey.ScopeCheckout)
	_, err = a.store.RevokeAPIKey(context.Background(), oldKey.ID, time.Now().Add(time.Hour))
	require.NoError(t, err)
	for _, key := range []string{old, fresh} {
		status, _, body := a.sendWith(t, bearer(key), http.MethodGet, path, "")
		require.Equal(t, http.StatusOK, status, "both keys work during the overlap; body: %s", body)
	}

	// The overlap ends: a revocation moves the time earlier, to now, as a
	// second "apikey revoke" does once every client has the new key.
	_, err = a.store.RevokeAPIKey(context.Background(), oldKey.ID, time.Now())
	require.NoError(t, err)
	status, h, body := a.sendWith(t, bearer(old), http.MethodGet, path, "")
	p := requireProblem(t, http.StatusUnauthorized, status, h, body)
	require.Equal(t, "the API key is revoked", p.Detail)
	status, _, body = a.sendWith(t, bearer(fresh), http.MethodGet, path, "")
	require.Equal(t, http.StatusOK, status, "body: %s", body)
}

func TestAPI_CrossSiteFormPostDoesNotRunTheBooks(t *testing.T) {
	a := startTestAPI(t)
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example"}
	status, h, body := a.sendInvalidWith(t, form, http.MethodPost, "/api/settlements/2026-03-14/run", "")
	requireProblem(t, http.StatusUnauthorized, status, h, body)

	// Even a request that carries the key needs the JSON body.
	tests := []struct{ contentType, body string }{
		{"application/x-www-form-urlencoded", ""},
		{"application/x-www-form-urlencoded", "a=b"},
		{"text/plain", "{}"},
		{"multipart/form-data; boundary=x", "--x--"},
		{"", ""},
		{"application/json", ""},
		{"application/json", `{"date": "2026-03-14"}`},
	}
	for _, tt := range tests {
		t.Run(tt.contentType+" "+tt.body, func(t *testing.T) {
			before := a.snapshot(t)
			header := map[string]string{"Authorization": "Bearer " + a.key, "Content-Type": tt.contentType, "Origin": "https://evil.example"}
			status, h, body := a.sendInvalidWith(t, header, http.MethodPost, "/api/settlements/2026-03-14/run", tt.body)
			requireProblem(t, http.StatusBadRequest, status, h, body)
			require.Equal(t, before, a.snapshot(t))
		})
	}

	// The empty JSON object passes, and goes on to Temporal, which this
	// test's API cannot reach.
	status, h, body = a.send(t, http.MethodPost, "/api/settlements/2026-03-14/run", "application/json", "{}")
	requireProblem(t, http.StatusServiceUnavailable, status, h, body)
}

func TestAPI_RequestLogCarriesTheKeyIDAndNeverTheKey(t *testing.T) {
	a := startTestAPI(t)
	key, err := apikey.Parse(a.key)
	require.NoError(t, err)
	createOrder(t, a, `{"amount": "5.00", "currency": "TRY"}`)
	wrong := a.key[:len(a.key)-1] + map[bool]string{true: "1", false: "0"}[strings.HasSuffix(a.key, "0")]
	status, _, _ := a.sendWith(t, bearer(wrong), http.MethodGet, "/api/orders/1001", "")
	require.Equal(t, http.StatusUnauthorized, status)

	logs := a.logs.String()
	require.Contains(t, logs, `"path":"/api/orders","status":201,`)
	require.Regexp(t, `"path":"/api/orders","status":201,"duration_ms":\d+,"key_id":"`+key.ID+`"`, logs)
	require.Regexp(t, `"path":"/api/orders/1001","status":401,"duration_ms":\d+,"key_id":""`, logs)
	secret := strings.TrimPrefix(a.key, "ck_"+key.ID+"_")
	require.NotContains(t, logs, secret[:16], "no part of the secret is logged")
}
