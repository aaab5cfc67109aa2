package stripe_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
	"chargeonce/provider/stripe"
)

func testCharge() provider.ChargeRequest {
	return provider.ChargeRequest{
		Key:               "01a1d96c-e23d-77bf-801e-9df969c1d378",
		Amount:            54890,
		Currency:          "TRY",
		Source:            "pm_card_visa",
		Description:       "Bookstore order 1001",
		MerchantReference: "bookstore-1001-01a1d96ce23d77bf801e9df969c1d378",
	}
}

// paymentIntent is a PaymentIntent of testCharge in the given status.
func paymentIntent(status string) string {
	req := testCharge()
	return fmt.Sprintf(`{"id":"pi_000001","object":"payment_intent","amount":%d,"currency":"try","status":%q,`+
		`"created":1764583200,"metadata":{"merchant_reference":%q}}`, req.Amount, status, req.MerchantReference)
}

// reply is a canned answer of a test server.
type reply struct {
	status int
	header map[string]string
	body   string
}

// server is a Stripe stand-in that answers with rp and keeps the last form
// it received.
type server struct {
	*httptest.Server
	hits atomic.Int64
	form atomic.Pointer[url.Values]
	key  atomic.Pointer[string]
}

func newServer(t testing.TB, h http.Handler) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		require.NoError(t, r.ParseForm())
		s.form.Store(&r.Form)
		key := r.Header.Get("Idempotency-Key")
		s.key.Store(&key)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (rp reply) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rp.status)
	_, _ = io.WriteString(w, rp.body)
}

func newClient(t testing.TB, baseURL string) *stripe.Client {
	t.Helper()
	c, err := stripe.New(stripe.Config{APIKey: "sk_test_123", BaseURL: baseURL, HTTPClient: &http.Client{Timeout: 300 * time.Millisecond}})
	require.NoError(t, err)
	return c
}

func TestClient_ChargeSendsAConfirmedPaymentIntentUnderTheKey(t *testing.T) {
	srv := newServer(t, reply{status: http.StatusOK, body: paymentIntent("succeeded")})

	res := newClient(t, srv.URL).Charge(context.Background(), testCharge())

	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	require.Equal(t, "pi_000001", res.ChargeID)
	form := *srv.form.Load()
	require.Equal(t, "54890", form.Get("amount"))
	require.Equal(t, "try", form.Get("currency"))
	require.Equal(t, "true", form.Get("confirm"))
	require.Equal(t, "pm_card_visa", form.Get("payment_method"))
	require.Equal(t, testCharge().MerchantReference, form.Get("metadata[merchant_reference]"))
	require.Equal(t, "Bookstore order 1001", form.Get("description"))
	require.Equal(t, testCharge().Key, *srv.key.Load())
}

