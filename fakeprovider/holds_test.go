package fakeprovider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/webhook"
)

// holdBody is a valid charge request body that authorizes only.
func holdBody(amount int64, reference string) string {
	return fmt.Sprintf(`{"amount":%d,"currency":"TRY","source":"tok_visa","capture":false,"merchant_reference":%q}`, amount, reference)
}

// authorize makes an authorization of amount and returns it.
func authorize(t *testing.T, f *fixture, amount int64) Charge {
	t.Helper()
	n := len(f.p.Charges()) + 1
	r := f.do(t, post(fmt.Sprintf("hold-key-%d", n), holdBody(amount, fmt.Sprintf("order-%d", n))))
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	return decode[Charge](t, r)
}

func captureCall(key, charge, body string) call {
	return call{method: http.MethodPost, path: "/v1/charges/" + charge + "/capture", key: sfString(key), body: body}
}

func voidCall(key, charge, body string) call {
	return call{method: http.MethodPost, path: "/v1/charges/" + charge + "/void", key: sfString(key), body: body}
}

func captureBodyOf(amount int64) string {
	return fmt.Sprintf(`{"amount":%d,"currency":"TRY"}`, amount)
}

// requireHoldDecline checks a refused capture or void: a 403 with the
// problem of the move and the decline code.
func requireHoldDecline(t *testing.T, r reply, code problemCode, decline, charge string) {
	t.Helper()
	p := requireProblem(t, r, http.StatusForbidden, holdDeclineDetails[decline])
	require.Equal(t, code, p.Code)
	require.Equal(t, decline, p.DeclineCode)
	require.Equal(t, charge, p.ChargeID)
}

func TestHold_AuthorizeThenCaptureInFull(t *testing.T) {
	f := newFixture(t, Config{HoldWindow: 48 * time.Hour})

	r := f.do(t, post("k1", holdBody(54890, "order-1")))

	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Contains(t, string(r.body), `"amount_captured":0`)
	want := Charge{
		ID: "ch_000001", Object: "charge", Amount: 54890, Currency: "TRY", Status: ChargeAuthorized,
		AmountCaptured: ptr[int64](0), CaptureBefore: f.clock.Now().Add(48 * time.Hour),
		MerchantReference: "order-1", IdempotencyKey: "k1", Created: f.clock.Now(),
	}
	require.Equal(t, want, decode[Charge](t, r))
	require.Equal(t, want, decode[Charge](t, f.do(t, get("/v1/charges/ch_000001"))))
	f.clock.Advance(time.Hour)

	captured := f.do(t, captureCall("c1", "ch_000001", captureBodyOf(54890)))

	require.Equal(t, http.StatusOK, captured.status, "body: %s", captured.body)
	want.Status, want.AmountCaptured = ChargeSucceeded, ptr[int64](54890)
	require.Equal(t, want, decode[Charge](t, captured))
	require.Equal(t, want, decode[Charge](t, f.do(t, get("/v1/charges/ch_000001"))))
	require.Equal(t, []Charge{want}, decode[chargeList](t, f.do(t, get("/v1/charges?merchant_reference=order-1"))).Data)
	recs := f.p.Requests()
	require.Equal(t, outcomeCaptured, recs[len(recs)-3].Outcome)
	require.Equal(t, "ch_000001", recs[len(recs)-3].ChargeID)
}

func TestHold_AChargeCapturedAtOnceShowsNoHoldFields(t *testing.T) {
	f := newFixture(t, Config{})

	for _, body := range []string{validBody, strings.Replace(validBody, `"source"`, `"capture":true,"source"`, 1)} {
		r := f.do(t, post("k-"+fmt.Sprint(len(f.p.Charges())), body))

		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		require.NotContains(t, string(r.body), "amount_captured")
		require.NotContains(t, string(r.body), "capture_before")
		require.Equal(t, ChargeSucceeded, decode[Charge](t, r).Status)
	}
}

