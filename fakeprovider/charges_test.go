package fakeprovider

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
)

func TestPostCharge_NewKeyCreatesCharge(t *testing.T) {
	f := newFixture(t, Config{})

	r := f.do(t, post("key-1", validBody))

	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, contentTypeJSON, r.header.Get("Content-Type"))
	require.Empty(t, r.header.Get("Idempotent-Replayed"))
	want := Charge{
		ID: "ch_000001", Object: "charge", Amount: 54890, Currency: "TRY", Status: ChargeSucceeded,
		Description: "Bookstore order 1001", MerchantReference: "bookstore-1001-a", IdempotencyKey: "key-1",
		Created: f.clock.Now(),
	}
	require.Equal(t, want, decode[Charge](t, r))
	require.Equal(t, []Charge{want}, f.p.Charges())

	byID := f.do(t, get("/v1/charges/ch_000001"))
	require.Equal(t, http.StatusOK, byID.status)
	require.Equal(t, want, decode[Charge](t, byID))
}

func TestPostCharge_ChargeIDsFollowCreationOrder(t *testing.T) {
	f := newFixture(t, Config{})

	for i, want := range []string{"ch_000001", "ch_000002", "ch_000003"} {
		r := f.do(t, post("key-"+want, chargeBody(int64(100+i), "tok_mastercard", "ref-"+want)))
		require.Equal(t, http.StatusCreated, r.status)
		require.Equal(t, want, decode[Charge](t, r).ID)
	}
}

// A fake with an id tag makes ids that no untagged fake makes: two fakes
// side by side, as two real providers, never share a charge or refund id.
func TestPostCharge_IDTagNamesTheProviderInItsIDs(t *testing.T) {
	f := newFixture(t, Config{IDTag: "backup"})

	charge := f.do(t, post("key-1", chargeBody(1000, "tok_visa", "ref-1")))
	require.Equal(t, http.StatusCreated, charge.status)
	require.Equal(t, "ch_backup_000001", decode[Charge](t, charge).ID)
	refund := f.do(t, postRefundCall("refund-1", refundBody("ch_backup_000001", 100, "ref-r1")))
	require.Equal(t, http.StatusCreated, refund.status)
	require.Equal(t, "re_backup_000001", decode[Refund](t, refund).ID)

	for _, bad := range []string{"Backup", "back-up", "a_b", "abcdefghijklmnopq"} {
		_, err := New(Config{IDTag: bad})
		require.ErrorContains(t, err, "want at most 16 lowercase letters and digits", bad)
	}
}

func TestPostCharge_DeclineTokensAnswer402AndCreateAFailedCharge(t *testing.T) {
	tests := []struct {
		source      string
		declineCode string
	}{
		{"tok_chargeDeclined", "do_not_honor"},
		{"tok_chargeDeclinedInsufficientFunds", "insufficient_funds"},
		{"tok_chargeDeclinedIssuerNotAvailable", "issuer_not_available"},
		{"tok_chargeDeclinedProcessingError", "processing_error"},
		{"tok_chargeDeclinedTryAgainLater", "try_again_later"},
	}
	for _, tt := range tests {
		t.Run(tt.source, func(t *testing.T) {
			f := newFixture(t, Config{})

			r := f.do(t, post("key-1", chargeBody(1000, tt.source, "ref-1")))

			p := requireProblem(t, r, http.StatusPaymentRequired, "the card was declined: "+tt.declineCode)
			require.Equal(t, codeCardDeclined, p.Code)
			require.Equal(t, tt.declineCode, p.DeclineCode)
			require.Equal(t, "ch_000001", p.ChargeID)
			charges := f.p.Charges()
			require.Len(t, charges, 1)
			require.Equal(t, ChargeFailed, charges[0].Status)
			require.Equal(t, tt.declineCode, charges[0].DeclineCode)
		})
	}
}

