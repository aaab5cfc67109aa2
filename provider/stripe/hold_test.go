package stripe_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
)

// captureBefore is the capture_before of the holds of these tests.
const captureBefore = 1765188000

// heldIntent is a PaymentIntent of testCharge created with
// capture_method=manual, in the given status, with its latest charge
// expanded and extra members appended.
func heldIntent(status string, received int64, extra string) string {
	req := testCharge()
	return fmt.Sprintf(`{"id":"pi_000001","object":"payment_intent","amount":%d,"amount_received":%d,"currency":"try","status":%q,`+
		`"capture_method":"manual","created":1764583200,"metadata":{"merchant_reference":%q},`+
		`"latest_charge":{"id":"ch_1","object":"charge","payment_method_details":{"type":"card","card":{"capture_before":%d}}}%s}`,
		req.Amount, received, status, req.MerchantReference, captureBefore, extra)
}

func testCapture() provider.CaptureRequest {
	return provider.CaptureRequest{Key: "capture-key", ChargeID: "pi_000001", Amount: 50000, Currency: "TRY"}
}

// paths records the method and path of each request before h answers it.
func paths(h http.Handler) (http.Handler, <-chan string) {
	seen := make(chan string, 1)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Method + " " + r.URL.Path
		h.ServeHTTP(w, r)
	}), seen
}

func TestClient_HoldIsAManualCapturePaymentIntent(t *testing.T) {
	srv := newServer(t, reply{status: 200, body: heldIntent("requires_capture", 0, "")})
	req := testCharge()
	req.Hold = true

	res := newClient(t, srv.URL).Charge(context.Background(), req)

	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	require.Equal(t, provider.StatusAuthorized, res.Charge.Status)
	require.Zero(t, res.Charge.AmountCaptured)
	require.Equal(t, time.Unix(captureBefore, 0).UTC(), res.Charge.CaptureBefore)
	form := *srv.form.Load()
	require.Equal(t, "manual", form.Get("capture_method"))
	require.Equal(t, "latest_charge", form.Get("expand[0]"), "the card's capture_before is on the charge")
	require.Equal(t, "true", form.Get("confirm"))
}

func TestClient_ChargeCapturedAtOnceIsNoHold(t *testing.T) {
	srv := newServer(t, reply{status: 200, body: heldIntent("requires_capture", 0, "")})

	res := newClient(t, srv.URL).Charge(context.Background(), testCharge())

	require.Equal(t, provider.ContractViolation, res.Outcome, "an authorization is not the charge asked for")
	require.False(t, srv.form.Load().Has("capture_method"))
	require.False(t, srv.form.Load().Has("expand[0]"))
}

func TestClient_CaptureAndVoidSendStripesRequests(t *testing.T) {
	t.Run("capture", func(t *testing.T) {
		h, seen := paths(reply{status: 200, body: heldIntent("succeeded", 50000, "")})
		srv := newServer(t, h)

		res := newClient(t, srv.URL).Capture(context.Background(), testCapture())

		require.Equal(t, provider.Approved, res.Outcome, res.Detail)
		require.Equal(t, provider.StatusSucceeded, res.Charge.Status)
		require.Equal(t, int64(50000), res.Charge.AmountCaptured)
		require.Equal(t, "POST /v1/payment_intents/pi_000001/capture", <-seen)
		form := *srv.form.Load()
		require.Equal(t, "50000", form.Get("amount_to_capture"))
		require.Equal(t, "latest_charge", form.Get("expand[0]"))
		require.False(t, form.Has("currency"), "the currency is the PaymentIntent's")
		require.Equal(t, "capture-key", *srv.key.Load())
	})
	t.Run("void", func(t *testing.T) {
		h, seen := paths(reply{status: 200, body: heldIntent("canceled", 0, `,"cancellation_reason":"requested_by_customer"`)})
		srv := newServer(t, h)

		res := newClient(t, srv.URL).Void(context.Background(), provider.VoidRequest{Key: "void-key", ChargeID: "pi_000001"})

		require.Equal(t, provider.Approved, res.Outcome, res.Detail)
		require.Equal(t, provider.StatusVoided, res.Charge.Status)
		require.Equal(t, "POST /v1/payment_intents/pi_000001/cancel", <-seen)
		require.Equal(t, "void-key", *srv.key.Load())
	})
}

