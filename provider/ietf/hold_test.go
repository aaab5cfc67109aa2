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

const testCaptureKey = "01a1d96e-0000-7000-8000-9df969c1d378"

func testCapture() provider.CaptureRequest {
	return provider.CaptureRequest{Key: testCaptureKey, ChargeID: "ch_000001", Amount: 50000, Currency: "TRY"}
}

// holdObject is the contract's charge object of testCharge as a hold in
// the given status, with amount_captured captured.
func holdObject(t testing.TB, status string, captured int64) string {
	return chargeObject(t, func(m map[string]any) {
		m["status"], m["amount_captured"], m["capture_before"] = status, captured, "2026-12-07T10:00:00Z"
	})
}

// seenRequest is what a test server received.
type seenRequest struct {
	method, path, key string
	body              map[string]any
}

// recording answers rp and sends what it received on the returned channel.
func recording(t testing.TB, rp reply) (*server, <-chan seenRequest) {
	got := make(chan seenRequest, 1)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		dec := json.NewDecoder(r.Body)
		dec.UseNumber()
		if err := dec.Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- seenRequest{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), body}
		rp.ServeHTTP(w, r)
	}))
	return srv, got
}

func TestClient_HoldIsAChargeWithCaptureFalse(t *testing.T) {
	srv, got := recording(t, reply{status: http.StatusCreated, body: holdObject(t, "authorized", 0)})
	req := testCharge()
	req.Hold = true

	res := newClient(t, srv.URL).Charge(context.Background(), req)

	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	require.Equal(t, provider.StatusAuthorized, res.Charge.Status)
	require.True(t, res.Charge.Held())
	require.Zero(t, res.Charge.AmountCaptured)
	require.Equal(t, time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC), res.Charge.CaptureBefore)
	s := <-got
	require.Equal(t, false, s.body["capture"])
}

func TestClient_ChargeCapturedAtOnceSendsNoCaptureField(t *testing.T) {
	srv, got := recording(t, reply{status: http.StatusCreated, body: chargeObject(t, nil)})

	res := newClient(t, srv.URL).Charge(context.Background(), testCharge())

	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	require.NotContains(t, (<-got).body, "capture", "the body and its fingerprint stay what they were before holds")
}

func TestClient_HoldAnswersThatAreNotAnAuthorization(t *testing.T) {
	hold := testCharge()
	hold.Hold = true
	cases := []struct {
		name   string
		req    provider.ChargeRequest
		body   string
		detail string
	}{
		{"a hold answered captured", hold, chargeObject(t, nil), `status "succeeded", want "authorized"`},
		{"a charge answered authorized", testCharge(), holdObject(t, "authorized", 0), `status "authorized", want "succeeded"`},
		{"an authorization without its expiry", hold, chargeObject(t, func(m map[string]any) { m["status"] = "authorized" }), "without a capture_before"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, reply{status: http.StatusCreated, body: tc.body})

			res := newClient(t, srv.URL).Charge(context.Background(), tc.req)

			require.Equal(t, provider.ContractViolation, res.Outcome)
			require.Contains(t, res.Detail, tc.detail)
		})
	}
}

func TestClient_CaptureAndVoidSendTheContractRequests(t *testing.T) {
	t.Run("capture", func(t *testing.T) {
		srv, got := recording(t, reply{status: http.StatusOK, body: holdObject(t, "succeeded", 50000)})

		res := newClient(t, srv.URL).Capture(context.Background(), testCapture())

		require.Equal(t, provider.Approved, res.Outcome, res.Detail)
		require.Equal(t, int64(50000), res.Charge.AmountCaptured)
		require.Equal(t, seenRequest{http.MethodPost, "/v1/charges/ch_000001/capture", `"` + testCaptureKey + `"`,
			map[string]any{"amount": json.Number("50000"), "currency": "TRY"}}, <-got)
	})
	t.Run("void", func(t *testing.T) {
		srv, got := recording(t, reply{status: http.StatusOK, body: holdObject(t, "voided", 0)})

		res := newClient(t, srv.URL).Void(context.Background(), provider.VoidRequest{Key: testCaptureKey, ChargeID: "ch_000001"})

		require.Equal(t, provider.Approved, res.Outcome, res.Detail)
		require.Equal(t, provider.StatusVoided, res.Charge.Status)
		require.Equal(t, seenRequest{http.MethodPost, "/v1/charges/ch_000001/void", `"` + testCaptureKey + `"`, map[string]any{}}, <-got)
	})
}

