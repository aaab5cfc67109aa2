package fakeprovider

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

const stripeAuth = "Bearer " + StripeTestKey

// stripeForm is a valid PaymentIntent creation, with changes applied.
func stripeForm(change func(url.Values)) string {
	form := url.Values{
		"amount":                       {"54890"},
		"currency":                     {"try"},
		"confirm":                      {"true"},
		"payment_method":               {"pm_card_visa"},
		"payment_method_types[0]":      {"card"},
		"metadata[merchant_reference]": {"bookstore-1001-a"},
		"description":                  {"Bookstore order 1001"},
		"error_on_requires_action":     {"true"},
	}
	if change != nil {
		change(form)
	}
	return form.Encode()
}

func postIntent(key, body string) call {
	return call{method: http.MethodPost, path: stripeChargePath, key: key, body: body, contentType: "application/x-www-form-urlencoded", auth: stripeAuth}
}

// stripeErrorOf decodes Stripe's error answer.
func stripeErrorOf(t *testing.T, r reply, status int) stripeError {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	require.Equal(t, contentTypeJSON, r.header.Get("Content-Type"))
	return decode[struct {
		Error stripeError `json:"error"`
	}](t, r).Error
}

func TestStripe_CreatesAConfirmedPaymentIntentAndServesIt(t *testing.T) {
	f := newFixture(t, Config{})

	created := f.do(t, postIntent("k1", stripeForm(nil)))
	require.Equal(t, http.StatusOK, created.status, "body: %s", created.body)
	pi := decode[paymentIntent](t, created)
	got := f.do(t, call{method: http.MethodGet, path: stripeChargePath + "/" + pi.ID, auth: stripeAuth})
	search := f.do(t, call{method: http.MethodGet, auth: stripeAuth,
		path: stripeSearchPath + "?" + url.Values{"query": {`metadata['merchant_reference']:'bookstore-1001-a'`}}.Encode()})

	require.Equal(t, "pi_000001", pi.ID)
	require.Equal(t, "succeeded", pi.Status)
	require.Equal(t, "try", pi.Currency)
	require.Equal(t, int64(54890), pi.AmountReceived)
	require.Equal(t, map[string]string{"merchant_reference": "bookstore-1001-a"}, pi.Metadata)
	require.Equal(t, http.StatusOK, got.status)
	require.Equal(t, pi, decode[paymentIntent](t, got))
	list := decode[struct {
		Object string          `json:"object"`
		Data   []paymentIntent `json:"data"`
	}](t, search)
	require.Equal(t, "search_result", list.Object)
	require.Equal(t, []paymentIntent{pi}, list.Data)
	require.Equal(t, "k1", f.p.ChargeRequests()[0].Key)
}

func TestStripe_SearchSeesOnlyItsOwnDialectsCharges(t *testing.T) {
	f := newFixture(t, Config{})
	require.Equal(t, http.StatusCreated, f.do(t, post("k1", validBody)).status)

	search := f.do(t, call{method: http.MethodGet, auth: stripeAuth,
		path: stripeSearchPath + "?" + url.Values{"query": {`metadata['merchant_reference']:'bookstore-1001-a'`}}.Encode()})
	byID := f.do(t, call{method: http.MethodGet, path: stripeChargePath + "/ch_000001", auth: stripeAuth})

	require.Equal(t, http.StatusOK, search.status)
	require.Empty(t, decode[struct {
		Data []paymentIntent `json:"data"`
	}](t, search).Data)
	require.Equal(t, "resource_missing", stripeErrorOf(t, byID, http.StatusNotFound).Code)
}