func TestClient_CaptureMapsStripesAnswersToOutcomes(t *testing.T) {
	unexpected := func(status, captureMethod, reason string) string {
		return fmt.Sprintf(`{"error":{"type":"invalid_request_error","code":"payment_intent_unexpected_state","message":"from the test server",`+
			`"payment_intent":{"id":"pi_000001","object":"payment_intent","status":%q,"capture_method":%q,"cancellation_reason":%q}}}`, status, captureMethod, reason)
	}
	cases := []struct {
		name    string
		reply   reply
		want    provider.Outcome
		decline string
		notProc bool
	}{
		{name: "succeeded with the amount received", reply: reply{status: 200, body: heldIntent("succeeded", 50000, "")}, want: provider.Approved},
		{name: "replayed", reply: reply{status: 200, header: map[string]string{"Idempotent-Replayed": "true"}, body: heldIntent("succeeded", 50000, "")}, want: provider.Approved},
		{name: "another amount received", reply: reply{status: 200, body: heldIntent("succeeded", 54890, "")}, want: provider.ContractViolation},
		{name: "still requires capture", reply: reply{status: 200, body: heldIntent("requires_capture", 0, "")}, want: provider.ContractViolation},
		{name: "another PaymentIntent", reply: reply{status: 200, body: strings.Replace(heldIntent("succeeded", 50000, ""), "pi_000001", "pi_000002", 1)}, want: provider.ContractViolation},
		{name: "amount_too_large", reply: reply{status: 400, body: `{"error":{"type":"invalid_request_error","code":"amount_too_large","param":"amount_to_capture"}}`},
			want: provider.Declined, decline: provider.DeclineAmountTooLarge},
		{name: "a hold canceled by Stripe expired", reply: reply{status: 400, body: unexpected("canceled", "manual", "automatic")},
			want: provider.Declined, decline: provider.DeclineHoldExpired},
		{name: "a hold canceled by us was voided", reply: reply{status: 400, body: unexpected("canceled", "manual", "requested_by_customer")},
			want: provider.Declined, decline: provider.DeclineHoldVoided},
		{name: "a hold succeeded was captured", reply: reply{status: 400, body: unexpected("succeeded", "manual", "")},
			want: provider.Declined, decline: provider.DeclineHoldCaptured},
		{name: "a payment captured at once is no hold", reply: reply{status: 400, body: unexpected("succeeded", "automatic", "")},
			want: provider.Declined, decline: provider.DeclineNotAHold},
		{name: "a declined payment is no hold", reply: reply{status: 400, body: unexpected("requires_payment_method", "manual", "")},
			want: provider.Declined, decline: provider.DeclineNotAHold},
		{name: "unexpected state without the PaymentIntent is our bug", reply: reply{status: 400, body: `{"error":{"type":"invalid_request_error","code":"payment_intent_unexpected_state"}}`},
			want: provider.InvalidRequest, notProc: true},
		{name: "no such PaymentIntent", reply: reply{status: 404, body: `{"error":{"type":"invalid_request_error","code":"resource_missing","param":"intent"}}`},
			want: provider.NotFound},
		{name: "409 key in use", reply: reply{status: 409, body: `{"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}}`},
			want: provider.InFlight},
		{name: "400 key reused", reply: reply{status: 400, body: `{"error":{"type":"idempotency_error"}}`},
			want: provider.ContractViolation},
		{name: "429", reply: reply{status: 429, body: `{"error":{"type":"invalid_request_error","code":"rate_limit"}}`},
			want: provider.RateLimited, notProc: true},
		{name: "500 may hide a capture", reply: reply{status: 500, body: `{"error":{"type":"api_error"}}`},
			want: provider.Unavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.reply)

			res := newClient(t, srv.URL).Capture(context.Background(), testCapture())

			require.Equal(t, tc.want, res.Outcome, res.Detail)
			require.Equal(t, tc.reply.status, res.StatusCode)
			require.True(t, res.Sent)
			require.Equal(t, tc.decline, res.DeclineCode)
			require.Equal(t, tc.notProc, res.NotProcessed())
			require.Equal(t, tc.want == provider.Approved, res.Charge != nil)
			require.EqualValues(t, 1, srv.hits.Load(), "one request, no retries by the library")
		})
	}
}