func TestClient_ChargeMapsStripesAnswersToOutcomes(t *testing.T) {
	cardError := `{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","message":"Your card has insufficient funds.",` +
		`"payment_intent":{"id":"pi_000002","object":"payment_intent","status":"requires_payment_method"}}}`
	expired := `{"error":{"type":"card_error","code":"expired_card","message":"Your card has expired.","payment_intent":{"id":"pi_000003"}}}`
	cases := []struct {
		name     string
		reply    reply
		want     provider.Outcome
		refused  bool
		replayed bool
		decline  string
	}{
		{"succeeded", reply{status: 200, body: paymentIntent("succeeded")}, provider.Approved, false, false, ""},
		{"replayed", reply{status: 200, header: map[string]string{"Idempotent-Replayed": "true"}, body: paymentIntent("succeeded")}, provider.Approved, false, true, ""},
		{"another amount", reply{status: 200, body: `{"id":"pi_1","status":"succeeded","amount":1,"currency":"try","metadata":{"merchant_reference":"` + testCharge().MerchantReference + `"}}`}, provider.ContractViolation, false, false, ""},
		{"requires action", reply{status: 200, body: paymentIntent("requires_action")}, provider.ContractViolation, false, false, ""},
		{"402 declined", reply{status: 402, body: cardError}, provider.Declined, false, false, "insufficient_funds"},
		{"402 without a decline code", reply{status: 402, body: expired}, provider.Declined, false, false, "expired_card"},
		{"402 without a payment intent", reply{status: 402, body: `{"error":{"type":"card_error","code":"card_declined","decline_code":"generic_decline"}}`}, provider.Declined, false, false, "generic_decline"},
		{"card error on a card Stripe could not read", reply{status: 402, body: `{"error":{"type":"card_error","code":"incorrect_number","param":"number"}}`}, provider.Declined, false, false, "incorrect_number"},
		{"card error without a code", reply{status: 402, body: `{"error":{"type":"card_error","message":"Your card was declined."}}`}, provider.Declined, false, false, "card_declined"},
		{"400 no such payment method", reply{status: 400, body: `{"error":{"type":"invalid_request_error","code":"resource_missing","param":"payment_method","message":"No such PaymentMethod: 'visa'"}}`}, provider.Declined, true, false, provider.DeclineInvalidPaymentMethod},
		{"400 resource missing on another parameter", reply{status: 400, body: `{"error":{"type":"invalid_request_error","code":"resource_missing","param":"customer","message":"No such customer: 'cus_1'"}}`}, provider.InvalidRequest, true, false, ""},
		{"409 key in use", reply{status: 409, body: `{"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}}`}, provider.InFlight, false, false, ""},
		{"400 key reused", reply{status: 400, body: `{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters they were first used with."}}`}, provider.ContractViolation, false, false, ""},
		{"400 invalid", reply{status: 400, body: `{"error":{"type":"invalid_request_error","code":"parameter_missing","param":"amount"}}`}, provider.InvalidRequest, true, false, ""},
		{"401 bad key", reply{status: 401, body: `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided"}}`}, provider.InvalidRequest, true, false, ""},
		{"429", reply{status: 429, body: `{"error":{"type":"invalid_request_error","code":"rate_limit"}}`}, provider.RateLimited, true, false, ""},
		{"500", reply{status: 500, body: `{"error":{"type":"api_error","message":"An unknown error occurred"}}`}, provider.Unavailable, false, false, ""},
		{"502 from a gateway", reply{status: 502, body: `<html>bad gateway</html>`}, provider.Unavailable, false, false, ""},
		{"200 unreadable", reply{status: 200, body: `{"id":`}, provider.ContractViolation, false, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.reply)

			res := newClient(t, srv.URL).Charge(context.Background(), testCharge())

			require.Equal(t, tc.want, res.Outcome, res.Detail)
			require.Equal(t, tc.reply.status, res.StatusCode)
			require.True(t, res.Sent)
			require.Equal(t, tc.refused, res.NotProcessed(), "not processed")
			require.Equal(t, tc.replayed, res.Replayed)
			require.Equal(t, tc.decline, res.DeclineCode)
			require.EqualValues(t, 1, srv.hits.Load(), "one request, no retries by the library")
		})
	}
}

// TestClient_ChargeReadsTheProvidersTroubleFromEitherCode covers the card
// errors the fake provider does not send: Stripe names a processing error
// in the error's code, with no decline code, and a card error's code
// without a decline code is otherwise the card's.
func TestClient_ChargeReadsTheProvidersTroubleFromEitherCode(t *testing.T) {
	cases := []struct {
		name, body, decline string
		trouble             bool
	}{
		{"processing_error as the error code", `{"error":{"type":"card_error","code":"processing_error","message":"An error occurred while processing your card.","payment_intent":{"id":"pi_000004"}}}`, "processing_error", true},
		{"reenter_transaction as the decline code", `{"error":{"type":"card_error","code":"card_declined","decline_code":"reenter_transaction"}}`, "reenter_transaction", true},
		{"expired_card as the error code", `{"error":{"type":"card_error","code":"expired_card","message":"Your card has expired."}}`, "expired_card", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, reply{status: 402, body: tc.body})

			res := newClient(t, srv.URL).Charge(context.Background(), testCharge())

			require.Equal(t, provider.Declined, res.Outcome, res.Detail)
			require.Equal(t, tc.decline, res.DeclineCode)
			require.Equal(t, tc.trouble, res.ProviderTrouble)
		})
	}
}

func TestClient_ChargeWithoutAnAnswerIsUnknownAndARefusedConnectionSentNothing(t *testing.T) {
	blocking := newServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	res := newClient(t, blocking.URL).Charge(context.Background(), testCharge())
	require.Equal(t, provider.Timeout, res.Outcome, res.Detail)
	require.True(t, res.Sent)
	require.False(t, res.NotProcessed())
	require.EqualValues(t, 1, blocking.hits.Load())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	res = newClient(t, refused).Charge(context.Background(), testCharge())
	require.Equal(t, provider.TransportError, res.Outcome, res.Detail)
	require.False(t, res.Sent)
	require.True(t, res.NotProcessed())
}