func TestPostCharge_AcceptedKeyForms(t *testing.T) {
	long := strings.Repeat("k", 255)
	tests := []struct {
		name   string
		header string
		key    string
	}{
		{"string", `"01a1d96c-e23d-77bf-801e-9df969c1d378"`, "01a1d96c-e23d-77bf-801e-9df969c1d378"},
		{"bare token", "order-1001:attempt/1", "order-1001:attempt/1"},
		{"string with escapes", `"say \"hi\" \\ there"`, `say "hi" \ there`},
		{"parameters are ignored", `"abc";version=2`, "abc"},
		{"surrounding spaces", `  "abc"  `, "abc"},
		{"255 characters", sfString(long), long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{})

			r := f.do(t, call{method: http.MethodPost, path: "/v1/charges", key: tt.header, body: validBody})

			require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
			require.Equal(t, tt.key, decode[Charge](t, r).IdempotencyKey)
		})
	}
}

func TestPostCharge_InvalidKeyIsRefusedAndNothingStored(t *testing.T) {
	tests := []struct {
		name   string
		header string
		detail string
	}{
		{"missing", "", msgKeyMissing},
		{"blank", "   ", msgKeyEmpty},
		{"empty string", `""`, msgKeyEmpty},
		{"256 characters", sfString(strings.Repeat("k", 256)), msgKeyTooLong},
		{"unquoted uuid is not a token", "01a1d96c-e23d-77bf-801e-9df969c1d378", msgKeyMalformed},
		{"integer", "42", msgKeyMalformed},
		{"boolean", "?1", msgKeyMalformed},
		{"inner list", `("a" "b")`, msgKeyMalformed},
		{"unterminated string", `"abc`, msgKeyMalformed},
		{"two items", `"a", "b"`, msgKeyMalformed},
		{"non-ascii", `"ключ"`, msgKeyMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{})

			r := f.do(t, call{method: http.MethodPost, path: "/v1/charges", key: tt.header, body: validBody})

			p := requireProblem(t, r, http.StatusBadRequest, tt.detail)
			require.Equal(t, codeInvalidKey, p.Code)
			require.Empty(t, f.p.Charges())
		})
	}
}

