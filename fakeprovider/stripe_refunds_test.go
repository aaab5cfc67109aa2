package fakeprovider

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	stripeapi "github.com/stripe/stripe-go/v84"
)

// stripeRefundForm is a valid refund of pi, with changes applied.
func stripeRefundForm(pi string, change func(url.Values)) string {
	form := url.Values{
		"payment_intent":               {pi},
		"amount":                       {"1250"},
		"reason":                       {"requested_by_customer"},
		"metadata[merchant_reference]": {"shop-refund-1"},
	}
	if change != nil {
		change(form)
	}
	return form.Encode()
}

func postStripeRefundCall(key, body string) call {
	return call{method: http.MethodPost, path: refundPath, key: key, body: body, contentType: "application/x-www-form-urlencoded", auth: stripeAuth}
}

// paidIntent makes a succeeded PaymentIntent of 54890 and returns its id.
func paidIntent(t *testing.T, f *fixture, key string) string {
	t.Helper()
	r := f.do(t, postIntent(key, stripeForm(nil)))
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	return decode[paymentIntent](t, r).ID
}

// stripeClient is stripe-go pointed at the fixture, as provider/stripe
// builds it, so that the fake is checked against the library's decoding.
func stripeClient(f *fixture) *stripeapi.Client {
	backend := stripeapi.GetBackendWithConfig(stripeapi.APIBackend, &stripeapi.BackendConfig{
		URL:               stripeapi.String(f.url),
		HTTPClient:        f.client,
		MaxNetworkRetries: stripeapi.Int64(0),
		LeveledLogger:     &stripeapi.LeveledLogger{Level: stripeapi.LevelNull},
	})
	return stripeapi.NewClient(StripeTestKey, stripeapi.WithBackends(&stripeapi.Backends{
		API: backend, Connect: backend, Uploads: backend, MeterEvents: backend,
	}))
}

func TestStripeRefunds_ThroughStripeGo(t *testing.T) {
	f := newFixture(t, Config{})
	api := stripeClient(f)
	ctx := context.Background()
	pi := paidIntent(t, f, "pi-key")
	params := &stripeapi.RefundCreateParams{
		PaymentIntent: stripeapi.String(pi),
		Amount:        stripeapi.Int64(20000),
		Reason:        stripeapi.String("requested_by_customer"),
		Metadata:      map[string]string{"merchant_reference": "shop-refund-1"},
	}
	params.SetIdempotencyKey("refund-key-1")

	refund, err := api.V1Refunds.Create(ctx, params)

	require.NoError(t, err)
	require.Equal(t, "re_000001", refund.ID)
	require.Equal(t, stripeapi.RefundStatusSucceeded, refund.Status)
	require.Equal(t, int64(20000), refund.Amount)
	require.Equal(t, stripeapi.Currency("try"), refund.Currency)
	require.Equal(t, pi, refund.PaymentIntent.ID)
	require.Equal(t, "shop-refund-1", refund.Metadata["merchant_reference"])
	require.Equal(t, f.clock.Now().Unix(), refund.Created)

	again, err := api.V1Refunds.Create(ctx, params)
	require.NoError(t, err)
	require.Equal(t, refund.ID, again.ID, "the same key is the same refund")

	params.Amount = stripeapi.Int64(40000)
	params.SetIdempotencyKey("refund-key-2")
	_, err = api.V1Refunds.Create(ctx, params)
	var stripeErr *stripeapi.Error
	require.True(t, errors.As(err, &stripeErr), "err: %v", err)
	require.Equal(t, http.StatusBadRequest, stripeErr.HTTPStatusCode)
	require.Equal(t, stripeapi.ErrorTypeInvalidRequest, stripeErr.Type)
	require.Equal(t, stripeapi.ErrorCodeAmountTooLarge, stripeErr.Code)

	f.p.HoldRefunds(true)
	params.Amount = stripeapi.Int64(34890)
	params.Metadata = map[string]string{"merchant_reference": "shop-refund-2"}
	params.SetIdempotencyKey("refund-key-3")
	pending, err := api.V1Refunds.Create(ctx, params)
	require.NoError(t, err)
	require.Equal(t, stripeapi.RefundStatusPending, pending.Status)
	_, err = f.p.SettleRefund(pending.ID, RefundFailed, "expired_or_canceled_card")
	require.NoError(t, err)

	var listed []*stripeapi.Refund
	for r, err := range api.V1Refunds.List(ctx, &stripeapi.RefundListParams{PaymentIntent: stripeapi.String(pi)}) {
		require.NoError(t, err)
		listed = append(listed, r)
	}
	require.Len(t, listed, 2, "a refusal makes no refund at Stripe")
	require.Equal(t, pending.ID, listed[0].ID, "newest first")
	require.Equal(t, stripeapi.RefundStatusFailed, listed[0].Status)
	require.Equal(t, stripeapi.RefundFailureReasonExpiredOrCanceledCard, listed[0].FailureReason)
	require.Equal(t, refund.ID, listed[1].ID)

	got, err := api.V1Refunds.Retrieve(ctx, refund.ID, nil)
	require.NoError(t, err)
	require.Equal(t, refund.Amount, got.Amount)
}