func TestClient_ChargeRefusesABadRequestWithoutSending(t *testing.T) {
	srv := newServer(t, reply{status: 200, body: paymentIntent("succeeded")})
	for _, change := range []func(*provider.ChargeRequest){
		func(r *provider.ChargeRequest) { r.Key = "" },
		func(r *provider.ChargeRequest) { r.Source = "" },
		func(r *provider.ChargeRequest) { r.MerchantReference = "" },
		func(r *provider.ChargeRequest) { r.Currency = "XXX1" },
	} {
		req := testCharge()
		change(&req)
		res := newClient(t, srv.URL).Charge(context.Background(), req)
		require.Equal(t, provider.InvalidRequest, res.Outcome)
		require.False(t, res.Sent)
	}
	require.Zero(t, srv.hits.Load())
}

func TestNew_RefusesABadConfig(t *testing.T) {
	hc := &http.Client{Timeout: time.Second}
	cases := []struct {
		name string
		cfg  stripe.Config
		want string
	}{
		{"no key", stripe.Config{HTTPClient: hc}, "sk_test_… or sk_live_…"},
		{"publishable key", stripe.Config{APIKey: "pk_test_123", HTTPClient: hc}, "must be a secret key"},
		{"no HTTP client", stripe.Config{APIKey: "sk_test_123"}, "HTTPClient is nil"},
		{"bad URL", stripe.Config{APIKey: "sk_test_123", HTTPClient: hc, BaseURL: "ftp://x"}, "scheme must be http or https"},
		{"negative delay", stripe.Config{APIKey: "sk_test_123", HTTPClient: hc, LookupDelay: -time.Second}, "LookupDelay -1s is negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := stripe.New(tc.cfg)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, c)
		})
	}
}

func TestClient_LimitsAreStripesDocumentedOnes(t *testing.T) {
	c, err := stripe.New(stripe.Config{APIKey: "sk_live_123", HTTPClient: &http.Client{Timeout: time.Second}, LookupDelay: stripe.SearchDelay})
	require.NoError(t, err)

	limits, err := c.Limits(context.Background())

	require.NoError(t, err)
	require.Equal(t, provider.Limits{KeyRetention: 24 * time.Hour, LookupsPerSecond: stripe.DefaultLookupsPerSecond, LookupDelay: time.Minute, HoldWindow: 7 * 24 * time.Hour}, limits)
}

func TestClient_FindChargesSearchesTheMetadata(t *testing.T) {
	ref := testCharge().MerchantReference
	list := `{"object":"search_result","has_more":false,"data":[` +
		`{"id":"pi_2","object":"payment_intent","amount":54890,"currency":"try","status":"succeeded","created":1764583300,"metadata":{"merchant_reference":"` + ref + `"}},` +
		`{"id":"pi_1","object":"payment_intent","amount":54890,"currency":"try","status":"requires_payment_method","created":1764583200,"metadata":{"merchant_reference":"` + ref + `"}}]}`
	srv := newServer(t, reply{status: 200, body: list})

	charges, err := newClient(t, srv.URL).FindCharges(context.Background(), ref)

	require.NoError(t, err)
	require.Equal(t, "metadata['merchant_reference']:'"+ref+"'", srv.form.Load().Get("query"))
	require.Len(t, charges, 2)
	require.Equal(t, "pi_1", charges[0].ID, "oldest first")
	require.Equal(t, provider.StatusFailed, charges[0].Status)
	require.Equal(t, "pi_2", charges[1].ID)
	require.True(t, charges[1].Succeeded())
	require.Equal(t, "TRY", charges[1].Currency)
}

func TestClient_FindChargesClassifiesFailures(t *testing.T) {
	ref := testCharge().MerchantReference
	cases := []struct {
		name  string
		reply reply
		want  provider.Outcome
	}{
		{"processing", reply{status: 200, body: `{"data":[{"id":"pi_1","amount":1,"currency":"try","status":"processing","metadata":{"merchant_reference":"` + ref + `"}}]}`}, provider.InFlight},
		{"another reference", reply{status: 200, body: `{"data":[{"id":"pi_1","amount":1,"currency":"try","status":"succeeded","metadata":{"merchant_reference":"other"}}]}`}, provider.ContractViolation},
		{"429", reply{status: 429, body: `{"error":{"type":"invalid_request_error","code":"rate_limit"}}`}, provider.RateLimited},
		{"503", reply{status: 503, body: `{"error":{"type":"api_error"}}`}, provider.Unavailable},
		{"400", reply{status: 400, body: `{"error":{"type":"invalid_request_error","message":"bad query"}}`}, provider.InvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.reply)

			_, err := newClient(t, srv.URL).FindCharges(context.Background(), ref)

			var perr *provider.Error
			require.ErrorAs(t, err, &perr)
			require.Equal(t, tc.want, perr.Outcome, perr.Detail)
		})
	}
}
