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

// postRefundCall is the call for POST /v1/refunds with a key sent as a
// String.
func postRefundCall(key, body string) call {
	return call{method: http.MethodPost, path: refundPath, key: sfString(key), body: body}
}

// refundBody is a valid refund request body for a TRY charge.
func refundBody(charge string, amount int64, reference string) string {
	return fmt.Sprintf(`{"charge":%q,"amount":%d,"currency":"TRY","reason":"customer returned the book","merchant_reference":%q}`,
		charge, amount, reference)
}

// paidCharge makes a succeeded charge of amount and returns its id.
func paidCharge(t *testing.T, f *fixture, amount int64) string {
	t.Helper()
	n := len(f.p.Charges()) + 1
	r := f.do(t, post(fmt.Sprintf("charge-key-%d", n), chargeBody(amount, "tok_visa", fmt.Sprintf("order-%d", n))))
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	return decode[Charge](t, r).ID
}

func ptr[T any](v T) *T { return &v }

func TestPostRefund_NewKeyCreatesASucceededRefund(t *testing.T) {
	f := newFixture(t, Config{})
	charge := paidCharge(t, f, 54890)

	r := f.do(t, postRefundCall("refund-key-1", refundBody(charge, 1250, "shop-refund-1")))

	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, contentTypeJSON, r.header.Get("Content-Type"))
	want := Refund{
		ID: "re_000001", Object: "refund", Charge: charge, Amount: 1250, Currency: "TRY", Status: RefundSucceeded,
		Reason: "customer returned the book", MerchantReference: "shop-refund-1", IdempotencyKey: "refund-key-1",
		Created: f.clock.Now(),
	}
	require.Equal(t, want, decode[Refund](t, r))
	require.Contains(t, string(r.body), `"failure_reason":null`)
	require.Equal(t, []Refund{want}, f.p.Refunds())

	byID := f.do(t, get("/v1/refunds/re_000001"))
	require.Equal(t, http.StatusOK, byID.status)
	require.Equal(t, want, decode[Refund](t, byID))

	list := f.do(t, get("/v1/refunds?merchant_reference=shop-refund-1"))
	require.Equal(t, http.StatusOK, list.status)
	require.Equal(t, refundList{Object: "list", Data: []Refund{want}}, decode[refundList](t, list))

	recs := f.p.RefundRequests()
	require.Len(t, recs, 1)
	require.Equal(t, charge, recs[0].ChargeID)
	require.Equal(t, "re_000001", recs[0].RefundID)
	require.Equal(t, outcomeRefundCreated, recs[0].Outcome)
}

func TestPostRefund_PartialRefundsUpToTheChargeThenRefusals(t *testing.T) {
	f := newFixture(t, Config{})
	charge := paidCharge(t, f, 1000)

	require.Equal(t, http.StatusCreated, f.do(t, postRefundCall("k1", refundBody(charge, 600, "ref-1"))).status)
	tooLarge := f.do(t, postRefundCall("k2", refundBody(charge, 401, "ref-2")))
	rest := f.do(t, postRefundCall("k3", refundBody(charge, 400, "ref-3")))
	already := f.do(t, postRefundCall("k4", refundBody(charge, 1, "ref-4")))

	p := requireProblem(t, tooLarge, http.StatusPaymentRequired, refusalDetails[codeRefundTooLarge])
	require.Equal(t, codeRefundTooLarge, p.Code)
	require.Equal(t, charge, p.ChargeID)
	require.Equal(t, "re_000002", p.RefundID)
	require.Equal(t, http.StatusCreated, rest.status, "body: %s", rest.body)
	p = requireProblem(t, already, http.StatusPaymentRequired, refusalDetails[codeChargeAlreadyRefunded])
	require.Equal(t, codeChargeAlreadyRefunded, p.Code)

	refunds := f.p.Refunds()
	require.Len(t, refunds, 4)
	require.Equal(t, RefundFailed, refunds[1].Status)
	require.Equal(t, ptr(string(codeRefundTooLarge)), refunds[1].FailureReason, "a refusal is a failed refund that a lookup finds")
	require.Equal(t, RefundFailed, refunds[3].Status)
	list := decode[refundList](t, f.do(t, get("/v1/refunds?merchant_reference=ref-2")))
	require.Equal(t, []Refund{refunds[1]}, list.Data)

	replay := f.do(t, postRefundCall("k2", refundBody(charge, 401, "ref-2")))
	require.Equal(t, http.StatusPaymentRequired, replay.status)
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	require.Equal(t, tooLarge.body, replay.body)
	require.Len(t, f.p.Refunds(), 4, "a replayed refusal makes nothing")
}