func TestStripe_RefusesWhatStripeRefuses(t *testing.T) {
	cases := []struct {
		name    string
		call    call
		status  int
		errType string
		param   string
	}{
		{"no secret key", call{method: http.MethodPost, path: stripeChargePath, key: "k", body: stripeForm(nil), contentType: "application/x-www-form-urlencoded"}, 401, "invalid_request_error", ""},
		{"publishable key", call{method: http.MethodPost, path: stripeChargePath, key: "k", body: stripeForm(nil), contentType: "application/x-www-form-urlencoded", auth: "Bearer pk_test_1"}, 401, "invalid_request_error", ""},
		{"no idempotency key", postIntent("", stripeForm(nil)), 400, "invalid_request_error", ""},
		{"JSON body", call{method: http.MethodPost, path: stripeChargePath, key: "k", body: `{}`, auth: stripeAuth}, 400, "invalid_request_error", ""},
		{"unknown parameter", postIntent("k", stripeForm(func(f url.Values) { f.Set("customer", "cus_1") })), 400, "invalid_request_error", "customer"},
		{"repeated parameter", postIntent("k", stripeForm(func(f url.Values) { f.Add("amount", "100000") })), 400, "invalid_request_error", "amount"},
		{"not confirmed", postIntent("k", stripeForm(func(f url.Values) { f.Del("confirm") })), 400, "invalid_request_error", "confirm"},
		{"amount not a number", postIntent("k", stripeForm(func(f url.Values) { f.Set("amount", "5.50") })), 400, "invalid_request_error", "amount"},
		{"unknown payment method", postIntent("k", stripeForm(func(f url.Values) { f.Set("payment_method", "card_123") })), 400, "invalid_request_error", "payment_method"},
		{"no reference", postIntent("k", stripeForm(func(f url.Values) { f.Del("metadata[merchant_reference]") })), 400, "invalid_request_error", "metadata[merchant_reference]"},
		{"another search", call{method: http.MethodGet, path: stripeSearchPath + "?query=status%3A%27succeeded%27", auth: stripeAuth}, 400, "invalid_request_error", "query"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Config{})

			e := stripeErrorOf(t, f.do(t, tc.call), tc.status)

			require.Equal(t, tc.errType, e.Type)
			require.Equal(t, tc.param, e.Param)
			require.NotEmpty(t, e.Message)
			require.Empty(t, f.p.Charges())
		})
	}
}

func TestStripe_UnknownPaymentMethodIsResourceMissingAsAtStripe(t *testing.T) {
	for _, method := range []string{"card_123", "visa", "pm_card_", "tok_"} {
		t.Run(method, func(t *testing.T) {
			f := newFixture(t, Config{})

			e := stripeErrorOf(t, f.do(t, postIntent("k", stripeForm(func(f url.Values) { f.Set("payment_method", method) }))), http.StatusBadRequest)

			require.Equal(t, stripeError{Type: "invalid_request_error", Code: "resource_missing", Param: "payment_method",
				Message: "No such PaymentMethod: '" + method + "'"}, e)
			require.Empty(t, f.p.Charges())
			require.Equal(t, outcomeSourceRefused, f.p.Requests()[0].Outcome)
		})
	}
}

func TestStripe_TheKeyWithOtherParametersIsAnIdempotencyError(t *testing.T) {
	f := newFixture(t, Config{})
	require.Equal(t, http.StatusOK, f.do(t, postIntent("k1", stripeForm(nil))).status)

	other := f.do(t, postIntent("k1", stripeForm(func(v url.Values) { v.Set("amount", "100") })))
	// The same key through the other dialect is another request too.
	ietfReuse := f.do(t, post("k1", validBody))

	require.Equal(t, "idempotency_error", stripeErrorOf(t, other, http.StatusBadRequest).Type)
	require.Equal(t, http.StatusUnprocessableEntity, ietfReuse.status)
	require.Len(t, f.p.Charges(), 1)
}

func TestStripe_DeclineIsACardErrorWithThePaymentIntent(t *testing.T) {
	f := newFixture(t, Config{})

	r := f.do(t, postIntent("k1", stripeForm(func(v url.Values) { v.Set("payment_method", "pm_card_chargeDeclinedLostCard") })))
	replay := f.do(t, postIntent("k1", stripeForm(func(v url.Values) { v.Set("payment_method", "pm_card_chargeDeclinedLostCard") })))

	e := stripeErrorOf(t, r, http.StatusPaymentRequired)
	require.Equal(t, "card_error", e.Type)
	require.Equal(t, "card_declined", e.Code)
	require.Equal(t, "lost_card", e.DeclineCode)
	require.Equal(t, "requires_payment_method", e.PaymentIntent.Status)
	require.Equal(t, "pi_000001", e.PaymentIntent.ID)
	require.Equal(t, r.body, replay.body)
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
}
