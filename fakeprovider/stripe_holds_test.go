package fakeprovider

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	stripeapi "github.com/stripe/stripe-go/v84"
)

// manualIntent makes a PaymentIntent of 54890 with capture_method manual
// through stripe-go, under key.
func manualIntent(t *testing.T, api *stripeapi.Client, key string) *stripeapi.PaymentIntent {
	t.Helper()
	params := &stripeapi.PaymentIntentCreateParams{
		Amount:             stripeapi.Int64(54890),
		Currency:           stripeapi.String("try"),
		Confirm:            stripeapi.Bool(true),
		PaymentMethod:      stripeapi.String("pm_card_visa"),
		PaymentMethodTypes: []*string{stripeapi.String("card")},
		CaptureMethod:      stripeapi.String(string(stripeapi.PaymentIntentCaptureMethodManual)),
		Metadata:           map[string]string{"merchant_reference": "order-" + key},
	}
	params.AddExpand("latest_charge")
	params.SetIdempotencyKey(key)
	pi, err := api.V1PaymentIntents.Create(context.Background(), params)
	require.NoError(t, err)
	return pi
}

func capturePI(api *stripeapi.Client, id, key string, amount int64) (*stripeapi.PaymentIntent, error) {
	params := &stripeapi.PaymentIntentCaptureParams{}
	if amount > 0 {
		params.AmountToCapture = stripeapi.Int64(amount)
	}
	params.AddExpand("latest_charge")
	params.SetIdempotencyKey(key)
	return api.V1PaymentIntents.Capture(context.Background(), id, params)
}

func cancelPI(api *stripeapi.Client, id, key, reason string) (*stripeapi.PaymentIntent, error) {
	params := &stripeapi.PaymentIntentCancelParams{}
	if reason != "" {
		params.CancellationReason = stripeapi.String(reason)
	}
	params.AddExpand("latest_charge")
	params.SetIdempotencyKey(key)
	return api.V1PaymentIntents.Cancel(context.Background(), id, params)
}

// requireUnexpectedState checks Stripe's refusal of a capture or a cancel:
// a 400 with code, and the PaymentIntent as it is.
func requireUnexpectedState(t *testing.T, err error, code stripeapi.ErrorCode, status stripeapi.PaymentIntentStatus) *stripeapi.PaymentIntent {
	t.Helper()
	var stripeErr *stripeapi.Error
	require.True(t, errors.As(err, &stripeErr), "err: %v", err)
	require.Equal(t, http.StatusBadRequest, stripeErr.HTTPStatusCode)
	require.Equal(t, stripeapi.ErrorTypeInvalidRequest, stripeErr.Type)
	require.Equal(t, code, stripeErr.Code)
	require.NotNil(t, stripeErr.PaymentIntent)
	require.Equal(t, status, stripeErr.PaymentIntent.Status)
	return stripeErr.PaymentIntent
}

func TestStripeHolds_AuthorizeThenCaptureInPartThroughStripeGo(t *testing.T) {
	f := newFixture(t, Config{HoldWindow: 48 * time.Hour})
	api := stripeClient(f)

	pi := manualIntent(t, api, "k1")

	require.Equal(t, stripeapi.PaymentIntentStatusRequiresCapture, pi.Status)
	require.Equal(t, stripeapi.PaymentIntentCaptureMethodManual, pi.CaptureMethod)
	require.Equal(t, int64(54890), pi.AmountCapturable)
	require.Zero(t, pi.AmountReceived)
	require.NotNil(t, pi.LatestCharge)
	require.False(t, pi.LatestCharge.Captured)
	require.Zero(t, pi.LatestCharge.AmountCaptured)
	require.Equal(t, f.clock.Now().Add(48*time.Hour).Unix(), pi.LatestCharge.PaymentMethodDetails.Card.CaptureBefore)
	require.Equal(t, ChargeAuthorized, f.p.Charges()[0].Status)

	captured, err := capturePI(api, pi.ID, "c1", 50000)

	require.NoError(t, err)
	require.Equal(t, stripeapi.PaymentIntentStatusSucceeded, captured.Status)
	require.Equal(t, int64(50000), captured.AmountReceived)
	require.Zero(t, captured.AmountCapturable)
	require.True(t, captured.LatestCharge.Captured)
	require.Equal(t, int64(50000), captured.LatestCharge.AmountCaptured)
	got, err := api.V1PaymentIntents.Retrieve(context.Background(), pi.ID, nil)
	require.NoError(t, err)
	require.Equal(t, captured.AmountReceived, got.AmountReceived)
	again, err := capturePI(api, pi.ID, "c1", 50000)
	require.NoError(t, err)
	require.Equal(t, captured.AmountReceived, again.AmountReceived, "the same key is the same capture")
	_, err = capturePI(api, pi.ID, "c1", 40000)
	var stripeErr *stripeapi.Error
	require.True(t, errors.As(err, &stripeErr), "err: %v", err)
	require.Equal(t, stripeapi.ErrorTypeIdempotency, stripeErr.Type)

	params := &stripeapi.RefundCreateParams{PaymentIntent: stripeapi.String(pi.ID), Amount: stripeapi.Int64(50001), Metadata: map[string]string{"merchant_reference": "r1"}}
	params.SetIdempotencyKey("r1")
	_, err = api.V1Refunds.Create(context.Background(), params)
	require.True(t, errors.As(err, &stripeErr), "only the captured money can be refunded: %v", err)
	require.Equal(t, stripeapi.ErrorCodeAmountTooLarge, stripeErr.Code)
}