// A capture's answers are read by the charges' classifier: the rows below
// are the capture's own objects and refusals, and enough of the shared
// statuses to show that they are shared.
func TestClient_CaptureClassifiesEveryResponse(t *testing.T) {
	refusal := func(code, decline string) string {
		return fmt.Sprintf(`{"type":"about:blank","title":"Forbidden","status":403,"detail":"from the test server","code":%q,"decline_code":%q}`, code, decline)
	}
	type captureCase struct {
		name        string
		reply       reply
		want        provider.Outcome
		wantDecline string
		wantNotProc bool
		wantDetail  string
	}
	cases := []captureCase{
		{name: "200 with the charge captured is approved",
			reply: reply{status: 200, body: holdObject(t, "succeeded", 50000)}, want: provider.Approved},
		{name: "200 replayed is approved",
			reply: reply{status: 200, header: map[string]string{"Idempotent-Replayed": "true"}, body: holdObject(t, "succeeded", 50000)}, want: provider.Approved},
		{name: "200 with another amount captured breaks the contract",
			reply: reply{status: 200, body: holdObject(t, "succeeded", 54890)}, want: provider.ContractViolation, wantDetail: "amount_captured 54890 TRY, want 50000 TRY"},
		{name: "200 with the hold still authorized breaks the contract",
			reply: reply{status: 200, body: holdObject(t, "authorized", 0)}, want: provider.ContractViolation, wantDetail: `status "authorized"`},
		{name: "200 of another charge breaks the contract",
			reply: reply{status: 200, body: strings.Replace(holdObject(t, "succeeded", 50000), "ch_000001", "ch_000002", 1)}, want: provider.ContractViolation, wantDetail: `charge "ch_000002", want "ch_000001"`},
		{name: "200 capturing more than the amount breaks the contract",
			reply: reply{status: 200, body: holdObject(t, "succeeded", 60000)}, want: provider.ContractViolation, wantDetail: "not within the amount"},
	}
	for _, code := range []string{provider.DeclineHoldExpired, provider.DeclineHoldVoided, provider.DeclineHoldCaptured, provider.DeclineAmountTooLarge, provider.DeclineNotAHold} {
		cases = append(cases, captureCase{name: "403 " + code + " is a refusal", reply: reply{status: 403, body: refusal("charge_not_capturable", code)}, want: provider.Declined, wantDecline: code})
	}
	cases = append(cases, []captureCase{
		{name: "403 with an unknown decline code breaks the contract",
			reply: reply{status: 403, body: refusal("charge_not_capturable", "do_not_honor")}, want: provider.ContractViolation, wantDetail: `decline_code "do_not_honor"`},
		{name: "403 of another charge breaks the contract",
			reply: reply{status: 403, body: `{"status":403,"code":"charge_not_capturable","decline_code":"hold_voided","charge_id":"ch_000009"}`}, want: provider.ContractViolation, wantDetail: `charge_id "ch_000009"`},
		{name: "403 naming its charge is a refusal",
			reply: reply{status: 403, body: `{"status":403,"code":"charge_not_capturable","decline_code":"hold_voided","charge_id":"ch_000001"}`}, want: provider.Declined, wantDecline: provider.DeclineHoldVoided},
		{name: "403 with a void's code breaks the contract",
			reply: reply{status: 403, body: refusal("charge_not_voidable", "hold_voided")}, want: provider.ContractViolation, wantDetail: "needs code charge_not_capturable"},
		{name: "402 is no refusal of a capture",
			reply: reply{status: 402, body: refusal("card_declined", "do_not_honor")}, want: provider.ContractViolation},
		{name: "404 is an unknown charge",
			reply: reply{status: 404, body: `{"title":"Not Found","status":404,"code":"not_found"}`}, want: provider.NotFound},
		{name: "409 is in flight",
			reply: reply{status: 409}, want: provider.InFlight},
		{name: "422 is our contract violation",
			reply: reply{status: 422}, want: provider.ContractViolation},
		{name: "429 is rate limited and processed nothing",
			reply: reply{status: 429}, want: provider.RateLimited, wantNotProc: true},
		{name: "503 is unavailable and processed nothing",
			reply: reply{status: 503}, want: provider.Unavailable, wantNotProc: true},
		{name: "504 may hide a capture",
			reply: reply{status: 504}, want: provider.Unavailable},
	}...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.reply)

			res := newClient(t, srv.URL).Capture(context.Background(), testCapture())

			require.Equal(t, tc.want, res.Outcome, res.Detail)
			require.Equal(t, tc.reply.status, res.StatusCode)
			require.True(t, res.Sent)
			require.Equal(t, tc.wantDecline, res.DeclineCode)
			require.Equal(t, tc.wantNotProc, res.NotProcessed())
			require.Contains(t, res.Detail, tc.wantDetail)
			require.Equal(t, tc.want == provider.Approved, res.Charge != nil)
		})
	}
}

