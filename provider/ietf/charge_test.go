package ietf_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
)

func TestClient_ChargeSendsTheContractRequest(t *testing.T) {
	type seen struct {
		method, path, key, contentType string
		body                           map[string]any
	}
	got := make(chan seen, 1)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		dec := json.NewDecoder(r.Body)
		dec.UseNumber()
		if err := dec.Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- seen{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), r.Header.Get("Content-Type"), body}
		reply{status: http.StatusCreated, body: chargeObject(t, nil)}.ServeHTTP(w, r)
	}))
	req := testCharge()

	res := newClient(t, srv.URL).Charge(context.Background(), req)

	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	s := <-got
	require.Equal(t, http.MethodPost, s.method)
	require.Equal(t, "/v1/charges", s.path)
	require.Equal(t, `"`+testKey+`"`, s.key, "the key goes as a quoted Structured Field String")
	require.Equal(t, "application/json", s.contentType)
	require.Equal(t, map[string]any{
		"amount":             json.Number("54890"),
		"currency":           "TRY",
		"source":             "tok_visa",
		"description":        "Bookstore order 1001",
		"merchant_reference": "bookstore-1001-01a1d96ce23d77bf801e9df969c1d378",
	}, s.body, "exactly the contract's fields, the amount an integer")
}

func TestClient_ChargeKeepsTheBaseURLPathPrefix(t *testing.T) {
	paths := make(chan string, 1)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.Path
		reply{status: http.StatusCreated, body: chargeObject(t, nil)}.ServeHTTP(w, r)
	}))

	res := newClient(t, srv.URL+"/psp/").Charge(context.Background(), testCharge())

	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	require.Equal(t, "/psp/v1/charges", <-paths)
}