func TestPostCharge_InvalidBodyIsRefusedNamingTheField(t *testing.T) {
	tests := []struct {
		name        string
		body        string
		contentType string
		param       string
		detail      string
	}{
		{name: "text/plain", body: validBody, contentType: "text/plain", detail: msgContentType},
		{name: "latin1 charset", body: validBody, contentType: "application/json; charset=latin1", detail: msgContentType},
		{name: "not json", body: `amount=1`, detail: "the body must be a JSON object"},
		{name: "array", body: `[1,2]`, detail: "the body must be a JSON object"},
		{name: "truncated", body: `{"amount":1`, detail: "the body is truncated JSON"},
		{name: "trailing data", body: validBody + `{}`, detail: "the body must hold a single JSON object and nothing after it"},
		{name: "case-variant field", body: `{"amount":1,"AMOUNT":100000,"currency":"TRY","source":"tok_visa","merchant_reference":"ref"}`, param: "AMOUNT", detail: `unknown field "AMOUNT"`},
		{name: "duplicate field", body: `{"amount":1,"amount":100000,"currency":"TRY","source":"tok_visa","merchant_reference":"ref"}`, param: "amount", detail: `field "amount" appears more than once`},
		{name: "invalid UTF-8", body: "{\"amount\":1,\"currency\":\"TRY\",\"source\":\"tok_visa\",\"merchant_reference\":\"ref\",\"description\":\"\xff\"}", detail: "the body is not valid UTF-8 at byte 91"},
		{name: "unknown field", body: `{"amount":1,"currency":"TRY","colour":"red"}`, param: "colour", detail: `unknown field "colour"`},
		{name: "amount as string", body: `{"amount":"548.90"}`, param: "amount", detail: `field "amount" must be a JSON integer that fits in 64 bits`},
		{name: "amount fraction", body: `{"amount":548.9}`, param: "amount", detail: `field "amount" must be a JSON integer that fits in 64 bits`},
		{name: "amount too large", body: `{"amount":9223372036854775808}`, param: "amount", detail: `field "amount" must be a JSON integer that fits in 64 bits`},
		{name: "amount zero", body: chargeBody(0, "tok_visa", "ref"), param: "amount", detail: msgAmount},
		{name: "amount negative", body: chargeBody(-5, "tok_visa", "ref"), param: "amount", detail: msgAmount},
		{name: "amount over the maximum", body: chargeBody(chargeonce.DefaultMaxMinor+1, "tok_visa", "ref"), param: "amount", detail: msgAmountTooLarge},
		{name: "amount missing", body: `{"currency":"TRY","source":"tok_visa","merchant_reference":"ref"}`, param: "amount", detail: msgAmount},
		{name: "currency missing", body: `{"amount":1,"source":"tok_visa","merchant_reference":"ref"}`, param: "currency", detail: msgCurrency},
		{name: "currency lower case", body: `{"amount":1,"currency":"try","source":"tok_visa","merchant_reference":"ref"}`, param: "currency", detail: msgCurrency},
		{name: "currency unknown", body: `{"amount":1,"currency":"ZZZ","source":"tok_visa","merchant_reference":"ref"}`, param: "currency", detail: msgCurrency},
		{name: "currency number", body: `{"amount":1,"currency":949}`, param: "currency", detail: `field "currency" must be a JSON string`},
		{name: "source missing", body: `{"amount":1,"currency":"TRY","merchant_reference":"ref"}`, param: "source", detail: msgSourceMissing},
		{name: "source too long", body: chargeBody(1, "tok_"+strings.Repeat("x", 252), "ref"), param: "source", detail: msgSourceTooLong},
		{name: "reference missing", body: `{"amount":1,"currency":"TRY","source":"tok_visa"}`, param: "merchant_reference", detail: msgReferenceMissing},
		{name: "reference too long", body: chargeBody(1, "tok_visa", strings.Repeat("r", 256)), param: "merchant_reference", detail: msgReferenceTooLong},
		{name: "description too long", body: `{"amount":1,"currency":"TRY","source":"tok_visa","merchant_reference":"ref","description":"` + strings.Repeat("é", 1001) + `"}`, param: "description", detail: msgDescriptionLong},
		{name: "body too large", body: `{"description":"` + strings.Repeat("x", maxBodyBytes) + `"}`, detail: msgBodyTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{})

			r := f.do(t, call{method: http.MethodPost, path: "/v1/charges", key: sfString("key-1"), body: tt.body, contentType: tt.contentType})

			p := requireProblem(t, r, http.StatusBadRequest, tt.detail)
			require.Equal(t, codeInvalidRequest, p.Code)
			require.Equal(t, tt.param, p.Param)
			require.Empty(t, f.p.Charges())
			// The key was not stored either: a valid body under it is a new charge.
			require.Equal(t, http.StatusCreated, f.do(t, post("key-1", validBody)).status)
		})
	}
}

func TestPostCharge_RefusedSourceIs402InvalidSourceAndStoresNothing(t *testing.T) {
	for _, source := range []string{"4242424242424242", "visa", "tok_"} {
		t.Run(source, func(t *testing.T) {
			f := newFixture(t, Config{})

			r := f.do(t, post("key-1", chargeBody(1, source, "ref")))

			p := requireProblem(t, r, http.StatusPaymentRequired, msgSourceNotToken)
			require.Equal(t, codeSourceRefused, p.Code)
			require.Equal(t, "source", p.Param)
			require.Empty(t, p.ChargeID, "a refused source makes no charge")
			require.Empty(t, f.p.Charges())
			require.Equal(t, outcomeSourceRefused, f.p.Requests()[0].Outcome)
			// The key was not stored: a valid body under it is a new charge.
			require.Equal(t, http.StatusCreated, f.do(t, post("key-1", validBody)).status)
		})
	}
}