func TestPostRefund_AChargeThatCannotBeRefunded(t *testing.T) {
	f := newFixture(t, Config{})
	declined := f.do(t, post("declined", chargeBody(1000, "tok_chargeDeclined", "order-1")))
	require.Equal(t, http.StatusPaymentRequired, declined.status)
	paid := paidCharge(t, f, 1000)

	tests := []struct {
		name string
		body string
		code problemCode
	}{
		{"unknown charge", refundBody("ch_999999", 100, "r1"), codeChargeNotRefundable},
		{"declined charge", refundBody("ch_000001", 100, "r2"), codeChargeNotRefundable},
		{"another currency", strings.Replace(refundBody(paid, 100, "r3"), `"TRY"`, `"EUR"`, 1), codeCurrencyMismatch},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, postRefundCall(fmt.Sprintf("key-%d", i), tt.body))

			p := requireProblem(t, r, http.StatusPaymentRequired, refusalDetails[tt.code])
			require.Equal(t, tt.code, p.Code)
		})
	}
	for _, r := range f.p.Refunds() {
		require.Equal(t, RefundFailed, r.Status)
	}
	require.Equal(t, http.StatusCreated, f.do(t, postRefundCall("key-ok", refundBody(paid, 1000, "r4"))).status,
		"refusals hold nothing back from the charge")
}

func TestPostRefund_SameKeyWithAnotherBodyIs422AndChangesNothing(t *testing.T) {
	f := newFixture(t, Config{})
	charge := paidCharge(t, f, 1000)
	first := f.do(t, postRefundCall("k1", refundBody(charge, 100, "ref-1")))
	require.Equal(t, http.StatusCreated, first.status)

	other := f.do(t, postRefundCall("k1", refundBody(charge, 200, "ref-1")))
	chargeUnderRefundKey := f.do(t, post("k1", chargeBody(100, "tok_visa", "ref-1")))
	refundUnderChargeKey := f.do(t, postRefundCall("charge-key-1", refundBody(charge, 100, "ref-1")))

	for _, r := range []reply{other, chargeUnderRefundKey, refundUnderChargeKey} {
		p := requireProblem(t, r, http.StatusUnprocessableEntity, msgKeyReused)
		require.Equal(t, codeKeyReused, p.Code)
	}
	require.Len(t, f.p.Refunds(), 1)
	require.Len(t, f.p.Charges(), 1)

	reordered := `{"merchant_reference":"ref-1","reason":"customer returned the book","currency":"TRY","amount":100,"charge":"` + charge + `"}`
	replay := f.do(t, postRefundCall("k1", reordered))
	require.Equal(t, http.StatusCreated, replay.status)
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.body, replay.body)
}

