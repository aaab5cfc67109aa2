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

func testRefund() provider.RefundRequest {
	return provider.RefundRequest{
		Key:               "01a1d96d-0000-7000-8000-9df969c1d378",
		ChargeID:          "pi_000001",
		Amount:            1250,
		Currency:          "TRY",
		Reason:            "customer returned the book",
		MerchantReference: "bookstore-refund-01a1d96d00007000800009df969c1d378",
	}
}

// stripeRefund is a Stripe refund of testRefund in the given status, with
// extra members appended.
func stripeRefund(id, status string, created int64, extra string) string {
	req := testRefund()
	return fmt.Sprintf(`{"id":%q,"object":"refund","amount":%d,"currency":"try","status":%q,"created":%d,`+
		`"payment_intent":%q,"metadata":{"merchant_reference":%q}%s}`, id, req.Amount, status, created, req.ChargeID, req.MerchantReference, extra)
}

func TestClient_RefundSendsTheRefundOfThePaymentIntentUnderTheKey(t *testing.T) {
	cases := []struct {
		reason, stripeReason string
	}{
		{"customer returned the book", ""},
		{"duplicate", "duplicate"},
		{"requested_by_customer", "requested_by_customer"},
		{"", ""},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			srv := newServer(t, reply{status: http.StatusOK, body: stripeRefund("re_1", "succeeded", 1764583200, "")})
			req := testRefund()
			req.Reason = tc.reason

			res := newClient(t, srv.URL).Refund(context.Background(), req)

			require.Equal(t, provider.Approved, res.Outcome, res.Detail)
			form := *srv.form.Load()
			require.Equal(t, "pi_000001", form.Get("payment_intent"))
			require.Equal(t, "1250", form.Get("amount"))
			require.Equal(t, req.MerchantReference, form.Get("metadata[merchant_reference]"))
			require.Equal(t, tc.reason, form.Get("metadata[reason]"), "our reason travels whole in the metadata")
			require.Equal(t, tc.stripeReason, form.Get("reason"), "Stripe's reason only when ours is one of its values")
			require.False(t, form.Has("currency"), "the currency is the PaymentIntent's")
			require.False(t, form.Has("charge"))
			require.Equal(t, req.Key, *srv.key.Load())
		})
	}
}