func TestPostCharge_MissingContentTypeIsRefused(t *testing.T) {
	f := newFixture(t, Config{})

	r := f.do(t, call{method: http.MethodPost, path: "/v1/charges", key: sfString("key-1"), body: validBody, noContentType: true})

	requireProblem(t, r, http.StatusBadRequest, msgContentType)
	require.Empty(t, f.p.Charges())
}

func TestPostCharge_SameKeyWithAnotherBodyIs422AndChangesNothing(t *testing.T) {
	f := newFixture(t, Config{})
	first := f.do(t, post("key-1", chargeBody(1000, "tok_visa", "ref-1")))
	require.Equal(t, http.StatusCreated, first.status)

	r := f.do(t, post("key-1", chargeBody(2000, "tok_visa", "ref-1")))

	p := requireProblem(t, r, http.StatusUnprocessableEntity, msgKeyReused)
	require.Equal(t, codeKeyReused, p.Code)
	require.Len(t, f.p.Charges(), 1)
	require.Equal(t, first.body, f.do(t, post("key-1", chargeBody(1000, "tok_visa", "ref-1"))).body)
}

func TestPostCharge_FinishedKeyReplaysTheSameBytes(t *testing.T) {
	tests := []struct {
		name   string
		source string
		status int
	}{
		{"success", "tok_visa", http.StatusCreated},
		{"decline", "tok_chargeDeclinedInsufficientFunds", http.StatusPaymentRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{})
			body := chargeBody(1000, tt.source, "ref-1")
			first := f.do(t, post("key-1", body))
			require.Equal(t, tt.status, first.status)
			// A replay that re-rendered the charge would show the later time.
			f.clock.Advance(time.Minute)

			replay := f.do(t, post("key-1", body))

			require.Equal(t, tt.status, replay.status)
			require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
			require.Equal(t, first.header.Get("Content-Type"), replay.header.Get("Content-Type"))
			require.Equal(t, first.body, replay.body)
			require.Len(t, f.p.Charges(), 1)
		})
	}
}

func TestPostCharge_ReorderedKeysHaveTheSameFingerprint(t *testing.T) {
	f := newFixture(t, Config{})
	first := f.do(t, post("key-1", `{"amount":1000,"currency":"TRY","source":"tok_visa","merchant_reference":"ref-1"}`))
	require.Equal(t, http.StatusCreated, first.status)

	replay := f.do(t, post("key-1", "{\n  \"merchant_reference\": \"ref-1\",\n  \"source\": \"tok_visa\",\n  \"currency\": \"TRY\",\n  \"amount\": 1000\n}"))

	require.Equal(t, http.StatusCreated, replay.status, "body: %s", replay.body)
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.body, replay.body)
	records := f.p.Requests()
	require.Len(t, records, 2)
	require.Equal(t, records[0].Fingerprint, records[1].Fingerprint)
}

func TestPostCharge_KeyIsForgottenAfterRetention(t *testing.T) {
	f := newFixture(t, Config{Retention: time.Hour})
	require.Equal(t, http.StatusCreated, f.do(t, post("key-1", chargeBody(1000, "tok_visa", "ref-1"))).status)

	f.clock.Advance(time.Hour - time.Second)
	still := f.do(t, post("key-1", chargeBody(2000, "tok_visa", "ref-1")))
	requireProblem(t, still, http.StatusUnprocessableEntity, msgKeyReused)

	f.clock.Advance(time.Second)
	again := f.do(t, post("key-1", chargeBody(2000, "tok_visa", "ref-1")))
	require.Equal(t, http.StatusCreated, again.status, "body: %s", again.body)
	require.Empty(t, again.header.Get("Idempotent-Replayed"))
	require.Equal(t, "ch_000002", decode[Charge](t, again).ID)
	require.Len(t, f.p.Charges(), 2)
}