func TestPostRefund_InvalidRequestIsRefusedNamingTheFieldAndStoresNothing(t *testing.T) {
	f := newFixture(t, Config{})
	charge := paidCharge(t, f, 1000)
	valid := refundBody(charge, 100, "ref-1")
	long := strings.Repeat("x", 256)
	tests := []struct {
		name, key, body, param, detail string
	}{
		{"no charge", "k", `{"amount":100,"currency":"TRY","merchant_reference":"r"}`, "charge", msgRefundChargeMissing},
		{"long charge", "k", refundBody(long, 100, "r"), "charge", msgRefundChargeTooLong},
		{"zero amount", "k", refundBody(charge, 0, "r"), "amount", msgAmount},
		{"amount as a string", "k", strings.Replace(valid, `"amount":100`, `"amount":"1.00"`, 1), "amount", ""},
		{"huge amount", "k", refundBody(charge, 100000000, "r"), "amount", msgAmountTooLarge},
		{"no currency", "k", strings.Replace(valid, `"currency":"TRY",`, ``, 1), "currency", msgCurrency},
		{"lower-case currency", "k", strings.Replace(valid, `"TRY"`, `"try"`, 1), "currency", msgCurrency},
		{"no reference", "k", refundBody(charge, 100, ""), "merchant_reference", msgReferenceMissing},
		{"long reference", "k", refundBody(charge, 100, long), "merchant_reference", msgReferenceTooLong},
		{"long reason", "k", strings.Replace(valid, "customer returned the book", strings.Repeat("é", 1001), 1), "reason", msgReasonLong},
		{"unknown field", "k", strings.Replace(valid, `{`, `{"source":"tok_visa",`, 1), "source", ""},
		{"no key", "", valid, "", msgKeyMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := postRefundCall(tt.key, tt.body)
			if tt.key == "" {
				c.key = ""
			}
			r := f.do(t, c)

			require.Equal(t, http.StatusBadRequest, r.status, "body: %s", r.body)
			p := decode[problem](t, r)
			require.Equal(t, tt.param, p.Param)
			if tt.detail != "" {
				require.Equal(t, tt.detail, p.Detail)
			}
		})
	}
	require.Empty(t, f.p.Refunds())
	require.Equal(t, http.StatusCreated, f.do(t, postRefundCall("k", refundBody(charge, 200, "r"))).status,
		"nothing was stored under the key")
}

func TestGetRefund_UnknownIDIs404(t *testing.T) {
	f := newFixture(t, Config{})

	p := requireProblem(t, f.do(t, get("/v1/refunds/re_000001")), http.StatusNotFound, msgRefundNotFound)
	require.Equal(t, codeNotFound, p.Code)
}

func TestListRefunds_OldestFirstEmptyWhenNoneAndTheParameterOnce(t *testing.T) {
	f := newFixture(t, Config{})
	charge := paidCharge(t, f, 1000)
	for i := range 3 {
		f.clock.Advance(time.Second)
		require.Equal(t, http.StatusCreated, f.do(t, postRefundCall(fmt.Sprint("k", i), refundBody(charge, 100, fmt.Sprint("ref-", i%2)))).status)
	}

	list := decode[refundList](t, f.do(t, get("/v1/refunds?merchant_reference=ref-0")))
	none := f.do(t, get("/v1/refunds?merchant_reference=nobody"))

	require.Equal(t, []string{"re_000001", "re_000003"}, []string{list.Data[0].ID, list.Data[1].ID})
	require.JSONEq(t, `{"object":"list","data":[]}`, string(none.body))
	for _, q := range []string{"", "?merchant_reference=", "?merchant_reference=a&merchant_reference=b"} {
		p := requireProblem(t, f.do(t, get("/v1/refunds"+q)), http.StatusBadRequest, msgReferenceParam)
		require.Equal(t, "merchant_reference", p.Param)
	}
}

func TestListRefunds_SharesTheLookupRateWithCharges(t *testing.T) {
	f := newFixture(t, Config{LookupRate: 2})
	require.Equal(t, http.StatusOK, f.do(t, get("/v1/charges?merchant_reference=r")).status)
	require.Equal(t, http.StatusOK, f.do(t, get("/v1/refunds?merchant_reference=r")).status)

	r := f.do(t, get("/v1/refunds?merchant_reference=r"))

	requireProblem(t, r, http.StatusTooManyRequests, msgLookupLimited)
	require.Equal(t, "1", r.header.Get("Retry-After"))
}