func TestClient_VoidIsApprovedOnlyWhenWeCanceledTheHold(t *testing.T) {
	cases := []struct {
		name string
		body string
		want provider.Outcome
	}{
		{"canceled as requested", heldIntent("canceled", 0, `,"cancellation_reason":"requested_by_customer"`), provider.Approved},
		{"canceled without a reason", heldIntent("canceled", 0, ""), provider.Approved},
		{"expired instead", heldIntent("canceled", 0, `,"cancellation_reason":"automatic"`), provider.ContractViolation},
		{"still authorized", heldIntent("requires_capture", 0, ""), provider.ContractViolation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, reply{status: 200, body: tc.body})

			res := newClient(t, srv.URL).Void(context.Background(), provider.VoidRequest{Key: "void-key", ChargeID: "pi_000001"})

			require.Equal(t, tc.want, res.Outcome, res.Detail)
		})
	}
}

func TestClient_CaptureAndVoidRefuseABadRequestWithoutSending(t *testing.T) {
	srv := newServer(t, reply{status: 200, body: heldIntent("succeeded", 50000, "")})
	c := newClient(t, srv.URL)
	for _, change := range []func(*provider.CaptureRequest){
		func(r *provider.CaptureRequest) { r.ChargeID = "" },
		func(r *provider.CaptureRequest) { r.ChargeID = "pi_1/cancel" },
		func(r *provider.CaptureRequest) { r.ChargeID = strings.Repeat("p", 256) },
		func(r *provider.CaptureRequest) { r.Key = "" },
		func(r *provider.CaptureRequest) { r.Amount = -1 },
	} {
		req := testCapture()
		change(&req)
		res := c.Capture(context.Background(), req)
		require.Equal(t, provider.InvalidRequest, res.Outcome, res.Detail)
		require.False(t, res.Sent)
	}
	for _, req := range []provider.VoidRequest{{Key: "k"}, {Key: "k", ChargeID: "pi_1?x"}, {ChargeID: "pi_1"}} {
		res := c.Void(context.Background(), req)
		require.Equal(t, provider.InvalidRequest, res.Outcome, res.Detail)
		require.False(t, res.Sent)
	}
	require.Zero(t, srv.hits.Load())
}

func TestClient_GetChargeRetrievesThePaymentIntent(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		status string
	}{
		{"authorized", heldIntent("requires_capture", 0, ""), provider.StatusAuthorized},
		{"captured", heldIntent("succeeded", 50000, ""), provider.StatusSucceeded},
		{"voided", heldIntent("canceled", 0, `,"cancellation_reason":"requested_by_customer"`), provider.StatusVoided},
		{"expired", heldIntent("canceled", 0, `,"cancellation_reason":"automatic"`), provider.StatusExpired},
		{"a payment captured at once and canceled", paymentIntent("canceled"), provider.StatusFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, seen := paths(reply{status: 200, body: tc.body})
			srv := newServer(t, h)

			ch, err := newClient(t, srv.URL).GetCharge(context.Background(), "pi_000001")

			require.NoError(t, err)
			require.Equal(t, tc.status, ch.Status)
			require.Equal(t, "GET /v1/payment_intents/pi_000001", <-seen)
			require.Equal(t, "latest_charge", srv.form.Load().Get("expand[0]"))
		})
	}
}

func TestClient_GetChargeFailures(t *testing.T) {
	cases := []struct {
		name  string
		id    string
		reply reply
		want  provider.Outcome
	}{
		{"no such PaymentIntent", "pi_000001", reply{status: 404, body: `{"error":{"type":"invalid_request_error","code":"resource_missing"}}`}, provider.NotFound},
		{"another PaymentIntent", "pi_000002", reply{status: 200, body: heldIntent("requires_capture", 0, "")}, provider.ContractViolation},
		{"still processing", "pi_000001", reply{status: 200, body: paymentIntent("processing")}, provider.InFlight},
		{"an id that is no path segment", "pi_1/capture", reply{}, provider.InvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.reply)

			_, err := newClient(t, srv.URL).GetCharge(context.Background(), tc.id)

			var perr *provider.Error
			require.ErrorAs(t, err, &perr)
			require.Equal(t, tc.want, perr.Outcome, perr.Detail)
			require.Equal(t, "get charge", perr.Op)
		})
	}
}