func TestClient_ChargeClassifiesEveryResponse(t *testing.T) {
	problem := func(status int, extra string) string {
		return fmt.Sprintf(`{"type":"about:blank","title":%q,"status":%d,"detail":"from the test server"%s}`, http.StatusText(status), status, extra)
	}
	cases := []struct {
		name            string
		reply           reply
		want            provider.Outcome
		wantRetryAfter  time.Duration
		wantReplayed    bool
		wantChargeID    string
		wantDeclineCode string
		wantDetail      string
	}{
		{name: "201 with the requested charge is approved",
			reply: reply{status: 201, body: chargeObject(t, nil)},
			want:  provider.Approved, wantChargeID: "ch_000001"},
		{name: "200 replay is approved and marked replayed",
			reply: reply{status: 200, header: map[string]string{"Idempotent-Replayed": "true"}, body: chargeObject(t, nil)},
			want:  provider.Approved, wantChargeID: "ch_000001", wantReplayed: true},
		{name: "201 for another amount breaks the contract",
			reply: reply{status: 201, body: chargeObject(t, func(m map[string]any) { m["amount"] = 54891 })},
			want:  provider.ContractViolation, wantDetail: "amount 54891 TRY, want 54890 TRY"},
		{name: "201 in another currency breaks the contract",
			reply: reply{status: 201, body: chargeObject(t, func(m map[string]any) { m["currency"] = "EUR" })},
			want:  provider.ContractViolation, wantDetail: "amount 54890 EUR"},
		{name: "201 for another reference breaks the contract",
			reply: reply{status: 201, body: chargeObject(t, func(m map[string]any) { m["merchant_reference"] = "bookstore-1002-x" })},
			want:  provider.ContractViolation, wantDetail: "merchant_reference"},
		{name: "201 under another key breaks the contract",
			reply: reply{status: 201, body: chargeObject(t, func(m map[string]any) { m["idempotency_key"] = "other" })},
			want:  provider.ContractViolation, wantDetail: "idempotency_key"},
		{name: "201 with a failed charge breaks the contract",
			reply: reply{status: 201, body: chargeObject(t, func(m map[string]any) { m["status"] = "failed" })},
			want:  provider.ContractViolation, wantDetail: `status "failed"`},
		{name: "201 without a charge id breaks the contract",
			reply: reply{status: 201, body: chargeObject(t, func(m map[string]any) { delete(m, "id") })},
			want:  provider.ContractViolation, wantDetail: "without an id"},
		{name: "201 with a fractional amount breaks the contract",
			reply: reply{status: 201, body: chargeObject(t, func(m map[string]any) { m["amount"] = 548.90 })},
			want:  provider.ContractViolation, wantDetail: "decoding the charge"},
		{name: "201 that is not JSON breaks the contract",
			reply: reply{status: 201, header: map[string]string{"Content-Type": "text/html"}, body: "<html>ok</html>"},
			want:  provider.ContractViolation, wantDetail: "decoding the charge"},
		{name: "402 is a decline with its code and charge",
			reply: reply{status: 402, body: problem(402, `,"code":"card_declined","decline_code":"do_not_honor","charge_id":"ch_000002"`)},
			want:  provider.Declined, wantChargeID: "ch_000002", wantDeclineCode: "do_not_honor"},
		{name: "402 invalid_source is a decline of a card that cannot be used",
			reply: reply{status: 402, body: problem(402, `,"code":"invalid_source","param":"source"`)},
			want:  provider.Declined, wantDeclineCode: provider.DeclineInvalidPaymentMethod, wantDetail: "from the test server"},
		{name: "402 with another code breaks the contract",
			reply: reply{status: 402, body: problem(402, `,"code":"insufficient_funds"`)},
			want:  provider.ContractViolation, wantDetail: `code "insufficient_funds"`},
		{name: "402 without the failed charge breaks the contract",
			reply: reply{status: 402, body: problem(402, `,"code":"card_declined","decline_code":"do_not_honor"`)},
			want:  provider.ContractViolation, wantDetail: `charge_id ""`},
		{name: "409 is in flight with its Retry-After",
			reply: reply{status: 409, header: map[string]string{"Retry-After": "1"}, body: problem(409, "")},
			want:  provider.InFlight, wantRetryAfter: time.Second, wantDetail: "HTTP 409: Conflict: from the test server"},
		{name: "422 is our contract violation",
			reply: reply{status: 422, body: problem(422, "")},
			want:  provider.ContractViolation, wantDetail: "HTTP 422"},
		{name: "400 is an invalid request",
			reply: reply{status: 400, body: problem(400, "")},
			want:  provider.InvalidRequest, wantDetail: "HTTP 400"},
		{name: "429 is rate limited with its Retry-After",
			reply: reply{status: 429, header: map[string]string{"Retry-After": "7"}},
			want:  provider.RateLimited, wantRetryAfter: 7 * time.Second},
		{name: "500 is unavailable",
			reply: reply{status: 500},
			want:  provider.Unavailable},
		{name: "502 is unavailable",
			reply: reply{status: 502, header: map[string]string{"Content-Type": "text/html"}, body: "<html>bad gateway</html>"},
			want:  provider.Unavailable, wantDetail: "HTTP 502"},
		{name: "503 is unavailable with its Retry-After",
			reply: reply{status: 503, header: map[string]string{"Retry-After": "2"}, body: problem(503, "")},
			want:  provider.Unavailable, wantRetryAfter: 2 * time.Second},
		{name: "504 is unavailable",
			reply: reply{status: 504},
			want:  provider.Unavailable},
		{name: "an absurd Retry-After is capped",
			reply: reply{status: 503, header: map[string]string{"Retry-After": "99999999999999999999"}},
			want:  provider.Unavailable, wantRetryAfter: 5 * time.Minute},
		{name: "an unreadable Retry-After is ignored and noted",
			reply: reply{status: 503, header: map[string]string{"Retry-After": "soon"}},
			want:  provider.Unavailable, wantDetail: `ignored unreadable Retry-After "soon"`},
		{name: "an unexpected status breaks the contract",
			reply: reply{status: 418},
			want:  provider.ContractViolation, wantDetail: "HTTP 418"},
		{name: "501 breaks the contract",
			reply: reply{status: 501},
			want:  provider.ContractViolation, wantDetail: "HTTP 501"},
		{name: "a redirect is not followed and breaks the contract",
			reply: reply{status: 307, header: map[string]string{"Location": "/elsewhere"}},
			want:  provider.ContractViolation, wantDetail: "HTTP 307"},
		{name: "an oversized body breaks the contract",
			reply: reply{status: 201, body: strings.Repeat(" ", 1<<20) + chargeObject(t, nil)},
			want:  provider.ContractViolation, wantDetail: "exceeds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.reply)

			res := newClient(t, srv.URL).Charge(context.Background(), testCharge())

			require.Equal(t, tc.want, res.Outcome, res.Detail)
			require.Equal(t, tc.reply.status, res.StatusCode)
			require.True(t, res.Sent)
			require.Positive(t, res.Duration)
			require.EqualValues(t, 1, srv.hits.Load(), "a redirect or a retry would hit again")
			require.Equal(t, tc.wantRetryAfter, res.RetryAfter)
			require.Equal(t, tc.wantReplayed, res.Replayed)
			require.Equal(t, tc.wantChargeID, res.ChargeID)
			require.Equal(t, tc.wantDeclineCode, res.DeclineCode)
			require.Contains(t, res.Detail, tc.wantDetail)
			if tc.want == provider.Approved {
				req := testCharge()
				require.Equal(t, &provider.Charge{
					ID: "ch_000001", Status: "succeeded", Currency: req.Currency,
					MerchantReference: req.MerchantReference, IdempotencyKey: req.Key,
					Amount: req.Amount, Created: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
				}, res.Charge)
			} else {
				require.Nil(t, res.Charge)
			}
		})
	}
}

func TestClient_ChargeReadsRetryAfterAsAnHTTPDate(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(30*time.Second).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusTooManyRequests)
	}))

	res := newClient(t, srv.URL).Charge(context.Background(), testCharge())

	require.Equal(t, provider.RateLimited, res.Outcome)
	// An HTTP-date has whole seconds, so up to a second is lost to rounding.
	require.Greater(t, res.RetryAfter, 28*time.Second)
	require.LessOrEqual(t, res.RetryAfter, 30*time.Second)
}

