package ietf_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
)

const testRefundKey = "01a1d96d-0000-7000-8000-9df969c1d378"

func testRefund() provider.RefundRequest {
	return provider.RefundRequest{
		Key:               testRefundKey,
		ChargeID:          "ch_000001",
		Amount:            1250,
		Currency:          "TRY",
		Reason:            "customer returned the book",
		MerchantReference: "bookstore-refund-01a1d96d00007000800009df969c1d378",
	}
}

// refundObject is the contract's refund object for testRefund, with
// changes applied, as a test server would send it.
func refundObject(t testing.TB, change func(map[string]any)) string {
	req := testRefund()
	obj := map[string]any{
		"id": "re_000001", "object": "refund", "charge": req.ChargeID, "amount": req.Amount,
		"currency": req.Currency, "status": "succeeded", "failure_reason": nil, "reason": req.Reason,
		"merchant_reference": req.MerchantReference, "idempotency_key": req.Key, "created": "2026-11-30T10:00:00Z",
	}
	if change != nil {
		change(obj)
	}
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	return string(b)
}

func TestClient_RefundSendsTheContractRequest(t *testing.T) {
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
		reply{status: http.StatusCreated, body: refundObject(t, nil)}.ServeHTTP(w, r)
	}))

	res := newClient(t, srv.URL).Refund(context.Background(), testRefund())

	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	s := <-got
	require.Equal(t, http.MethodPost, s.method)
	require.Equal(t, "/v1/refunds", s.path)
	require.Equal(t, `"`+testRefundKey+`"`, s.key, "the key goes as a quoted Structured Field String, as a charge's")
	require.Equal(t, "application/json", s.contentType)
	require.Equal(t, map[string]any{
		"charge":             "ch_000001",
		"amount":             json.Number("1250"),
		"currency":           "TRY",
		"reason":             "customer returned the book",
		"merchant_reference": "bookstore-refund-01a1d96d00007000800009df969c1d378",
	}, s.body, "exactly the contract's fields, the amount an integer")
}