func TestPostCharge_ClientThatGivesUpDoesNotCancelTheCharge(t *testing.T) {
	f := newFixture(t, Config{Mode: Mode{Name: ModeSlow, Delay: 5 * time.Second}})
	ctx, cancel := context.WithCancel(context.Background())
	sent := make(chan error, 1)
	go func() {
		_, err := f.send(ctx, f.client, post("key-1", validBody))
		sent <- err
	}()
	require.Equal(t, 5*time.Second, f.gate.awaitWait(t))

	cancel()
	require.ErrorIs(t, <-sent, context.Canceled)
	require.Eventually(t, func() bool { return len(f.p.Requests()) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, outcomeClientGone, f.p.Requests()[0].Outcome)
	require.Empty(t, f.p.Charges())
	f.gate.Open()
	require.NoError(t, f.p.Wait(context.Background()))

	require.Len(t, f.p.Charges(), 1)
	replay := f.do(t, post("key-1", validBody))
	require.Equal(t, http.StatusCreated, replay.status)
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	require.Equal(t, "ch_000001", decode[Charge](t, replay).ID)
}

func TestListCharges_ByMerchantReferenceOldestFirst(t *testing.T) {
	f := newFixture(t, Config{})
	f.do(t, post("key-1", chargeBody(1000, "tok_chargeDeclined", "ref-a")))
	f.clock.Advance(time.Second)
	f.do(t, post("key-2", chargeBody(1000, "tok_visa", "ref-b")))
	f.clock.Advance(time.Second)
	f.do(t, post("key-3", chargeBody(1000, "tok_visa", "ref-a")))

	r := f.do(t, get("/v1/charges?merchant_reference=ref-a"))

	require.Equal(t, http.StatusOK, r.status)
	list := decode[chargeList](t, r)
	require.Len(t, list.Data, 2)
	require.Equal(t, []string{"ch_000001", "ch_000003"}, []string{list.Data[0].ID, list.Data[1].ID})
	require.Equal(t, []ChargeStatus{ChargeFailed, ChargeSucceeded}, []ChargeStatus{list.Data[0].Status, list.Data[1].Status})
}

func TestListCharges_UnknownReferenceIsAnEmptyList(t *testing.T) {
	f := newFixture(t, Config{})

	r := f.do(t, get("/v1/charges?merchant_reference=nobody"))

	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"data":[]}`, string(r.body))
}

func TestListCharges_ReferenceParameterIsRequiredOnce(t *testing.T) {
	for _, query := range []string{"", "?merchant_reference=", "?merchant_reference=a&merchant_reference=b", "?merchant_reference=%zz"} {
		t.Run(query, func(t *testing.T) {
			f := newFixture(t, Config{})

			r := f.do(t, get("/v1/charges"+query))

			p := requireProblem(t, r, http.StatusBadRequest, msgReferenceParam)
			require.Equal(t, "merchant_reference", p.Param)
		})
	}
}

func TestGetCharge_UnknownIDIs404(t *testing.T) {
	f := newFixture(t, Config{})

	r := f.do(t, get("/v1/charges/ch_000001"))

	p := requireProblem(t, r, http.StatusNotFound, msgChargeNotFound)
	require.Equal(t, codeNotFound, p.Code)
}

func TestIdempotency_PublishesTheLimits(t *testing.T) {
	tests := []struct {
		name       string
		retention  time.Duration
		lookupRate float64
		holdWindow time.Duration
		want       string
	}{
		{"defaults", 0, 0, 0, `{"key_retention_seconds":86400,"lookups_per_second":50,"hold_window_seconds":604800}`},
		{"whole values", 2 * time.Hour, 7, time.Hour, `{"key_retention_seconds":7200,"lookups_per_second":7,"hold_window_seconds":3600}`},
		{"fractions", 1500 * time.Millisecond, 0.5, 2500 * time.Millisecond, `{"key_retention_seconds":1,"lookups_per_second":0.5,"hold_window_seconds":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{Retention: tt.retention, LookupRate: tt.lookupRate, HoldWindow: tt.holdWindow})

			r := f.do(t, get("/v1/idempotency"))

			require.Equal(t, http.StatusOK, r.status)
			require.JSONEq(t, tt.want, string(r.body))
		})
	}
}