func TestClient_RefundMapsStripesAnswersToOutcomes(t *testing.T) {
	invalid := func(code, param string) string {
		return fmt.Sprintf(`{"error":{"type":"invalid_request_error","code":%q,"param":%q,"message":"from the test server"}}`, code, param)
	}
	cases := []struct {
		name       string
		reply      reply
		want       provider.Outcome
		status     string
		reason     string
		decline    string
		notProc    bool
		replayed   bool
		withRefund bool
	}{
		{name: "succeeded", reply: reply{status: 200, body: stripeRefund("re_1", "succeeded", 1764583200, "")},
			want: provider.Approved, status: provider.RefundSucceeded, withRefund: true},
		{name: "replayed", reply: reply{status: 200, header: map[string]string{"Idempotent-Replayed": "true"}, body: stripeRefund("re_1", "succeeded", 1764583200, "")},
			want: provider.Approved, status: provider.RefundSucceeded, withRefund: true, replayed: true},
		{name: "pending", reply: reply{status: 200, body: stripeRefund("re_1", "pending", 1764583200, "")},
			want: provider.Approved, status: provider.RefundPending, withRefund: true},
		{name: "requires_action is pending", reply: reply{status: 200, body: stripeRefund("re_1", "requires_action", 1764583200, "")},
			want: provider.Approved, status: provider.RefundPending, withRefund: true},
		{name: "failed is declined with Stripe's reason", reply: reply{status: 200, body: stripeRefund("re_1", "failed", 1764583200, `,"failure_reason":"lost_or_stolen_card"`)},
			want: provider.Declined, status: provider.RefundFailed, reason: "lost_or_stolen_card", decline: "lost_or_stolen_card", withRefund: true},
		{name: "canceled is failed", reply: reply{status: 200, body: stripeRefund("re_1", "canceled", 1764583200, "")},
			want: provider.Declined, status: provider.RefundFailed, reason: "canceled", decline: "canceled", withRefund: true},
		{name: "failed without a reason is unknown", reply: reply{status: 200, body: stripeRefund("re_1", "failed", 1764583200, "")},
			want: provider.Declined, status: provider.RefundFailed, reason: "unknown", decline: "unknown", withRefund: true},
		{name: "an undocumented status breaks the contract", reply: reply{status: 200, body: stripeRefund("re_1", "reversed", 1764583200, "")},
			want: provider.ContractViolation},
		{name: "another PaymentIntent's refund breaks the contract", reply: reply{status: 200, body: strings.Replace(stripeRefund("re_1", "succeeded", 1764583200, ""), "pi_000001", "pi_000009", 1)},
			want: provider.ContractViolation},
		{name: "another amount breaks the contract", reply: reply{status: 200, body: strings.Replace(stripeRefund("re_1", "succeeded", 1764583200, ""), `"amount":1250`, `"amount":1251`, 1)},
			want: provider.ContractViolation},
		{name: "another currency breaks the contract", reply: reply{status: 200, body: strings.Replace(stripeRefund("re_1", "succeeded", 1764583200, ""), `"try"`, `"eur"`, 1)},
			want: provider.ContractViolation},
		{name: "another reference breaks the contract", reply: reply{status: 200, body: strings.Replace(stripeRefund("re_1", "succeeded", 1764583200, ""), "bookstore-refund-", "other-", 1)},
			want: provider.ContractViolation},
		{name: "charge_already_refunded is a refusal", reply: reply{status: 400, body: invalid("charge_already_refunded", "")},
			want: provider.Declined, decline: "charge_already_refunded"},
		{name: "amount_too_large is a refusal", reply: reply{status: 400, body: invalid("amount_too_large", "amount")},
			want: provider.Declined, decline: "amount_too_large"},
		{name: "charge_not_refundable is a refusal", reply: reply{status: 400, body: invalid("charge_not_refundable", "payment_intent")},
			want: provider.Declined, decline: "charge_not_refundable"},
		{name: "charge_disputed is a refusal", reply: reply{status: 400, body: invalid("charge_disputed", "")},
			want: provider.Declined, decline: "charge_disputed"},
		{name: "no such PaymentIntent refunds nothing", reply: reply{status: 400, body: invalid("resource_missing", "payment_intent")},
			want: provider.Declined, decline: "charge_not_refundable", notProc: true},
		{name: "another 400 is our bug", reply: reply{status: 400, body: invalid("parameter_invalid", "currency")},
			want: provider.InvalidRequest, notProc: true},
		{name: "409 key in use", reply: reply{status: 409, body: `{"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}}`},
			want: provider.InFlight},
		{name: "400 key reused", reply: reply{status: 400, body: `{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters."}}`},
			want: provider.ContractViolation},
		{name: "429", reply: reply{status: 429, body: `{"error":{"type":"invalid_request_error","code":"rate_limit"}}`},
			want: provider.RateLimited, notProc: true},
		{name: "500 may hide a refund", reply: reply{status: 500, body: `{"error":{"type":"api_error"}}`},
			want: provider.Unavailable},
		{name: "200 unreadable", reply: reply{status: 200, body: `{"id":`},
			want: provider.ContractViolation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.reply)

			res := newClient(t, srv.URL).Refund(context.Background(), testRefund())

			require.Equal(t, tc.want, res.Outcome, res.Detail)
			require.Equal(t, tc.reply.status, res.StatusCode)
			require.True(t, res.Sent)
			require.Equal(t, tc.notProc, res.NotProcessed())
			require.Equal(t, tc.replayed, res.Replayed)
			require.Equal(t, tc.decline, res.DeclineCode)
			require.EqualValues(t, 1, srv.hits.Load(), "one request, no retries by the library")
			if !tc.withRefund {
				require.Nil(t, res.Refund)
				return
			}
			req := testRefund()
			require.Equal(t, &provider.Refund{
				ID: "re_1", ChargeID: req.ChargeID, Status: tc.status, FailureReason: tc.reason,
				Amount: req.Amount, Currency: "TRY", MerchantReference: req.MerchantReference,
				Created: time.Unix(1764583200, 0).UTC(),
			}, res.Refund)
		})
	}
}

