package fakeprovider

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dunglas/httpsfv"
	"github.com/stretchr/testify/require"

	"chargeonce/internal/idemkey"
)

// postCharge sends one charge request straight to the handler. The fuzz
// targets use it instead of a server, to try header values no HTTP client
// would send.
func postCharge(t *testing.T, p *Provider, key []string, body string) *httptest.ResponseRecorder {
	t.Helper()
	return postTo(t, p, "/v1/charges", key, body)
}

// postTo sends one JSON request to path straight to the handler.
func postTo(t *testing.T, p *Provider, path string, key []string, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != nil {
		req.Header["Idempotency-Key"] = key
	}
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, req)
	return rec
}

func requireProblemRecorded(t *testing.T, rec *httptest.ResponseRecorder, code problemCode) {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	require.Equal(t, contentTypeProblem, rec.Header().Get("Content-Type"))
	var p problem
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
	require.Equal(t, code, p.Code)
	require.NotEmpty(t, p.Detail)
}

func FuzzParseKey(f *testing.F) {
	for _, seed := range []string{
		`"01a1d96c-e23d-77bf-801e-9df969c1d378"`, "order-1001", `"a";v=1`, `"esc \" \\"`,
		"", " ", `""`, "42", "?0", `("a")`, `"unterminated`, `"a", "b"`, "01a1d96c", `"` + strings.Repeat("k", 256) + `"`,
		"\x00", `"tab\there"`, ":Ynl0ZXM=:", "@1700000000", `%"display"`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		p, err := New(Config{})
		require.NoError(t, err)

		rec := postCharge(t, p, []string{header}, validBody)

		key, prob := parseKey([]string{header})
		if prob != nil {
			requireProblemRecorded(t, rec, codeInvalidKey)
			require.Empty(t, p.Charges())
			return
		}
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		require.NotEmpty(t, key)
		require.LessOrEqual(t, len(key), idemkey.MaxLength)
		require.Equal(t, key, p.Charges()[0].IdempotencyKey)
		// The key survives a round trip through its canonical String form.
		canonical, err := httpsfv.Marshal(httpsfv.NewItem(key))
		require.NoError(t, err)
		again, prob := parseKey([]string{canonical})
		require.Nil(t, prob)
		require.Equal(t, key, again)
	})
}

func FuzzDecodeCharge(f *testing.F) {
	for _, seed := range []string{
		validBody,
		`{"amount":1,"currency":"JPY","source":"tok_chargeDeclined","merchant_reference":"r"}`,
		` {"merchant_reference":"r","source":"tok_x","currency":"KWD","amount":1} `,
		"", "null", "[]", `{"amount":0}`, `{"amount":-1,"currency":"TRY"}`, `{"amount":1e3}`, `{"amount":"1"}`,
		`{"amount":1,"currency":"try","source":"tok_visa","merchant_reference":"r"}`,
		`{"amount":1,"currency":"TRY","source":"visa","merchant_reference":"r"}`,
		`{"amount":1,"currency":"TRY","source":"tok_visa"}`, `{"x":1}`, validBody + "x", `{"amount":1,"amount":2}`,
		"{\"description\":\"\xff\"}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		p, err := New(Config{})
		require.NoError(t, err)

		rec := postCharge(t, p, []string{`"fuzz-key"`}, body)

		var answer problem
		_ = json.Unmarshal(rec.Body.Bytes(), &answer)
		switch {
		case rec.Code == http.StatusPaymentRequired && answer.Code == codeSourceRefused:
			// The customer's card, refused before anything is processed.
			require.Empty(t, p.Charges())
		case rec.Code == http.StatusCreated, rec.Code == http.StatusPaymentRequired:
			charges := p.Charges()
			require.Len(t, charges, 1)
			require.Positive(t, charges[0].Amount)
			require.True(t, isISO4217(charges[0].Currency))
			require.Equal(t, "fuzz-key", charges[0].IdempotencyKey)
			replay := postCharge(t, p, []string{`"fuzz-key"`}, body)
			require.Equal(t, rec.Code, replay.Code)
			require.Equal(t, "true", replay.Header().Get("Idempotent-Replayed"))
			require.Equal(t, rec.Body.Bytes(), replay.Body.Bytes())
		default:
			requireProblemRecorded(t, rec, codeInvalidRequest)
			require.Empty(t, p.Charges())
		}
	})
}

