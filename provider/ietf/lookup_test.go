package ietf_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
)

func TestClient_FindChargesReturnsTheReferencesChargesOldestFirst(t *testing.T) {
	const ref = "shop-1-a&b=c d"
	type seen struct{ method, path, rawQuery string }
	got := make(chan seen, 1)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Method, r.URL.Path, r.URL.RawQuery}
		reply{status: http.StatusOK, body: `{"data":[` +
			`{"id":"ch_2","object":"charge","amount":100,"currency":"TRY","status":"succeeded","merchant_reference":"shop-1-a&b=c d","idempotency_key":"k2","created":"2026-11-30T10:00:05Z"},` +
			`{"id":"ch_1","object":"charge","amount":100,"currency":"TRY","status":"failed","merchant_reference":"shop-1-a&b=c d","idempotency_key":"k1","created":"2026-11-30T10:00:00Z"}` +
			`]}`}.ServeHTTP(w, r)
	}))

	charges, err := newClient(t, srv.URL).FindCharges(context.Background(), ref)

	require.NoError(t, err)
	s := <-got
	require.Equal(t, http.MethodGet, s.method)
	require.Equal(t, "/v1/charges", s.path)
	require.Equal(t, "merchant_reference=shop-1-a%26b%3Dc+d", s.rawQuery)
	require.Equal(t, []provider.Charge{
		{ID: "ch_1", Status: "failed", Currency: "TRY", MerchantReference: ref, IdempotencyKey: "k1", Amount: 100,
			Created: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)},
		{ID: "ch_2", Status: "succeeded", Currency: "TRY", MerchantReference: ref, IdempotencyKey: "k2", Amount: 100,
			Created: time.Date(2026, 11, 30, 10, 0, 5, 0, time.UTC)},
	}, charges)
}

func TestClient_FindChargesWithNoneIsAnEmptyList(t *testing.T) {
	srv := newServer(t, reply{status: http.StatusOK, body: `{"data":[]}`})

	charges, err := newClient(t, srv.URL).FindCharges(context.Background(), "shop-1-abc")

	require.NoError(t, err)
	require.NotNil(t, charges)
	require.Empty(t, charges)
}

func TestClient_FindChargesRefusesAnEmptyReferenceWithoutSending(t *testing.T) {
	srv := newServer(t, reply{status: http.StatusOK, body: `{"data":[]}`})

	_, err := newClient(t, srv.URL).FindCharges(context.Background(), "")

	var perr *provider.Error
	require.ErrorAs(t, err, &perr)
	require.Equal(t, provider.InvalidRequest, perr.Outcome)
	require.Zero(t, srv.hits.Load())
}

func TestClient_FindChargesClassifiesFailures(t *testing.T) {
	cases := []struct {
		name           string
		reply          reply
		want           provider.Outcome
		wantRetryAfter time.Duration
		wantDetail     string
	}{
		{"no data array", reply{status: 200, body: `{}`}, provider.ContractViolation, 0, `no "data" array`},
		{"null data", reply{status: 200, body: `{"data":null}`}, provider.ContractViolation, 0, `no "data" array`},
		{"not JSON", reply{status: 200, body: `<html>`}, provider.ContractViolation, 0, "decoding the answer"},
		{"a charge of another reference",
			reply{status: 200, body: `{"data":[{"id":"ch_1","object":"charge","amount":100,"currency":"TRY","status":"succeeded","merchant_reference":"shop-2-x","idempotency_key":"k","created":"2026-11-30T10:00:00Z"}]}`},
			provider.ContractViolation, 0, `merchant_reference "shop-2-x"`},
		{"a charge in an unknown status",
			reply{status: 200, body: `{"data":[{"id":"ch_1","object":"charge","amount":100,"currency":"TRY","status":"pending","merchant_reference":"shop-1-abc","idempotency_key":"k","created":"2026-11-30T10:00:00Z"}]}`},
			provider.ContractViolation, 0, `unknown status "pending"`},
		{"400", reply{status: 400, body: `{"title":"Bad Request","detail":"merchant_reference is required"}`}, provider.InvalidRequest, 0, "merchant_reference is required"},
		{"404", reply{status: 404}, provider.NotFound, 0, "HTTP 404"},
		{"429", reply{status: 429, header: map[string]string{"Retry-After": "4"}}, provider.RateLimited, 4 * time.Second, "HTTP 429"},
		{"503", reply{status: 503, header: map[string]string{"Retry-After": "3"}}, provider.Unavailable, 3 * time.Second, "HTTP 503"},
		{"409 is not a lookup answer", reply{status: 409}, provider.ContractViolation, 0, "HTTP 409"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.reply)

			charges, err := newClient(t, srv.URL).FindCharges(context.Background(), "shop-1-abc")

			require.Nil(t, charges)
			var perr *provider.Error
			require.ErrorAs(t, err, &perr)
			require.Equal(t, tc.want, perr.Outcome, perr.Detail)
			require.Equal(t, tc.reply.status, perr.StatusCode)
			require.Equal(t, tc.wantRetryAfter, perr.RetryAfter)
			require.Contains(t, perr.Detail, tc.wantDetail)
			require.Contains(t, err.Error(), "provider: find charges: "+string(tc.want))
		})
	}
}