// A refund's answers are read by the charges' classifier: the rows below
// are the refund's own objects and refusals, and enough of the shared
// statuses to show that they are shared.
func TestClient_RefundClassifiesEveryResponse(t *testing.T) {
	problem := func(status int, extra string) string {
		return fmt.Sprintf(`{"type":"about:blank","title":%q,"status":%d,"detail":"from the test server"%s}`, http.StatusText(status), status, extra)
	}
	created := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	req := testRefund()
	refund := func(status, reason string) *provider.Refund {
		return &provider.Refund{ID: "re_000001", ChargeID: req.ChargeID, Status: status, FailureReason: reason,
			Amount: req.Amount, Currency: req.Currency, MerchantReference: req.MerchantReference, Created: created}
	}
	refusal := func(code string) *provider.Refund {
		r := refund(provider.RefundFailed, code)
		r.ID, r.Created = "re_000002", time.Time{}
		return r
	}
	cases := []struct {
		name            string
		reply           reply
		want            provider.Outcome
		wantRefund      *provider.Refund
		wantDeclineCode string
		wantReplayed    bool
		wantRetryAfter  time.Duration
		wantNotProc     bool
		wantDetail      string
	}{
		{name: "201 with the requested refund, succeeded, is approved",
			reply: reply{status: 201, body: refundObject(t, nil)},
			want:  provider.Approved, wantRefund: refund(provider.RefundSucceeded, "")},
		{name: "201 with the requested refund, pending, is approved and pending",
			reply: reply{status: 201, body: refundObject(t, func(m map[string]any) { m["status"] = "pending" })},
			want:  provider.Approved, wantRefund: refund(provider.RefundPending, "")},
		{name: "200 replay is approved and marked replayed",
			reply: reply{status: 200, header: map[string]string{"Idempotent-Replayed": "true"}, body: refundObject(t, nil)},
			want:  provider.Approved, wantRefund: refund(provider.RefundSucceeded, ""), wantReplayed: true},
		{name: "201 with a refund created failed is declined with its reason",
			reply: reply{status: 201, body: refundObject(t, func(m map[string]any) { m["status"], m["failure_reason"] = "failed", "lost_or_stolen_card" })},
			want:  provider.Declined, wantRefund: refund(provider.RefundFailed, "lost_or_stolen_card"), wantDeclineCode: "lost_or_stolen_card"},
		{name: "201 failed without a reason breaks the contract",
			reply: reply{status: 201, body: refundObject(t, func(m map[string]any) { m["status"] = "failed" })},
			want:  provider.ContractViolation, wantDetail: "failed without a failure_reason"},
		{name: "201 for another amount breaks the contract",
			reply: reply{status: 201, body: refundObject(t, func(m map[string]any) { m["amount"] = 1251 })},
			want:  provider.ContractViolation, wantDetail: "HTTP 201 with a refund that is not the one requested: amount 1251 TRY, want 1250 TRY"},
		{name: "201 of another charge breaks the contract",
			reply: reply{status: 201, body: refundObject(t, func(m map[string]any) { m["charge"] = "ch_000002" })},
			want:  provider.ContractViolation, wantDetail: `charge "ch_000002", want "ch_000001"`},
		{name: "201 for another reference breaks the contract",
			reply: reply{status: 201, body: refundObject(t, func(m map[string]any) { m["merchant_reference"] = "other" })},
			want:  provider.ContractViolation, wantDetail: "merchant_reference"},
		{name: "201 under another key breaks the contract",
			reply: reply{status: 201, body: refundObject(t, func(m map[string]any) { m["idempotency_key"] = "other" })},
			want:  provider.ContractViolation, wantDetail: "idempotency_key"},
		{name: "201 with a charge object breaks the contract",
			reply: reply{status: 201, body: chargeObject(t, nil)},
			want:  provider.ContractViolation, wantDetail: `object "charge", want "refund"`},
		{name: "201 with an unknown status breaks the contract",
			reply: reply{status: 201, body: refundObject(t, func(m map[string]any) { m["status"] = "requires_action" })},
			want:  provider.ContractViolation, wantDetail: `unknown status "requires_action"`},
		{name: "402 is a refusal with its code and its failed refund",
			reply: reply{status: 402, body: problem(402, `,"code":"charge_already_refunded","charge_id":"ch_000001","refund_id":"re_000002"`)},
			want:  provider.Declined, wantDeclineCode: "charge_already_refunded", wantRefund: refusal("charge_already_refunded"), wantDetail: "from the test server"},
		{name: "402 replayed is the same refusal",
			reply: reply{status: 402, header: map[string]string{"Idempotent-Replayed": "true"}, body: problem(402, `,"code":"amount_too_large","charge_id":"ch_000001","refund_id":"re_000002"`)},
			want:  provider.Declined, wantDeclineCode: "amount_too_large", wantRefund: refusal("amount_too_large"), wantReplayed: true},
		{name: "402 for another charge breaks the contract",
			reply: reply{status: 402, body: problem(402, `,"code":"charge_already_refunded","charge_id":"ch_000009","refund_id":"re_000002"`)},
			want:  provider.ContractViolation, wantDetail: `charge_id "ch_000009"`},
		{name: "402 without its refund breaks the contract",
			reply: reply{status: 402, body: problem(402, `,"code":"charge_not_refundable","charge_id":"ch_000001"`)},
			want:  provider.ContractViolation, wantDetail: `refund_id ""`},
		{name: "402 that is not a problem breaks the contract",
			reply: reply{status: 402, body: "<html>no</html>"},
			want:  provider.ContractViolation, wantDetail: "without a readable problem"},
		{name: "409 is in flight with its Retry-After",
			reply: reply{status: 409, header: map[string]string{"Retry-After": "1"}, body: problem(409, "")},
			want:  provider.InFlight, wantRetryAfter: time.Second},
		{name: "422 is our contract violation",
			reply: reply{status: 422, body: problem(422, "")},
			want:  provider.ContractViolation, wantDetail: "HTTP 422"},
		{name: "400 is an invalid request that processed nothing",
			reply: reply{status: 400, body: problem(400, "")},
			want:  provider.InvalidRequest, wantNotProc: true},
		{name: "429 is rate limited and processed nothing",
			reply: reply{status: 429, header: map[string]string{"Retry-After": "7"}},
			want:  provider.RateLimited, wantRetryAfter: 7 * time.Second, wantNotProc: true},
		{name: "503 is unavailable and processed nothing",
			reply: reply{status: 503},
			want:  provider.Unavailable, wantNotProc: true},
		{name: "502 is unavailable and may hide a refund",
			reply: reply{status: 502},
			want:  provider.Unavailable},
		{name: "an oversized body breaks the contract",
			reply: reply{status: 201, body: strings.Repeat(" ", 1<<20) + refundObject(t, nil)},
			want:  provider.ContractViolation, wantDetail: "exceeds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.reply)

			res := newClient(t, srv.URL).Refund(context.Background(), testRefund())

			require.Equal(t, tc.want, res.Outcome, res.Detail)
			require.Equal(t, tc.reply.status, res.StatusCode)
			require.True(t, res.Sent)
			require.Positive(t, res.Duration)
			require.EqualValues(t, 1, srv.hits.Load())
			require.Equal(t, tc.wantRefund, res.Refund)
			require.Equal(t, tc.wantDeclineCode, res.DeclineCode)
			require.Equal(t, tc.wantReplayed, res.Replayed)
			require.Equal(t, tc.wantRetryAfter, res.RetryAfter)
			require.Equal(t, tc.wantNotProc, res.NotProcessed())
			require.Contains(t, res.Detail, tc.wantDetail)
		})
	}
}