func TestListCharges_PastTheLookupRateIs429UntilTheBucketRefills(t *testing.T) {
	f := newFixture(t, Config{LookupRate: 3})
	lookup := get("/v1/charges?merchant_reference=ref-1")
	for range 3 {
		require.Equal(t, http.StatusOK, f.do(t, lookup).status, "a second's worth of lookups at once")
	}

	r := f.do(t, lookup)

	p := requireProblem(t, r, http.StatusTooManyRequests, msgLookupLimited)
	require.Equal(t, codeRateLimited, p.Code)
	require.Equal(t, "1", r.header.Get("Retry-After"))
	// Only lookups by reference are paced: charges, lookups by id and the
	// published limits still answer.
	require.Equal(t, http.StatusCreated, f.do(t, post("key-1", chargeBody(1000, "tok_visa", "ref-1"))).status)
	require.Equal(t, http.StatusOK, f.do(t, get("/v1/charges/ch_000001")).status)
	require.Equal(t, http.StatusOK, f.do(t, get("/v1/idempotency")).status)
	// The breach shows in the request log.
	var limited []RequestRecord
	for _, rec := range f.p.Requests() {
		if rec.Status == http.StatusTooManyRequests {
			limited = append(limited, rec)
		}
	}
	require.Len(t, limited, 1)
	require.Equal(t, RequestRecord{Time: limited[0].Time, Method: http.MethodGet, Path: "/v1/charges", Status: http.StatusTooManyRequests,
		DurationMS: limited[0].DurationMS, Outcome: outcomeLookupLimited, Detail: msgLookupLimited}, limited[0])

	f.clock.Advance(time.Second / 3)

	require.Equal(t, http.StatusOK, f.do(t, lookup).status, "a third of a second brings one lookup back")
	require.Equal(t, http.StatusTooManyRequests, f.do(t, lookup).status)
}

func TestListCharges_RetryAfterIsTheTimeOneLookupTakesToComeBack(t *testing.T) {
	tests := []struct {
		rate float64
		// burst is one second's worth, and at least one.
		burst int
		want  string
	}{
		{3, 3, "1"},
		{1, 1, "1"},
		{0.25, 1, "4"},
		{0.3, 1, "4"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.rate), func(t *testing.T) {
			f := newFixture(t, Config{LookupRate: tt.rate})
			lookup := get("/v1/charges?merchant_reference=ref-1")
			for range tt.burst {
				require.Equal(t, http.StatusOK, f.do(t, lookup).status)
			}

			r := f.do(t, lookup)

			require.Equal(t, http.StatusTooManyRequests, r.status)
			require.Equal(t, tt.want, r.header.Get("Retry-After"))
		})
	}
}

func TestChargeRequests_AreThePostsOnly(t *testing.T) {
	f := newFixture(t, Config{})
	require.Equal(t, http.StatusCreated, f.do(t, post("key-1", chargeBody(1000, "tok_visa", "ref-1"))).status)
	require.Equal(t, http.StatusOK, f.do(t, get("/v1/charges?merchant_reference=ref-1")).status)
	require.Equal(t, http.StatusCreated, f.do(t, post("key-2", chargeBody(1000, "tok_visa", "ref-2"))).status)

	require.Len(t, f.p.Requests(), 3)
	posts := f.p.ChargeRequests()
	require.Len(t, posts, 2)
	require.Equal(t, []string{"key-1", "key-2"}, []string{posts[0].Key, posts[1].Key})
}