func TestClient_ChargeWithoutAnAnswerIsUnknown(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		client  *http.Client
		ctx     func() (context.Context, context.CancelFunc)
		want    provider.Outcome
	}{
		{name: "the caller's deadline passes",
			handler: blockUntilClientGivesUp,
			client:  &http.Client{Timeout: 5 * time.Second},
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 50*time.Millisecond)
			},
			want: provider.Timeout},
		{name: "the HTTP client's timeout passes",
			handler: blockUntilClientGivesUp,
			client:  &http.Client{Timeout: 50 * time.Millisecond},
			ctx:     func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			want:    provider.Timeout},
		{name: "the connection closes without an answer",
			handler: dropConnection,
			client:  &http.Client{Timeout: 5 * time.Second},
			ctx:     func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			want:    provider.TransportError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handler)
			c := newClient(t, srv.URL, func(cfg *testConfig) { cfg.HTTPClient = tc.client })
			ctx, cancel := tc.ctx()
			defer cancel()

			res := c.Charge(ctx, testCharge())

			require.Equal(t, tc.want, res.Outcome, res.Detail)
			require.True(t, tc.want.Retryable())
			require.True(t, res.Sent, "the request went out, so a charge may exist")
			require.Zero(t, res.StatusCode)
			require.Positive(t, res.Duration)
			require.NotEmpty(t, res.Detail)
			require.EqualValues(t, 1, srv.hits.Load())
		})
	}
}

func TestClient_ChargeWhileTheBodyIsCutShortIsUnknown(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "500")
		w.WriteHeader(http.StatusCreated)
		// Fewer bytes than promised: the server closes the connection.
		_, _ = io.WriteString(w, `{"id":"ch_000001",`)
	}))

	res := newClient(t, srv.URL).Charge(context.Background(), testCharge())

	require.Equal(t, provider.TransportError, res.Outcome, res.Detail)
	require.Equal(t, http.StatusCreated, res.StatusCode, "the status arrived, the charge did not")
	require.Contains(t, res.Detail, "reading the response")
}

func TestClient_ChargeAfterTheContextEndedSendsNothing(t *testing.T) {
	srv := newServer(t, reply{status: http.StatusCreated, body: chargeObject(t, nil)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	res := newClient(t, srv.URL).Charge(ctx, testCharge())

	require.Equal(t, provider.Timeout, res.Outcome)
	require.False(t, res.Sent)
	require.Zero(t, srv.hits.Load())
}

func TestClient_ChargeRefusesABadRequestWithoutSending(t *testing.T) {
	cases := []struct {
		name   string
		change func(*provider.ChargeRequest)
		detail string
	}{
		{"empty key", func(r *provider.ChargeRequest) { r.Key = "" }, "idempotency key is empty"},
		{"key too long", func(r *provider.ChargeRequest) { r.Key = strings.Repeat("k", 256) }, "more than 255"},
		{"key not printable ASCII", func(r *provider.ChargeRequest) { r.Key = "clé" }, "not a Structured Field String"},
		{"key with a newline", func(r *provider.ChargeRequest) { r.Key = "a\nb" }, "not a Structured Field String"},
		{"zero amount", func(r *provider.ChargeRequest) { r.Amount = 0 }, "not positive"},
		{"negative amount", func(r *provider.ChargeRequest) { r.Amount = -1 }, "not positive"},
		{"unknown currency", func(r *provider.ChargeRequest) { r.Currency = "ABC" }, "not an ISO 4217 currency"},
		{"lower-case currency", func(r *provider.ChargeRequest) { r.Currency = "try" }, "upper-case"},
		{"no source", func(r *provider.ChargeRequest) { r.Source = "" }, "source"},
		{"no merchant reference", func(r *provider.ChargeRequest) { r.MerchantReference = "" }, "merchant reference"},
	}
	srv := newServer(t, reply{status: http.StatusCreated, body: chargeObject(t, nil)})
	c := newClient(t, srv.URL)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := testCharge()
			tc.change(&req)

			res := c.Charge(context.Background(), req)

			require.Equal(t, provider.InvalidRequest, res.Outcome)
			require.False(t, res.Outcome.Retryable())
			require.False(t, res.Sent)
			require.Contains(t, res.Detail, tc.detail)
		})
	}
	require.Zero(t, srv.hits.Load())
}

func TestClient_ChargeEscapesAQuoteInTheKey(t *testing.T) {
	keys := make(chan string, 1)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Idempotency-Key")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	req := testCharge()
	req.Key = `a"b\c`

	res := newClient(t, srv.URL).Charge(context.Background(), req)

	require.Equal(t, provider.Unavailable, res.Outcome)
	require.Equal(t, `"a\"b\\c"`, <-keys)
}