func TestPostRefund_SlowModeAnswers409WhileInFlightThenTheReplay(t *testing.T) {
	f := newFixture(t, Config{})
	charge := paidCharge(t, f, 1000)
	require.NoError(t, f.p.SetMode(Mode{Name: ModeSlow, Delay: 5 * time.Second}))
	body := refundBody(charge, 100, "ref-1")
	firstReply := make(chan reply, 1)
	go func() {
		r, _ := f.send(context.Background(), f.client, postRefundCall("k1", body))
		firstReply <- r
	}()
	f.gate.awaitWait(t)

	inFlight := f.do(t, postRefundCall("k1", body))

	requireProblem(t, inFlight, http.StatusConflict, msgKeyInFlight)
	require.Equal(t, "1", inFlight.header.Get("Retry-After"))
	require.Empty(t, f.p.Refunds())
	f.gate.Open()
	first := <-firstReply
	require.Equal(t, http.StatusCreated, first.status)
	replay := f.do(t, postRefundCall("k1", body))
	require.Equal(t, first.body, replay.body)
	require.Len(t, f.p.Refunds(), 1)
}

func TestPostRefund_ChaosModesApply(t *testing.T) {
	tests := []struct {
		mode   ModeName
		status int
		detail string
	}{
		{ModeError, http.StatusServiceUnavailable, msgUnavailable},
		{ModeRateLimit, http.StatusTooManyRequests, msgRateLimited},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			f := newFixture(t, Config{})
			charge := paidCharge(t, f, 1000)
			require.NoError(t, f.p.SetMode(Mode{Name: tt.mode, Rate: 1}))

			r := f.do(t, postRefundCall("k1", refundBody(charge, 100, "ref-1")))

			requireProblem(t, r, tt.status, tt.detail)
			require.Empty(t, f.p.Refunds())
		})
	}
	t.Run("drop", func(t *testing.T) {
		f := newFixture(t, Config{})
		charge := paidCharge(t, f, 1000)
		require.NoError(t, f.p.SetMode(Mode{Name: ModeDrop, Delay: time.Second}))
		done := make(chan reply, 1)
		go func() {
			r, _ := f.send(context.Background(), f.client, postRefundCall("k1", refundBody(charge, 100, "ref-1")))
			done <- r
		}()
		require.Equal(t, time.Second, f.gate.awaitWait(t))
		f.gate.Open()

		requireProblem(t, <-done, http.StatusGatewayTimeout, msgTimeout)
		require.Empty(t, f.p.Refunds())
	})
	t.Run("lost_response", func(t *testing.T) {
		f := newFixture(t, Config{})
		charge := paidCharge(t, f, 1000)
		require.NoError(t, f.p.SetMode(Mode{Name: ModeLostResponse, Rate: 1}))
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		body := refundBody(charge, 100, "ref-1")

		_, err := f.send(context.Background(), client, postRefundCall("k1", body))

		require.Error(t, err)
		require.False(t, errors.Is(err, context.DeadlineExceeded))
		require.Len(t, f.p.Refunds(), 1, "refunded, with the answer lost")
		retry, err := f.send(context.Background(), client, postRefundCall("k1", body))
		require.NoError(t, err)
		require.Equal(t, "true", retry.header.Get("Idempotent-Replayed"))
		require.Equal(t, "re_000001", decode[Refund](t, retry).ID)
		require.Len(t, f.p.Refunds(), 1)
	})
}

func TestPostRefund_TheKeyIsForgottenAfterRetention(t *testing.T) {
	f := newFixture(t, Config{Retention: time.Hour})
	charge := paidCharge(t, f, 1000)
	require.Equal(t, http.StatusCreated, f.do(t, postRefundCall("k1", refundBody(charge, 100, "ref-1"))).status)
	f.clock.Advance(time.Hour)

	again := f.do(t, postRefundCall("k1", refundBody(charge, 100, "ref-1")))

	require.Equal(t, http.StatusCreated, again.status)
	require.Empty(t, again.header.Get("Idempotent-Replayed"))
	require.Len(t, f.p.Refunds(), 2, "a forgotten key refunds again, as at a real provider")
}