func TestClient_RefundRefusesABadRequestWithoutSending(t *testing.T) {
	srv := newServer(t, reply{status: 200, body: stripeRefund("re_1", "succeeded", 1764583200, "")})
	for _, change := range []func(*provider.RefundRequest){
		func(r *provider.RefundRequest) { r.Key = "" },
		func(r *provider.RefundRequest) { r.Key = strings.Repeat("k", 256) },
		func(r *provider.RefundRequest) { r.ChargeID = "" },
		func(r *provider.RefundRequest) { r.MerchantReference = "" },
		func(r *provider.RefundRequest) { r.Reason = strings.Repeat("r", 501) },
		func(r *provider.RefundRequest) { r.Amount = 0 },
		func(r *provider.RefundRequest) { r.Currency = "try" },
	} {
		req := testRefund()
		change(&req)
		res := newClient(t, srv.URL).Refund(context.Background(), req)
		require.Equal(t, provider.InvalidRequest, res.Outcome)
		require.False(t, res.Sent)
		require.True(t, res.NotProcessed())
	}
	require.Zero(t, srv.hits.Load())
}

func TestClient_RefundWithoutAnAnswerIsUnknown(t *testing.T) {
	blocking := newServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))

	res := newClient(t, blocking.URL).Refund(context.Background(), testRefund())

	require.Equal(t, provider.Timeout, res.Outcome, res.Detail)
	require.True(t, res.Sent)
	require.False(t, res.NotProcessed(), "the money may have gone back")
}

func TestClient_FindRefundsListsThePaymentIntentsRefundsAndKeepsTheReferences(t *testing.T) {
	req := testRefund()
	list := `{"object":"list","has_more":false,"url":"/v1/refunds","data":[` +
		stripeRefund("re_3", "succeeded", 1764583300, "") + `,` +
		strings.Replace(stripeRefund("re_2", "succeeded", 1764583250, ""), "bookstore-refund-", "another-refund-", 1) + `,` +
		stripeRefund("re_1", "failed", 1764583200, `,"failure_reason":"expired_or_canceled_card"`) + `]}`
	srv := newServer(t, reply{status: 200, body: list})

	found, err := newClient(t, srv.URL).FindRefunds(context.Background(), req.ChargeID, req.MerchantReference)

	require.NoError(t, err)
	require.Equal(t, "pi_000001", srv.form.Load().Get("payment_intent"))
	require.Len(t, found, 2, "another refund of the PaymentIntent is not this reference's")
	require.Equal(t, "re_1", found[0].ID, "oldest first")
	require.Equal(t, provider.RefundFailed, found[0].Status)
	require.Equal(t, "expired_or_canceled_card", found[0].FailureReason)
	require.Equal(t, "re_3", found[1].ID)
	require.Equal(t, provider.RefundSucceeded, found[1].Status)
}

func TestClient_FindRefundsClassifiesFailures(t *testing.T) {
	req := testRefund()
	cases := []struct {
		name  string
		reply reply
		want  provider.Outcome
	}{
		{"another PaymentIntent's refund", reply{status: 200, body: `{"data":[` + strings.Replace(stripeRefund("re_1", "succeeded", 1, ""), "pi_000001", "pi_9", 1) + `]}`}, provider.ContractViolation},
		{"an undocumented status", reply{status: 200, body: `{"data":[` + stripeRefund("re_1", "reversed", 1, "") + `]}`}, provider.ContractViolation},
		{"429", reply{status: 429, body: `{"error":{"type":"invalid_request_error","code":"rate_limit"}}`}, provider.RateLimited},
		{"503", reply{status: 503, body: `{"error":{"type":"api_error"}}`}, provider.Unavailable},
		{"404", reply{status: 404, body: `{"error":{"type":"invalid_request_error","code":"resource_missing"}}`}, provider.NotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.reply)

			_, err := newClient(t, srv.URL).FindRefunds(context.Background(), req.ChargeID, req.MerchantReference)

			var perr *provider.Error
			require.ErrorAs(t, err, &perr)
			require.Equal(t, tc.want, perr.Outcome, perr.Detail)
			require.Equal(t, "find refunds", perr.Op)
		})
	}
}