func TestHold_CaptureIsPartOfTheFingerprint(t *testing.T) {
	f := newFixture(t, Config{})
	require.Equal(t, http.StatusCreated, f.do(t, post("k1", validBody)).status)
	withTrue := strings.Replace(validBody, `"source"`, `"capture":true,"source"`, 1)
	withFalse := strings.Replace(validBody, `"source"`, `"capture":false,"source"`, 1)

	require.Equal(t, "true", f.do(t, post("k1", withTrue)).header.Get("Idempotent-Replayed"), "capture true is the charge as before")
	requireProblem(t, f.do(t, post("k1", withFalse)), http.StatusUnprocessableEntity, msgKeyReused)
	require.Len(t, f.p.Charges(), 1)
}

func TestHold_PartialCaptureReleasesTheRestAndRefundsOnlyTheCapturedMoney(t *testing.T) {
	f := newFixture(t, Config{})
	hold := authorize(t, f, 1000)

	r := f.do(t, captureCall("c1", hold.ID, captureBodyOf(600)))

	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	c := decode[Charge](t, r)
	require.Equal(t, ChargeSucceeded, c.Status)
	require.Equal(t, ptr[int64](600), c.AmountCaptured)
	require.Equal(t, int64(1000), c.Amount)
	requireProblem(t, f.do(t, postRefundCall("r1", refundBody(hold.ID, 601, "ref-r1"))), http.StatusPaymentRequired, refusalDetails[codeRefundTooLarge])
	require.Equal(t, http.StatusCreated, f.do(t, postRefundCall("r2", refundBody(hold.ID, 600, "ref-r2"))).status)
	requireProblem(t, f.do(t, postRefundCall("r3", refundBody(hold.ID, 1, "ref-r3"))), http.StatusPaymentRequired, refusalDetails[codeChargeAlreadyRefunded])
	requireHoldDecline(t, f.do(t, captureCall("c2", hold.ID, captureBodyOf(400))), codeChargeNotCapturable, declineHoldCaptured, hold.ID)
}

func TestHold_VoidReleasesTheAuthorization(t *testing.T) {
	f := newFixture(t, Config{})
	hold := authorize(t, f, 1000)

	for i, body := range []string{"", "{}"} {
		if i == 1 {
			hold = authorize(t, f, 1000)
		}
		r := f.do(t, voidCall(fmt.Sprintf("v%d", i), hold.ID, body))

		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		c := decode[Charge](t, r)
		require.Equal(t, ChargeVoided, c.Status)
		require.Equal(t, ptr[int64](0), c.AmountCaptured)
		require.Equal(t, c, decode[Charge](t, f.do(t, get("/v1/charges/"+hold.ID))))
	}
}

func TestHold_MovesThatCannotBeMadeAreDeclinedWithTheirCode(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, f *fixture) string
		move    func(id string) call
		code    problemCode
		decline string
	}{
		{"capture after void", voided, capture(100), codeChargeNotCapturable, declineHoldVoided},
		{"void after void", voided, void, codeChargeNotVoidable, declineHoldVoided},
		{"void after capture", captured, void, codeChargeNotVoidable, declineHoldCaptured},
		{"capture after capture", captured, capture(100), codeChargeNotCapturable, declineHoldCaptured},
		{"capture above the amount", heldCharge, capture(1001), codeChargeNotCapturable, declineAmountTooLarge},
		{"capture of a charge captured at once", paid, capture(100), codeChargeNotCapturable, declineNotAHold},
		{"void of a charge captured at once", paid, void, codeChargeNotVoidable, declineNotAHold},
		{"capture of a declined charge", declined, capture(100), codeChargeNotCapturable, declineNotAHold},
		{"capture of an expired hold", expired, capture(100), codeChargeNotCapturable, declineHoldExpired},
		{"void of an expired hold", expired, void, codeChargeNotVoidable, declineHoldExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{HoldWindow: time.Hour})
			id := tt.prepare(t, f)
			before := f.p.Charges()

			r := f.do(t, tt.move(id))

			requireHoldDecline(t, r, tt.code, tt.decline, id)
			require.Equal(t, before, f.p.Charges(), "a decline changes nothing")
			replay := f.do(t, tt.move(id))
			require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"), "a decline is stored under the key")
			require.Equal(t, r.body, replay.body)
		})
	}
}