func TestPostRefund_SendsRefundSucceededAndARefusalRefundFailed(t *testing.T) {
	a := newReceiver(t, always(http.StatusOK))
	f := newFixture(t, Config{Webhooks: webhookConfig(a.srv.URL)})
	charge := paidCharge(t, f, 1000)

	made := decode[Refund](t, f.do(t, postRefundCall("k1", refundBody(charge, 1000, "ref-1"))))
	f.do(t, postRefundCall("k2", refundBody(charge, 1, "ref-2")))

	deliveries := awaitDeliveries(t, f.p, 3)
	byType := map[string]Refund{}
	for _, ev := range a.received() {
		if strings.HasPrefix(ev.event.Type, "refund.") {
			byType[ev.event.Type] = ev.event.refund(t)
		}
	}
	require.Equal(t, made, byType[webhook.EventRefundSucceeded])
	require.Equal(t, ptr(string(codeChargeAlreadyRefunded)), byType[webhook.EventRefundFailed].FailureReason)
	byRefund := map[string]Delivery{}
	for _, d := range deliveries {
		byRefund[d.RefundID] = d
	}
	require.Equal(t, charge, byRefund["re_000001"].ChargeID)
	require.Equal(t, webhook.EventRefundSucceeded, byRefund["re_000001"].Type)
	require.Equal(t, webhook.EventRefundFailed, byRefund["re_000002"].Type)
}

// settleCall is the admin call that settles a refund.
func settleCall(id, body string) call {
	return call{method: http.MethodPost, path: "/_admin/refunds/" + id + "/settle", body: body}
}

func TestHeldRefunds_StayPendingHoldTheAmountAndSettleThroughTheAdminAPI(t *testing.T) {
	a := newReceiver(t, always(http.StatusOK))
	f := newFixture(t, Config{Webhooks: webhookConfig(a.srv.URL)})
	charge := paidCharge(t, f, 1000)
	hold := f.do(t, call{method: http.MethodPut, path: "/_admin/refunds/hold", body: `{"hold":true}`})
	require.Equal(t, http.StatusOK, hold.status)
	require.JSONEq(t, `{"hold":true}`, string(hold.body))
	require.True(t, f.p.RefundsHeld())

	first := f.do(t, postRefundCall("k1", refundBody(charge, 700, "ref-1")))
	require.Equal(t, http.StatusCreated, first.status)
	require.Equal(t, RefundPending, decode[Refund](t, first).Status)
	over := f.do(t, postRefundCall("k2", refundBody(charge, 301, "ref-2")))
	require.Equal(t, codeRefundTooLarge, decode[problem](t, over).Code, "a pending refund holds its amount")
	f.clock.Advance(time.Minute)

	settled := f.do(t, settleCall("re_000001", `{"status":"succeeded"}`))

	require.Equal(t, http.StatusOK, settled.status, "body: %s", settled.body)
	want := decode[Refund](t, first)
	want.Status = RefundSucceeded
	require.Equal(t, want, decode[Refund](t, settled))
	require.Equal(t, want, decode[Refund](t, f.do(t, get("/v1/refunds/re_000001"))))
	replay := f.do(t, postRefundCall("k1", refundBody(charge, 700, "ref-1")))
	require.Equal(t, first.body, replay.body, "a replay is the first answer, pending")
	awaitDeliveries(t, f.p, 3)
	var refundEvents []receivedEvent
	for _, ev := range a.received() {
		if strings.HasPrefix(ev.event.Type, "refund.") {
			refundEvents = append(refundEvents, ev.event)
		}
	}
	require.Len(t, refundEvents, 2, "a pending refund sends no event; the refusal and the settlement do")
	require.Contains(t, refundEvents, receivedEvent{Type: webhook.EventRefundSucceeded, Data: settled.body})
}