func TestStripeRefunds_RefusalsAreStripeErrorsStoredUnderTheKey(t *testing.T) {
	f := newFixture(t, Config{})
	pi := paidIntent(t, f, "pi-1")
	declined := f.do(t, postIntent("pi-2", stripeForm(func(v url.Values) { v.Set("payment_method", "pm_card_chargeDeclined") })))
	require.Equal(t, http.StatusPaymentRequired, declined.status)
	ietfCharge := paidCharge(t, f, 1000)
	require.Equal(t, http.StatusOK, f.do(t, postStripeRefundCall("full", stripeRefundForm(pi, func(v url.Values) { v.Set("amount", "54890") }))).status)

	tests := []struct {
		name, pi, code, param string
	}{
		{"fully refunded", pi, "charge_already_refunded", ""},
		{"declined PaymentIntent", "pi_000002", "charge_not_refundable", "payment_intent"},
		{"unknown PaymentIntent", "pi_999999", "charge_not_refundable", "payment_intent"},
		{"a charge of the other door", ietfCharge, "charge_not_refundable", "payment_intent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := stripeRefundForm(tt.pi, nil)

			r := f.do(t, postStripeRefundCall("key-"+tt.name, body))
			replay := f.do(t, postStripeRefundCall("key-"+tt.name, body))

			e := stripeErrorOf(t, r, http.StatusBadRequest)
			require.Equal(t, "invalid_request_error", e.Type)
			require.Equal(t, tt.code, e.Code)
			require.Equal(t, tt.param, e.Param)
			require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
			require.Equal(t, r.body, replay.body)
		})
	}
	require.Len(t, f.p.Refunds(), 1, "Stripe keeps no refund for a refusal")
}

func TestStripeRefunds_IdempotencyRulesAsForPaymentIntents(t *testing.T) {
	f := newFixture(t, Config{})
	pi := paidIntent(t, f, "pi-1")
	first := f.do(t, postStripeRefundCall("k1", stripeRefundForm(pi, nil)))
	require.Equal(t, http.StatusOK, first.status, "body: %s", first.body)

	other := f.do(t, postStripeRefundCall("k1", stripeRefundForm(pi, func(v url.Values) { v.Set("amount", "1") })))
	ietfSameKey := f.do(t, postRefundCall("k1", refundBody(pi, 1250, "shop-refund-1")))
	noKey := f.do(t, postStripeRefundCall("", stripeRefundForm(pi, nil)))

	require.Equal(t, "idempotency_error", stripeErrorOf(t, other, http.StatusBadRequest).Type)
	requireProblem(t, ietfSameKey, http.StatusUnprocessableEntity, msgKeyReused)
	require.Equal(t, msgStripeKeyMissing, stripeErrorOf(t, noKey, http.StatusBadRequest).Message)
	require.Len(t, f.p.Refunds(), 1)
}