func TestClient_FindChargesWithoutAnAnswerIsRetryable(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(dropConnection))

	_, err := newClient(t, srv.URL).FindCharges(context.Background(), "shop-1-abc")

	var perr *provider.Error
	require.ErrorAs(t, err, &perr)
	require.Equal(t, provider.TransportError, perr.Outcome)
	require.True(t, perr.Outcome.Retryable())
	require.Zero(t, perr.StatusCode)
}

func TestClient_Limits(t *testing.T) {
	const lookups = `,"lookups_per_second":50`
	cases := []struct {
		name       string
		reply      reply
		want       provider.Limits
		wantErr    provider.Outcome
		wantDetail string
	}{
		{name: "published", reply: reply{status: 200, body: `{"key_retention_seconds":86400` + lookups + `}`},
			want: provider.Limits{KeyRetention: 24 * time.Hour, LookupsPerSecond: 50}},
		{name: "a fractional lookup rate", reply: reply{status: 200, body: `{"key_retention_seconds":60,"lookups_per_second":0.5}`},
			want: provider.Limits{KeyRetention: time.Minute, LookupsPerSecond: 0.5}},
		{name: "a hold window", reply: reply{status: 200, body: `{"key_retention_seconds":86400,"hold_window_seconds":604800` + lookups + `}`},
			want: provider.Limits{KeyRetention: 24 * time.Hour, LookupsPerSecond: 50, HoldWindow: 7 * 24 * time.Hour}},
		{name: "hold window negative", reply: reply{status: 200, body: `{"key_retention_seconds":86400,"hold_window_seconds":-1` + lookups + `}`}, wantErr: provider.ContractViolation, wantDetail: "hold_window_seconds -1 is not a duration"},
		{name: "retention missing", reply: reply{status: 200, body: `{"lookups_per_second":50}`}, wantErr: provider.ContractViolation, wantDetail: "key_retention_seconds is missing"},
		{name: "retention null", reply: reply{status: 200, body: `{"key_retention_seconds":null` + lookups + `}`}, wantErr: provider.ContractViolation, wantDetail: "key_retention_seconds is missing"},
		{name: "retention zero", reply: reply{status: 200, body: `{"key_retention_seconds":0` + lookups + `}`}, wantErr: provider.ContractViolation, wantDetail: "key_retention_seconds 0 is not a positive duration"},
		{name: "retention negative", reply: reply{status: 200, body: `{"key_retention_seconds":-60` + lookups + `}`}, wantErr: provider.ContractViolation, wantDetail: "not a positive duration"},
		{name: "retention beyond a duration", reply: reply{status: 200, body: `{"key_retention_seconds":9223372036854775807` + lookups + `}`}, wantErr: provider.ContractViolation, wantDetail: "not a positive duration"},
		{name: "retention fractional", reply: reply{status: 200, body: `{"key_retention_seconds":1.5` + lookups + `}`}, wantErr: provider.ContractViolation, wantDetail: "decoding the answer"},
		{name: "retention a string", reply: reply{status: 200, body: `{"key_retention_seconds":"86400"` + lookups + `}`}, wantErr: provider.ContractViolation, wantDetail: "decoding the answer"},
		{name: "lookup rate missing", reply: reply{status: 200, body: `{"key_retention_seconds":86400}`}, wantErr: provider.ContractViolation, wantDetail: "lookups_per_second is missing"},
		{name: "lookup rate zero", reply: reply{status: 200, body: `{"key_retention_seconds":86400,"lookups_per_second":0}`}, wantErr: provider.ContractViolation, wantDetail: "lookups_per_second 0 is not a positive rate"},
		{name: "lookup rate negative", reply: reply{status: 200, body: `{"key_retention_seconds":86400,"lookups_per_second":-5}`}, wantErr: provider.ContractViolation, wantDetail: "lookups_per_second -5 is not a positive rate"},
		{name: "lookup rate a string", reply: reply{status: 200, body: `{"key_retention_seconds":86400,"lookups_per_second":"50"}`}, wantErr: provider.ContractViolation, wantDetail: "decoding the answer"},
		{name: "not published", reply: reply{status: 404}, wantErr: provider.NotFound, wantDetail: "HTTP 404"},
		{name: "unavailable", reply: reply{status: 503}, wantErr: provider.Unavailable, wantDetail: "HTTP 503"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			paths := make(chan string, 1)
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				paths <- r.Method + " " + r.URL.Path
				tc.reply.ServeHTTP(w, r)
			}))

			got, err := newClient(t, srv.URL).Limits(context.Background())

			require.Equal(t, "GET /v1/idempotency", <-paths)
			require.Equal(t, tc.want, got)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			var perr *provider.Error
			require.ErrorAs(t, err, &perr)
			require.Equal(t, tc.wantErr, perr.Outcome)
			require.Contains(t, perr.Detail, tc.wantDetail)
		})
	}
}