func TestClient_RefundWithoutAnAnswerIsUnknown(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(dropConnection))

	res := newClient(t, srv.URL).Refund(context.Background(), testRefund())

	require.Equal(t, provider.TransportError, res.Outcome, res.Detail)
	require.True(t, res.Sent)
	require.False(t, res.NotProcessed(), "the money may have gone back")
}

func TestClient_RefundRefusesABadRequestWithoutSending(t *testing.T) {
	cases := []struct {
		name   string
		change func(*provider.RefundRequest)
		detail string
	}{
		{"empty key", func(r *provider.RefundRequest) { r.Key = "" }, "idempotency key is empty"},
		{"key too long", func(r *provider.RefundRequest) { r.Key = strings.Repeat("k", 256) }, "more than 255"},
		{"key not printable ASCII", func(r *provider.RefundRequest) { r.Key = "clé" }, "not a Structured Field String"},
		{"no charge", func(r *provider.RefundRequest) { r.ChargeID = "" }, "charge id is empty"},
		{"zero amount", func(r *provider.RefundRequest) { r.Amount = 0 }, "not positive"},
		{"unknown currency", func(r *provider.RefundRequest) { r.Currency = "ABC" }, "not an ISO 4217 currency"},
		{"no merchant reference", func(r *provider.RefundRequest) { r.MerchantReference = "" }, "merchant reference"},
	}
	srv := newServer(t, reply{status: http.StatusCreated, body: refundObject(t, nil)})
	c := newClient(t, srv.URL)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := testRefund()
			tc.change(&req)

			res := c.Refund(context.Background(), req)

			require.Equal(t, provider.InvalidRequest, res.Outcome)
			require.False(t, res.Sent)
			require.True(t, res.NotProcessed())
			require.Contains(t, res.Detail, tc.detail)
		})
	}
	require.Zero(t, srv.hits.Load())
}

func TestClient_FindRefundsReturnsTheReferencesRefundsOldestFirst(t *testing.T) {
	req := testRefund()
	queries := make(chan string, 1)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries <- r.URL.Path + "?" + r.URL.RawQuery
		reply{status: http.StatusOK, body: `{"object":"list","data":[` +
			refundObject(t, func(m map[string]any) { m["id"], m["created"] = "re_2", "2026-11-30T10:00:05Z" }) + `,` +
			refundObject(t, func(m map[string]any) {
				m["id"], m["status"], m["failure_reason"] = "re_1", "failed", "expired_or_canceled_card"
			}) + `]}`}.ServeHTTP(w, r)
	}))

	found, err := newClient(t, srv.URL).FindRefunds(context.Background(), req.ChargeID, req.MerchantReference)

	require.NoError(t, err)
	require.Equal(t, "/v1/refunds?merchant_reference="+req.MerchantReference, <-queries)
	require.Len(t, found, 2)
	require.Equal(t, "re_1", found[0].ID)
	require.Equal(t, provider.RefundFailed, found[0].Status)
	require.Equal(t, "expired_or_canceled_card", found[0].FailureReason)
	require.Equal(t, "re_2", found[1].ID)
	require.Equal(t, provider.RefundSucceeded, found[1].Status)
	require.Empty(t, found[1].FailureReason)
}

func TestClient_FindRefundsRefusesAnswersThatAreNotTheReferences(t *testing.T) {
	cases := []struct {
		name, body, detail string
	}{
		{"no data", `{"object":"list"}`, `no "data" array`},
		{"another charge's refund", `{"data":[` + refundObject(t, func(m map[string]any) { m["charge"] = "ch_9" }) + `]}`, `of charge "ch_9"`},
		{"another reference", `{"data":[` + refundObject(t, func(m map[string]any) { m["merchant_reference"] = "x" }) + `]}`, `merchant_reference "x"`},
		{"a refund without a status", `{"data":[` + refundObject(t, func(m map[string]any) { delete(m, "status") }) + `]}`, `unknown status ""`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, reply{status: http.StatusOK, body: tc.body})
			req := testRefund()

			_, err := newClient(t, srv.URL).FindRefunds(context.Background(), req.ChargeID, req.MerchantReference)

			var perr *provider.Error
			require.ErrorAs(t, err, &perr)
			require.Equal(t, provider.ContractViolation, perr.Outcome)
			require.Equal(t, "find refunds", perr.Op)
			require.Contains(t, perr.Detail, tc.detail)
		})
	}
}

func TestClient_FindRefundsNeedsTheChargeAndTheReference(t *testing.T) {
	srv := newServer(t, reply{status: http.StatusOK, body: `{"data":[]}`})
	c := newClient(t, srv.URL)

	for _, args := range [][2]string{{"", "ref"}, {"ch_1", ""}} {
		_, err := c.FindRefunds(context.Background(), args[0], args[1])

		var perr *provider.Error
		require.ErrorAs(t, err, &perr)
		require.Equal(t, provider.InvalidRequest, perr.Outcome)
	}
	require.Zero(t, srv.hits.Load())
}