func TestStripeRefunds_InvalidParametersAre400NamingTheParameter(t *testing.T) {
	f := newFixture(t, Config{})
	pi := paidIntent(t, f, "pi-1")
	tests := []struct {
		name   string
		change func(url.Values)
		param  string
	}{
		{"no payment_intent", func(v url.Values) { v.Del("payment_intent") }, "payment_intent"},
		{"no amount", func(v url.Values) { v.Del("amount") }, "amount"},
		{"zero amount", func(v url.Values) { v.Set("amount", "0") }, "amount"},
		{"unknown currency", func(v url.Values) { v.Set("currency", "xyz") }, "currency"},
		{"free-text reason", func(v url.Values) { v.Set("reason", "the book was torn") }, "reason"},
		{"no reference", func(v url.Values) { v.Del("metadata[merchant_reference]") }, "metadata[merchant_reference]"},
		{"refund by charge", func(v url.Values) { v.Set("charge", "ch_1") }, "charge"},
		{"repeated", func(v url.Values) { v.Add("amount", "2") }, "amount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, postStripeRefundCall("k-"+tt.name, stripeRefundForm(pi, tt.change)))

			e := stripeErrorOf(t, r, http.StatusBadRequest)
			require.Equal(t, "invalid_request_error", e.Type)
			require.Equal(t, tt.param, e.Param)
		})
	}
	require.Empty(t, f.p.Refunds())
	lowerCurrency := f.do(t, postStripeRefundCall("k-ok", stripeRefundForm(pi, func(v url.Values) { v.Set("currency", "try") })))
	require.Equal(t, http.StatusOK, lowerCurrency.status, "body: %s", lowerCurrency.body)
}

func TestStripeRefunds_TheSecretKeySelectsTheDialectAndListsArePaced(t *testing.T) {
	f := newFixture(t, Config{LookupRate: 2})
	pi := paidIntent(t, f, "pi-1")
	require.Equal(t, http.StatusOK, f.do(t, postStripeRefundCall("k1", stripeRefundForm(pi, nil))).status)

	ietfGet := f.do(t, get("/v1/refunds/re_000001"))
	stripeGet := f.do(t, call{method: http.MethodGet, path: "/v1/refunds/re_000001", auth: stripeAuth})
	badAuth := f.do(t, call{method: http.MethodGet, path: "/v1/refunds/re_000001", auth: "Bearer pk_test_1"})
	missing := f.do(t, call{method: http.MethodGet, path: "/v1/refunds/re_000009", auth: stripeAuth})
	noPI := f.do(t, call{method: http.MethodGet, path: "/v1/refunds", auth: stripeAuth})
	list := f.do(t, call{method: http.MethodGet, path: "/v1/refunds?payment_intent=" + pi, auth: stripeAuth})
	limited := f.do(t, call{method: http.MethodGet, path: "/v1/refunds?payment_intent=" + pi, auth: stripeAuth})

	require.Equal(t, RefundSucceeded, decode[Refund](t, ietfGet).Status)
	require.Equal(t, "succeeded", decode[map[string]any](t, stripeGet)["status"])
	require.Equal(t, pi, decode[map[string]any](t, stripeGet)["payment_intent"])
	stripeErrorOf(t, badAuth, http.StatusUnauthorized)
	require.Equal(t, "resource_missing", stripeErrorOf(t, missing, http.StatusNotFound).Code)
	require.Equal(t, "payment_intent", stripeErrorOf(t, noPI, http.StatusBadRequest).Param)
	require.Equal(t, http.StatusOK, list.status)
	require.Equal(t, "rate_limit", stripeErrorOf(t, limited, http.StatusTooManyRequests).Code, "the list counts against the lookup rate")
	rec := f.p.RefundRequests()[0]
	require.Equal(t, "k1", rec.Key)
	require.Equal(t, "re_000001", rec.RefundID)
	require.Equal(t, pi, rec.ChargeID)
}