func TestStripeHolds_CaptureWithoutAnAmountCapturesItAll(t *testing.T) {
	f := newFixture(t, Config{})
	api := stripeClient(f)
	pi := manualIntent(t, api, "k1")

	captured, err := capturePI(api, pi.ID, "c1", 0)

	require.NoError(t, err)
	require.Equal(t, int64(54890), captured.AmountReceived)
}

func TestStripeHolds_CancelIsTheVoidAndAnExpiryIsCanceledAutomatically(t *testing.T) {
	f := newFixture(t, Config{HoldWindow: time.Hour})
	api := stripeClient(f)
	byCustomer, asDuplicate, toExpire := manualIntent(t, api, "k1"), manualIntent(t, api, "k2"), manualIntent(t, api, "k3")

	canceled, err := cancelPI(api, byCustomer.ID, "v1", "")
	require.NoError(t, err)
	duplicate, err := cancelPI(api, asDuplicate.ID, "v2", "duplicate")
	require.NoError(t, err)
	f.clock.Advance(time.Hour)
	expiredPI, err := api.V1PaymentIntents.Retrieve(context.Background(), toExpire.ID, nil)
	require.NoError(t, err)

	require.Equal(t, stripeapi.PaymentIntentStatusCanceled, canceled.Status)
	require.Equal(t, stripeapi.PaymentIntentCancellationReasonRequestedByCustomer, canceled.CancellationReason)
	require.Equal(t, f.clock.Now().Add(-time.Hour).Unix(), canceled.CanceledAt)
	require.Equal(t, stripeapi.PaymentIntentCancellationReasonDuplicate, duplicate.CancellationReason)
	require.Equal(t, stripeapi.PaymentIntentStatusCanceled, expiredPI.Status)
	require.Equal(t, stripeapi.PaymentIntentCancellationReasonAutomatic, expiredPI.CancellationReason)
	require.Equal(t, []ChargeStatus{ChargeVoided, ChargeVoided, ChargeExpired},
		[]ChargeStatus{f.p.Charges()[0].Status, f.p.Charges()[1].Status, f.p.Charges()[2].Status})
}

func TestStripeHolds_RefusalsAreUnexpectedStateWithThePaymentIntent(t *testing.T) {
	f := newFixture(t, Config{HoldWindow: time.Hour})
	api := stripeClient(f)
	canceled := manualIntent(t, api, "k1")
	_, err := cancelPI(api, canceled.ID, "v1", "")
	require.NoError(t, err)
	captured := manualIntent(t, api, "k2")
	_, err = capturePI(api, captured.ID, "c2", 0)
	require.NoError(t, err)
	held := manualIntent(t, api, "k3")
	automatic := paidIntent(t, f, "k4")
	toExpire := manualIntent(t, api, "k5")
	f.clock.Advance(time.Hour - time.Second)

	_, err = capturePI(api, canceled.ID, "m1", 0)
	pi := requireUnexpectedState(t, err, stripeapi.ErrorCodePaymentIntentUnexpectedState, stripeapi.PaymentIntentStatusCanceled)
	require.Equal(t, stripeapi.PaymentIntentCancellationReasonRequestedByCustomer, pi.CancellationReason)
	_, err = cancelPI(api, captured.ID, "m2", "")
	requireUnexpectedState(t, err, stripeapi.ErrorCodePaymentIntentUnexpectedState, stripeapi.PaymentIntentStatusSucceeded)
	_, err = capturePI(api, held.ID, "m3", 54891)
	requireUnexpectedState(t, err, stripeapi.ErrorCodeAmountTooLarge, stripeapi.PaymentIntentStatusRequiresCapture)
	require.Equal(t, ChargeAuthorized, f.p.Charges()[2].Status, "a refusal changes nothing")
	_, err = capturePI(api, automatic, "m4", 0)
	pi = requireUnexpectedState(t, err, stripeapi.ErrorCodePaymentIntentUnexpectedState, stripeapi.PaymentIntentStatusSucceeded)
	require.Equal(t, stripeapi.PaymentIntentCaptureMethodAutomatic, pi.CaptureMethod)
	f.clock.Advance(time.Second)
	_, err = capturePI(api, toExpire.ID, "m5", 0)
	pi = requireUnexpectedState(t, err, stripeapi.ErrorCodePaymentIntentUnexpectedState, stripeapi.PaymentIntentStatusCanceled)
	require.Equal(t, stripeapi.PaymentIntentCancellationReasonAutomatic, pi.CancellationReason)
}