func TestHeldRefunds_APendingRefundThatFailsGivesTheAmountBack(t *testing.T) {
	a := newReceiver(t, always(http.StatusOK))
	f := newFixture(t, Config{Webhooks: webhookConfig(a.srv.URL)})
	charge := paidCharge(t, f, 1000)
	f.p.HoldRefunds(true)
	require.Equal(t, http.StatusCreated, f.do(t, postRefundCall("k1", refundBody(charge, 1000, "ref-1"))).status)

	failed, err := f.p.SettleRefund("re_000001", RefundFailed, "lost_or_stolen_card")

	require.NoError(t, err)
	require.Equal(t, RefundFailed, failed.Status)
	require.Equal(t, ptr("lost_or_stolen_card"), failed.FailureReason)
	var types []string
	for _, d := range awaitDeliveries(t, f.p, 2) {
		types = append(types, d.Type)
	}
	require.ElementsMatch(t, []string{webhook.EventChargeSucceeded, webhook.EventRefundFailed}, types)
	f.p.HoldRefunds(false)
	require.Equal(t, RefundSucceeded, decode[Refund](t, f.do(t, postRefundCall("k2", refundBody(charge, 1000, "ref-2")))).Status)
}

func TestSettleRefund_ASucceededRefundCanFailLater(t *testing.T) {
	a := newReceiver(t, always(http.StatusOK))
	f := newFixture(t, Config{Webhooks: webhookConfig(a.srv.URL)})
	charge := paidCharge(t, f, 1000)
	require.Equal(t, http.StatusCreated, f.do(t, postRefundCall("k1", refundBody(charge, 400, "ref-1"))).status)
	f.clock.Advance(24 * time.Hour)

	r := f.do(t, settleCall("re_000001", `{"status":"failed","failure_reason":"expired_or_canceled_card"}`))

	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	failed := decode[Refund](t, r)
	require.Equal(t, RefundFailed, failed.Status)
	require.Equal(t, ptr("expired_or_canceled_card"), failed.FailureReason)
	require.Equal(t, []Refund{failed}, decode[refundList](t, f.do(t, get("/_admin/refunds"))).Data)
	awaitDeliveries(t, f.p, 3)
	var events []receivedEvent
	for _, ev := range a.received() {
		events = append(events, ev.event)
	}
	require.Contains(t, events, receivedEvent{Type: webhook.EventRefundFailed, Data: r.body})
}

func TestSettleRefund_RefusesWhatNoRefundCanDoAndChangesNothing(t *testing.T) {
	f := newFixture(t, Config{})
	charge := paidCharge(t, f, 1000)
	f.do(t, postRefundCall("k1", refundBody(charge, 1000, "ref-1")))
	f.do(t, postRefundCall("k2", refundBody(charge, 1, "ref-2")))
	before := f.p.Refunds()

	tests := []struct {
		name, id, body string
		status         int
		param          string
	}{
		{"unknown refund", "re_000009", `{"status":"succeeded"}`, http.StatusNotFound, ""},
		{"unknown status", "re_000001", `{"status":"refunded"}`, http.StatusBadRequest, "status"},
		{"back to pending", "re_000001", `{"status":"pending"}`, http.StatusBadRequest, "status"},
		{"failed without a reason", "re_000001", `{"status":"failed"}`, http.StatusBadRequest, "failure_reason"},
		{"succeeded with a reason", "re_000001", `{"status":"succeeded","failure_reason":"x"}`, http.StatusBadRequest, "failure_reason"},
		{"succeeded again", "re_000001", `{"status":"succeeded"}`, http.StatusBadRequest, "status"},
		{"a refusal succeeds", "re_000002", `{"status":"succeeded"}`, http.StatusBadRequest, "status"},
		{"unknown field", "re_000001", `{"status":"failed","failure_reason":"x","when":"now"}`, http.StatusBadRequest, "when"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, settleCall(tt.id, tt.body))

			require.Equal(t, tt.status, r.status, "body: %s", r.body)
			require.Equal(t, tt.param, decode[problem](t, r).Param)
		})
	}
	require.Equal(t, before, f.p.Refunds())
}