func TestClient_VoidClassifiesItsOwnAnswers(t *testing.T) {
	cases := []struct {
		name        string
		reply       reply
		want        provider.Outcome
		wantDecline string
	}{
		{"200 voided is approved", reply{status: 200, body: holdObject(t, "voided", 0)}, provider.Approved, ""},
		{"200 captured breaks the contract", reply{status: 200, body: holdObject(t, "succeeded", 54890)}, provider.ContractViolation, ""},
		{"200 expired breaks the contract", reply{status: 200, body: holdObject(t, "expired", 0)}, provider.ContractViolation, ""},
		{"403 captured already is a refusal", reply{status: 403, body: `{"status":403,"code":"charge_not_voidable","decline_code":"hold_captured"}`}, provider.Declined, provider.DeclineHoldCaptured},
		{"403 with a capture's code breaks the contract", reply{status: 403, body: `{"status":403,"code":"charge_not_capturable","decline_code":"hold_captured"}`}, provider.ContractViolation, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.reply)

			res := newClient(t, srv.URL).Void(context.Background(), provider.VoidRequest{Key: testCaptureKey, ChargeID: "ch_000001"})

			require.Equal(t, tc.want, res.Outcome, res.Detail)
			require.Equal(t, tc.wantDecline, res.DeclineCode)
		})
	}
}

func TestClient_CaptureAndVoidRefuseABadRequestWithoutSending(t *testing.T) {
	srv := newServer(t, reply{status: http.StatusOK, body: holdObject(t, "succeeded", 50000)})
	c := newClient(t, srv.URL)
	captures := map[string]func(*provider.CaptureRequest){
		"no charge":          func(r *provider.CaptureRequest) { r.ChargeID = "" },
		"a charge id a path": func(r *provider.CaptureRequest) { r.ChargeID = "ch_1/../../v1/refunds" },
		"a long charge id":   func(r *provider.CaptureRequest) { r.ChargeID = strings.Repeat("c", 256) },
		"no key":             func(r *provider.CaptureRequest) { r.Key = "" },
		"zero amount":        func(r *provider.CaptureRequest) { r.Amount = 0 },
		"unknown currency":   func(r *provider.CaptureRequest) { r.Currency = "ABC" },
	}
	for name, change := range captures {
		req := testCapture()
		change(&req)
		res := c.Capture(context.Background(), req)
		require.Equal(t, provider.ClassOurBug, res.Class(), name)
		require.False(t, res.Sent, name)
	}
	for _, req := range []provider.VoidRequest{{Key: testCaptureKey}, {Key: testCaptureKey, ChargeID: "ch 1"}, {ChargeID: "ch_1"}} {
		res := c.Void(context.Background(), req)
		require.Equal(t, provider.InvalidRequest, res.Outcome, "%+v", req)
		require.False(t, res.Sent)
	}
	require.Zero(t, srv.hits.Load())
}

func TestClient_GetCharge(t *testing.T) {
	cases := []struct {
		name    string
		id      string
		reply   reply
		want    provider.Outcome
		detail  string
		wantHit bool
	}{
		{name: "the charge", id: "ch_000001", reply: reply{status: 200, body: holdObject(t, "authorized", 0)}, wantHit: true},
		{name: "another charge", id: "ch_000002", reply: reply{status: 200, body: holdObject(t, "authorized", 0)}, want: provider.ContractViolation, detail: `charge "ch_000001", want "ch_000002"`, wantHit: true},
		{name: "unknown", id: "ch_000001", reply: reply{status: 404}, want: provider.NotFound, wantHit: true},
		{name: "an id that is no path segment", id: "ch_1/refunds", want: provider.InvalidRequest, detail: "not sent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			paths := make(chan string, 1)
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				paths <- r.Method + " " + r.URL.Path
				tc.reply.ServeHTTP(w, r)
			}))

			ch, err := newClient(t, srv.URL).GetCharge(context.Background(), tc.id)

			require.Equal(t, tc.wantHit, srv.hits.Load() == 1)
			if tc.wantHit {
				require.Equal(t, "GET /v1/charges/"+tc.id, <-paths)
			}
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, provider.StatusAuthorized, ch.Status)
				require.Equal(t, time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC), ch.CaptureBefore)
				return
			}
			var perr *provider.Error
			require.ErrorAs(t, err, &perr)
			require.Equal(t, "get charge", perr.Op)
			require.Equal(t, tc.want, perr.Outcome)
			require.Contains(t, perr.Detail, tc.detail)
		})
	}
}