func holdMoveCall(id, move, key, body string) call {
	return call{method: http.MethodPost, path: stripeChargePath + "/" + id + "/" + move, key: key, body: body, contentType: "application/x-www-form-urlencoded", auth: stripeAuth}
}

func TestStripeHolds_BadRequestsAreRefusedAndChangeNothing(t *testing.T) {
	f := newFixture(t, Config{})
	held := manualIntent(t, stripeClient(f), "k1")
	ietfCharge := paidCharge(t, f, 1000)
	tests := []struct {
		name   string
		call   call
		status int
		param  string
	}{
		{"zero amount_to_capture", holdMoveCall(held.ID, "capture", "m", "amount_to_capture=0"), http.StatusBadRequest, "amount_to_capture"},
		{"amount_to_capture not a number", holdMoveCall(held.ID, "capture", "m", "amount_to_capture=lots"), http.StatusBadRequest, "amount_to_capture"},
		{"unknown parameter", holdMoveCall(held.ID, "capture", "m", "amount=5"), http.StatusBadRequest, "amount"},
		{"unknown cancellation reason", holdMoveCall(held.ID, "cancel", "m", "cancellation_reason=bored"), http.StatusBadRequest, "cancellation_reason"},
		{"unknown PaymentIntent", holdMoveCall("pi_999999", "capture", "m", ""), http.StatusNotFound, "id"},
		{"a charge of the other dialect", holdMoveCall(ietfCharge, "cancel", "m", ""), http.StatusNotFound, "id"},
		{"no key", holdMoveCall(held.ID, "cancel", "", ""), http.StatusBadRequest, ""},
		{"no secret key", call{method: http.MethodPost, path: stripeChargePath + "/" + held.ID + "/cancel", key: "m"}, http.StatusUnauthorized, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := stripeErrorOf(t, f.do(t, tt.call), tt.status)

			require.Equal(t, tt.param, e.Param)
		})
	}
	require.Equal(t, ChargeAuthorized, f.p.Charges()[0].Status)
	require.Equal(t, http.StatusOK, f.do(t, holdMoveCall(held.ID, "cancel", "m", "")).status, "no refusal used the key")
}

func TestStripeHolds_ChaosModesAndTheKeyInFlightApply(t *testing.T) {
	f := newFixture(t, Config{})
	held := manualIntent(t, stripeClient(f), "k1")
	require.NoError(t, f.p.SetMode(Mode{Name: ModeError, Rate: 1}))
	stripeErrorOf(t, f.do(t, holdMoveCall(held.ID, "capture", "c1", "")), http.StatusServiceUnavailable)
	require.NoError(t, f.p.SetMode(Mode{Name: ModeSlow, Delay: time.Second}))
	firstReply := make(chan reply, 1)
	go func() {
		r, _ := f.send(context.Background(), f.client, holdMoveCall(held.ID, "capture", "c1", ""))
		firstReply <- r
	}()
	f.gate.awaitWait(t)

	e := stripeErrorOf(t, f.do(t, holdMoveCall(held.ID, "capture", "c1", "")), http.StatusConflict)

	require.Equal(t, "idempotency_key_in_use", e.Code)
	f.gate.Open()
	first := <-firstReply
	require.Equal(t, http.StatusOK, first.status, "body: %s", first.body)
	require.Equal(t, "succeeded", decode[paymentIntent](t, first).Status)
}

func TestStripeHolds_SearchShowsTheHoldAndCaptureMethodIsPartOfTheFingerprint(t *testing.T) {
	f := newFixture(t, Config{})
	require.Equal(t, http.StatusOK, f.do(t, postIntent("k1", stripeForm(nil))).status)

	manual := f.do(t, postIntent("k1", stripeForm(func(v url.Values) { v.Set("capture_method", "manual") })))
	automatic := f.do(t, postIntent("k1", stripeForm(func(v url.Values) { v.Set("capture_method", "automatic") })))
	bad := f.do(t, postIntent("k2", stripeForm(func(v url.Values) { v.Set("capture_method", "later") })))
	held := f.do(t, postIntent("k3", stripeForm(func(v url.Values) {
		v.Set("capture_method", "manual")
		v.Set("metadata[merchant_reference]", "held-1")
	})))
	search := f.do(t, call{method: http.MethodGet, auth: stripeAuth,
		path: stripeSearchPath + "?" + url.Values{"query": {`metadata['merchant_reference']:'held-1'`}}.Encode()})

	require.Equal(t, stripeapi.ErrorTypeIdempotency, stripeapi.ErrorType(stripeErrorOf(t, manual, http.StatusBadRequest).Type))
	require.Equal(t, "true", automatic.header.Get("Idempotent-Replayed"))
	require.Equal(t, "capture_method", stripeErrorOf(t, bad, http.StatusBadRequest).Param)
	require.Equal(t, http.StatusOK, held.status)
	list := decode[struct {
		Data []paymentIntent `json:"data"`
	}](t, search)
	require.Len(t, list.Data, 1)
	require.Equal(t, "requires_capture", list.Data[0].Status)
	require.Equal(t, decode[paymentIntent](t, held), list.Data[0])
}