func FuzzDecodeRefund(f *testing.F) {
	for _, seed := range []string{
		`{"charge":"ch_000001","amount":500,"currency":"TRY","merchant_reference":"r"}`,
		`{"charge":"ch_000001","amount":1001,"currency":"TRY","merchant_reference":"r","reason":"x"}`,
		`{"charge":"ch_000009","amount":1,"currency":"TRY","merchant_reference":"r"}`,
		`{"charge":"ch_000001","amount":1,"currency":"EUR","merchant_reference":"r"}`,
		`{"charge":"ch_000001","amount":"5.00","currency":"TRY","merchant_reference":"r"}`,
		"", "null", "[]", `{"charge":""}`, `{"charge":"ch_000001","amount":-1}`, `{"amount":1e3}`,
		`{"charge":"ch_000001","charge":"ch_000002"}`, "{\"reason\":\"\xff\"}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		p, err := New(Config{})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, postCharge(t, p, []string{`"charge-key"`}, validBody).Code)

		rec := postTo(t, p, refundPath, []string{`"fuzz-key"`}, body)

		switch rec.Code {
		case http.StatusCreated, http.StatusPaymentRequired:
			refunds := p.Refunds()
			require.Len(t, refunds, 1)
			require.Positive(t, refunds[0].Amount)
			require.Equal(t, "fuzz-key", refunds[0].IdempotencyKey)
			if rec.Code == http.StatusCreated {
				require.LessOrEqual(t, refunds[0].Amount, p.Charges()[0].Amount, "no refund beyond its charge")
			}
			replay := postTo(t, p, refundPath, []string{`"fuzz-key"`}, body)
			require.Equal(t, "true", replay.Header().Get("Idempotent-Replayed"))
			require.Equal(t, rec.Body.Bytes(), replay.Body.Bytes())
		default:
			requireProblemRecorded(t, rec, codeInvalidRequest)
			require.Empty(t, p.Refunds())
		}
	})
}

func FuzzDecodeCapture(f *testing.F) {
	for _, seed := range []string{
		`{"amount":500,"currency":"TRY"}`, `{"amount":54890,"currency":"TRY"}`, `{"amount":54891,"currency":"TRY"}`,
		`{"amount":1,"currency":"EUR"}`, `{"amount":"5.00","currency":"TRY"}`, `{"amount":1,"currency":"TRY","x":1}`,
		"", "null", "[]", "{}", `{"amount":-1,"currency":"TRY"}`, `{"amount":1e3}`, `{"amount":1,"amount":2}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		p, err := New(Config{})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, postCharge(t, p, []string{`"charge-key"`}, strings.Replace(validBody, `"source"`, `"capture":false,"source"`, 1)).Code)

		rec := postTo(t, p, "/v1/charges/ch_000001/capture", []string{`"fuzz-key"`}, body)

		c := p.Charges()[0]
		switch rec.Code {
		case http.StatusOK:
			require.Equal(t, ChargeSucceeded, c.Status)
			require.Positive(t, *c.AmountCaptured)
			require.LessOrEqual(t, *c.AmountCaptured, c.Amount, "no capture beyond the authorization")
		case http.StatusForbidden:
			require.Equal(t, ChargeAuthorized, c.Status)
		default:
			requireProblemRecorded(t, rec, codeInvalidRequest)
			require.Equal(t, ChargeAuthorized, c.Status)
			require.Zero(t, *c.AmountCaptured)
		}
		if rec.Code != http.StatusBadRequest {
			replay := postTo(t, p, "/v1/charges/ch_000001/capture", []string{`"fuzz-key"`}, body)
			require.Equal(t, "true", replay.Header().Get("Idempotent-Replayed"))
			require.Equal(t, rec.Body.Bytes(), replay.Body.Bytes())
		}
	})
}