func heldCharge(t *testing.T, f *fixture) string { return authorize(t, f, 1000).ID }

func voided(t *testing.T, f *fixture) string {
	id := heldCharge(t, f)
	require.Equal(t, http.StatusOK, f.do(t, voidCall("prepare", id, "")).status)
	return id
}

func captured(t *testing.T, f *fixture) string {
	id := heldCharge(t, f)
	require.Equal(t, http.StatusOK, f.do(t, captureCall("prepare", id, captureBodyOf(1000))).status)
	return id
}

func expired(t *testing.T, f *fixture) string {
	id := heldCharge(t, f)
	f.clock.Advance(f.p.HoldWindow())
	return id
}

func paid(t *testing.T, f *fixture) string { return paidCharge(t, f, 1000) }

func declined(t *testing.T, f *fixture) string {
	return f.charge(t, "declined", 1000, "tok_chargeDeclined")
}

func capture(amount int64) func(string) call {
	return func(id string) call { return captureCall("move", id, captureBodyOf(amount)) }
}

func void(id string) call { return voidCall("move", id, "") }

func TestHold_ExpiresAtCaptureBeforeAndCannotBeRefunded(t *testing.T) {
	f := newFixture(t, Config{HoldWindow: time.Hour})
	hold := authorize(t, f, 1000)
	f.clock.Advance(time.Hour - time.Nanosecond)
	require.Equal(t, ChargeAuthorized, decode[Charge](t, f.do(t, get("/v1/charges/"+hold.ID))).Status)

	f.clock.Advance(time.Nanosecond)

	c := decode[Charge](t, f.do(t, get("/v1/charges/"+hold.ID)))
	require.Equal(t, ChargeExpired, c.Status)
	require.Equal(t, ptr[int64](0), c.AmountCaptured)
	for _, id := range []string{hold.ID, heldCharge(t, f), voided(t, f)} {
		r := f.do(t, postRefundCall("r-"+id, refundBody(id, 100, "ref-"+id)))
		requireProblem(t, r, http.StatusPaymentRequired, refusalDetails[codeChargeNotRefundable])
	}
}

func TestHold_CaptureAndVoidReplayAndRefuseTheKeyWithAnotherRequest(t *testing.T) {
	f := newFixture(t, Config{})
	hold := authorize(t, f, 1000)
	other := authorize(t, f, 1000)
	first := f.do(t, captureCall("c1", hold.ID, captureBodyOf(700)))
	require.Equal(t, http.StatusOK, first.status)

	replay := f.do(t, captureCall("c1", hold.ID, captureBodyOf(700)))

	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.body, replay.body)
	for _, c := range []call{
		captureCall("c1", hold.ID, captureBodyOf(701)),
		captureCall("c1", other.ID, captureBodyOf(700)),
		voidCall("c1", hold.ID, ""),
	} {
		requireProblem(t, f.do(t, c), http.StatusUnprocessableEntity, msgKeyReused)
	}

	voidFirst := f.do(t, voidCall("v1", other.ID, "{}"))
	require.Equal(t, http.StatusOK, voidFirst.status)
	voidReplay := f.do(t, voidCall("v1", other.ID, ""))
	require.Equal(t, "true", voidReplay.header.Get("Idempotent-Replayed"), "an empty body is the same void as {}")
	require.Equal(t, voidFirst.body, voidReplay.body)
	requireProblem(t, f.do(t, captureCall("v1", other.ID, captureBodyOf(1))), http.StatusUnprocessableEntity, msgKeyReused)
	require.Equal(t, ptr[int64](700), f.p.Charges()[0].AmountCaptured)
}

