package ietf

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		value  string
		want   time.Duration
		wantOK bool
	}{
		{"0", 0, true},
		{"1", time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"300", 5 * time.Minute, true},
		{"301", provider.MaxRetryAfter, true},
		{"99999999999999999999999", provider.MaxRetryAfter, true},
		{"Mon, 30 Nov 2026 10:00:42 GMT", 42 * time.Second, true},
		{"Monday, 30-Nov-26 10:00:42 GMT", 42 * time.Second, true},
		{"Mon Nov 30 10:00:42 2026", 42 * time.Second, true},
		{"Mon, 30 Nov 2026 09:00:00 GMT", 0, true},
		{"Tue, 01 Dec 2026 10:00:00 GMT", provider.MaxRetryAfter, true},
		{"", 0, false},
		{"-1", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"2026-11-30T10:00:42Z", 0, false},
	}
	for _, tc := range cases {
		got, ok := parseRetryAfter(tc.value, now)
		require.Equal(t, tc.wantOK, ok, "%q", tc.value)
		require.Equal(t, tc.want, got, "%q", tc.value)
	}
}

func BenchmarkClassifyCharge(b *testing.B) {
	req := provider.ChargeRequest{
		Key: "01a1d96c-e23d-77bf-801e-9df969c1d378", Amount: 54890, Currency: "TRY", Source: "tok_visa",
		Description: "Bookstore order 1001", MerchantReference: "bookstore-1001-01a1d96ce23d77bf801e9df969c1d378",
	}
	json := http.Header{"Content-Type": {"application/json"}}
	cases := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   provider.Outcome
	}{
		{"approved", 201, json, `{"id":"ch_000001","object":"charge","amount":54890,"currency":"TRY","status":"succeeded",` +
			`"merchant_reference":"bookstore-1001-01a1d96ce23d77bf801e9df969c1d378",` +
			`"idempotency_key":"01a1d96c-e23d-77bf-801e-9df969c1d378","created":"2026-11-30T10:00:00Z"}`, provider.Approved},
		{"declined", 402, json, `{"type":"about:blank","title":"Payment Required","status":402,"detail":"The card was declined.",` +
			`"code":"card_declined","decline_code":"do_not_honor","charge_id":"ch_000002"}`, provider.Declined},
		{"in_flight", 409, http.Header{"Retry-After": {"1"}}, `{"title":"Conflict","status":409}`, provider.InFlight},
		{"unavailable", 503, http.Header{}, ``, provider.Unavailable},
	}
	now := time.Now()
	for _, tc := range cases {
		body := []byte(tc.body)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := classifyCharge(req, tc.status, tc.header, body, now); r.Outcome != tc.want {
					b.Fatalf("outcome %s, want %s: %s", r.Outcome, tc.want, r.Detail)
				}
			}
		})
	}
}