func TestHold_CaptureInFlightIs409ThenTheReplay(t *testing.T) {
	f := newFixture(t, Config{})
	hold := authorize(t, f, 1000)
	require.NoError(t, f.p.SetMode(Mode{Name: ModeSlow, Delay: 5 * time.Second}))
	firstReply := make(chan reply, 1)
	go func() {
		r, _ := f.send(context.Background(), f.client, captureCall("c1", hold.ID, captureBodyOf(1000)))
		firstReply <- r
	}()
	f.gate.awaitWait(t)

	inFlight := f.do(t, captureCall("c1", hold.ID, captureBodyOf(1000)))

	requireProblem(t, inFlight, http.StatusConflict, msgKeyInFlight)
	require.Equal(t, "1", inFlight.header.Get("Retry-After"))
	require.Equal(t, ChargeAuthorized, f.p.Charges()[0].Status)
	f.gate.Open()
	first := <-firstReply
	require.Equal(t, http.StatusOK, first.status)
	require.Equal(t, first.body, f.do(t, captureCall("c1", hold.ID, captureBodyOf(1000))).body)
}

func TestHold_ChaosModesApplyToCaptureAndVoid(t *testing.T) {
	for _, tt := range []struct {
		mode   ModeName
		status int
		detail string
	}{
		{ModeError, http.StatusServiceUnavailable, msgUnavailable},
		{ModeRateLimit, http.StatusTooManyRequests, msgRateLimited},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			f := newFixture(t, Config{})
			hold := authorize(t, f, 1000)
			require.NoError(t, f.p.SetMode(Mode{Name: tt.mode, Rate: 1}))

			requireProblem(t, f.do(t, captureCall("c1", hold.ID, captureBodyOf(1000))), tt.status, tt.detail)
			requireProblem(t, f.do(t, voidCall("v1", hold.ID, "")), tt.status, tt.detail)

			require.Equal(t, ChargeAuthorized, f.p.Charges()[0].Status)
		})
	}
	t.Run("drop", func(t *testing.T) {
		f := newFixture(t, Config{})
		hold := authorize(t, f, 1000)
		require.NoError(t, f.p.SetMode(Mode{Name: ModeDrop, Delay: time.Second}))
		done := make(chan reply, 1)
		go func() {
			r, _ := f.send(context.Background(), f.client, voidCall("v1", hold.ID, ""))
			done <- r
		}()
		require.Equal(t, time.Second, f.gate.awaitWait(t))
		f.gate.Open()

		requireProblem(t, <-done, http.StatusGatewayTimeout, msgTimeout)
		require.Equal(t, ChargeAuthorized, f.p.Charges()[0].Status)
	})
	t.Run("lost_response", func(t *testing.T) {
		f := newFixture(t, Config{})
		hold := authorize(t, f, 1000)
		require.NoError(t, f.p.SetMode(Mode{Name: ModeLostResponse, Rate: 1}))
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

		_, err := f.send(context.Background(), client, captureCall("c1", hold.ID, captureBodyOf(1000)))

		require.Error(t, err)
		require.False(t, errors.Is(err, context.DeadlineExceeded))
		require.Equal(t, ChargeSucceeded, f.p.Charges()[0].Status, "captured, with the answer lost")
		retry, err := f.send(context.Background(), client, captureCall("c1", hold.ID, captureBodyOf(1000)))
		require.NoError(t, err)
		require.Equal(t, "true", retry.header.Get("Idempotent-Replayed"))
		require.Equal(t, ChargeSucceeded, decode[Charge](t, retry).Status)
	})
}

func TestHold_BadRequestsAreRefusedAndChangeNothing(t *testing.T) {
	f := newFixture(t, Config{})
	hold := authorize(t, f, 1000)
	intent := manualIntent(t, stripeClient(f), "pi-key")
	tests := []struct {
		name   string
		call   call
		status int
		detail string
		param  string
	}{
		{"not JSON", captureCall("k", hold.ID, `{"amount":`), http.StatusBadRequest, "", ""},
		{"unknown field", captureCall("k", hold.ID, `{"amount":100,"currency":"TRY","note":"x"}`), http.StatusBadRequest, "", "note"},
		{"zero amount", captureCall("k", hold.ID, captureBodyOf(0)), http.StatusBadRequest, msgAmount, "amount"},
		{"negative amount", captureCall("k", hold.ID, captureBodyOf(-5)), http.StatusBadRequest, msgAmount, "amount"},
		{"no currency", captureCall("k", hold.ID, `{"amount":100}`), http.StatusBadRequest, msgCurrency, "currency"},
		{"another currency", captureCall("k", hold.ID, `{"amount":100,"currency":"EUR"}`), http.StatusBadRequest, msgCaptureCurrency + "TRY", "currency"},
		{"bad charge id", captureCall("k", "ch%20000001", captureBodyOf(100)), http.StatusBadRequest, msgChargeID, "id"},
		{"unknown charge", captureCall("k", "ch_999999", captureBodyOf(100)), http.StatusNotFound, msgChargeNotFound, ""},
		{"void of an unknown charge", voidCall("k", "ch_999999", ""), http.StatusNotFound, msgChargeNotFound, ""},
		{"a hold of the Stripe dialect", voidCall("k", intent.ID, ""), http.StatusNotFound, msgChargeNotFound, ""},
		{"void with a body", voidCall("k", hold.ID, `{"amount":1}`), http.StatusBadRequest, "", "amount"},
		{"no key", call{method: http.MethodPost, path: "/v1/charges/" + hold.ID + "/void"}, http.StatusBadRequest, msgKeyMissing, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, tt.call)

			require.Equal(t, tt.status, r.status, "body: %s", r.body)
			p := decode[problem](t, r)
			if tt.detail != "" {
				require.Equal(t, tt.detail, p.Detail)
			}
			require.Equal(t, tt.param, p.Param)
		})
	}
	require.Equal(t, hold, f.p.Charges()[0])
	require.Equal(t, ChargeAuthorized, f.p.Charges()[1].Status)
	require.Equal(t, http.StatusOK, f.do(t, captureCall("k", hold.ID, captureBodyOf(1000))).status, "no refusal used the key")
}

func TestHold_EveryMoveSendsItsEvent(t *testing.T) {
	a := newReceiver(t, always(http.StatusOK))
	f := newFixture(t, Config{HoldWindow: time.Hour, Webhooks: webhookConfig(a.srv.URL)})
	toCapture, toVoid, toExpire := authorize(t, f, 1000), authorize(t, f, 2000), authorize(t, f, 3000)
	capturedNow := decode[Charge](t, f.do(t, captureCall("c1", toCapture.ID, captureBodyOf(400))))
	voidedNow := decode[Charge](t, f.do(t, voidCall("v1", toVoid.ID, "")))
	f.clock.Advance(time.Hour)
	f.do(t, get("/v1/charges/"+toExpire.ID))

	awaitDeliveries(t, f.p, 6)

	got := map[string][]Charge{}
	for _, ev := range a.received() {
		got[ev.event.Type] = append(got[ev.event.Type], ev.event.charge(t))
	}
	require.ElementsMatch(t, []Charge{toCapture, toVoid, toExpire}, got[webhook.EventChargeAuthorized])
	require.Equal(t, []Charge{capturedNow}, got[webhook.EventChargeCaptured])
	require.Equal(t, []Charge{voidedNow}, got[webhook.EventChargeVoided])
	require.Len(t, got[webhook.EventChargeExpired], 1)
	require.Equal(t, toExpire.ID, got[webhook.EventChargeExpired][0].ID)
	require.Equal(t, ChargeExpired, got[webhook.EventChargeExpired][0].Status)
	f.do(t, get("/v1/charges/"+toExpire.ID))
	require.Len(t, f.p.Webhooks().Deliveries, 6, "a hold expires once")
}
