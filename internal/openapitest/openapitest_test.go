package openapitest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/openapitest"
)

// recorder is a testing.TB that keeps the failures instead of failing, so
// that a test can see what the checks report.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) reported() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errors, "\n")
}

// answer is a handler that answers every request with one status, content
// type and body, and its header.
func answer(status int, contentType, body string, header ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
}

const key = "Bearer ck_3f9c0b8e1d2a4c57_" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

type exchange struct {
	name          string
	method, path  string
	header        []string
	body          string
	responsesOnly bool
	handler       http.Handler
	// want is a piece of the report, empty when none is wanted.
	want string
}

var checkoutAnswer = `{"orderId":1001,"status":"paid","total":"548.90","currency":"TRY","providerPaymentId":"ch_000001","idempotencyKey":"01a1d96c-e23d-77bf-801e-9df969c1d378"}`

var exchanges = []exchange{
	{name: "an answer as the document says", method: "GET", path: "/healthz",
		handler: answer(200, "application/json", `{"status":"ok"}`)},
	{name: "a field the document lacks", method: "GET", path: "/healthz",
		handler: answer(200, "application/json", `{"status":"ok","uptime":3}`), want: "uptime"},
	{name: "a required field missing", method: "GET", path: "/healthz",
		handler: answer(200, "application/json", `{}`), want: "status"},
	{name: "a field of the wrong type", method: "POST", path: "/api/orders/1001/checkout",
		header: []string{"Authorization", key, "Content-Type", "application/json"}, body: `{"card_token":"tok_visa"}`,
		handler: answer(200, "application/json", strings.Replace(checkoutAnswer, `"orderId":1001`, `"orderId":"1001"`, 1)), want: "orderId"},
	{name: "an amount in another form", method: "POST", path: "/api/orders/1001/checkout",
		header: []string{"Authorization", key, "Content-Type", "application/json"}, body: `{"card_token":"tok_visa"}`,
		handler: answer(200, "application/json", strings.Replace(checkoutAnswer, `"548.90"`, `"+548.90"`, 1)), want: "total"},
	{name: "a checkout that pays", method: "POST", path: "/api/orders/1001/checkout",
		header: []string{"Authorization", key, "Content-Type", "application/json"}, body: `{"card_token":"tok_visa"}`,
		handler: answer(200, "application/json", checkoutAnswer)},
	{name: "a status the operation does not answer", method: "GET", path: "/healthz",
		handler: answer(418, "application/json", `{"status":"ok"}`), want: "418"},
	{name: "a required header missing", method: "POST", path: "/api/orders",
		header: []string{"Authorization", key, "Content-Type", "application/json"}, body: `{"amount":"548.90","currency":"TRY"}`,
		handler: answer(201, "application/json", `{"id":1001,"status":"placed","total":"548.90","currency":"TRY","description":"","providerPaymentId":null,"createdAt":"2026-11-30T10:00:00Z","updatedAt":"2026-11-30T10:00:00Z","attempts":[],"refunds":[]}`),
		want:    "Location"},
	{name: "a problem of an unknown type", method: "GET", path: "/api/orders/1001",
		header:  []string{"Authorization", key},
		handler: answer(404, "application/problem+json", `{"type":"urn:chargeonce:problem:gone-fishing","title":"t","status":404}`), want: "type"},
	{name: "a request the document forbids", method: "POST", path: "/api/orders/1001/checkout",
		header: []string{"Authorization", key, "Content-Type", "application/json"}, body: `{"card_token":"tok visa"}`,
		handler: answer(400, "application/problem+json", `{"type":"urn:chargeonce:problem:invalid-request","title":"The request is not valid.","status":400}`), want: "card_token"},
	{name: "the same request marked responses-only", method: "POST", path: "/api/orders/1001/checkout", responsesOnly: true,
		header: []string{"Authorization", key, "Content-Type", "application/json"}, body: `{"card_token":"tok visa"}`,
		handler: answer(400, "application/problem+json", `{"type":"urn:chargeonce:problem:invalid-request","title":"The request is not valid.","status":400}`)},
	{name: "responses-only still checks the answer", method: "POST", path: "/api/orders/1001/checkout", responsesOnly: true,
		header: []string{"Authorization", key, "Content-Type", "application/json"}, body: `{"card_token":"tok visa"}`,
		handler: answer(400, "application/problem+json", `{"type":"urn:chargeonce:problem:invalid-request","title":"The request is not valid.","status":400,"hint":"x"}`), want: "hint"},
	{name: "an unknown path answered 404", method: "GET", path: "/api/nothing", responsesOnly: true,
		header:  []string{"Authorization", key},
		handler: answer(404, "application/problem+json", `{"type":"urn:chargeonce:problem:not-found","title":"The resource does not exist.","status":404,"detail":"no resource at /api/nothing"}`)},
	{name: "an unknown path not marked", method: "GET", path: "/api/nothing",
		header:  []string{"Authorization", key},
		handler: answer(404, "application/problem+json", `{"type":"urn:chargeonce:problem:not-found","title":"The resource does not exist.","status":404}`), want: "no such operation"},
	{name: "an unknown path answered 200", method: "GET", path: "/api/nothing", responsesOnly: true,
		handler: answer(200, "application/json", `{}`), want: "status 200"},
	{name: "a wrong method answered 405 without Allow", method: "DELETE", path: "/api/orders/1001", responsesOnly: true,
		handler: answer(405, "application/problem+json", `{"type":"urn:chargeonce:problem:method-not-allowed","title":"The method is not allowed on this resource.","status":405}`), want: "Allow"},
	{name: "a wrong method answered 405 with Allow", method: "DELETE", path: "/api/orders/1001", responsesOnly: true,
		handler: answer(405, "application/problem+json", `{"type":"urn:chargeonce:problem:method-not-allowed","title":"The method is not allowed on this resource.","status":405}`, "Allow", "GET, HEAD")},
}

// TestHandlerAndTransport_ReportWhatTheDocumentDoesNotAllow shows that
// each check can fail: an answer with a field the document lacks, without
// one it requires, or with a value of the wrong type or form is reported,
// through the handler and through the transport alike, and an exchange as
// the document says is not.
func TestHandlerAndTransport_ReportWhatTheDocumentDoesNotAllow(t *testing.T) {
	for _, x := range exchanges {
		for _, via := range []string{"Handler", "Transport"} {
			t.Run(x.name+" via "+via, func(t *testing.T) {
				rec := &recorder{TB: t}
				var served string
				inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					// The mark never reaches the API.
					require.Empty(t, r.Header.Get(openapitest.ResponsesOnlyHeader))
					b, _ := io.ReadAll(r.Body)
					served = string(b)
					x.handler.ServeHTTP(w, r)
				})
				client := http.DefaultClient
				var srv *httptest.Server
				if via == "Handler" {
					srv = httptest.NewServer(openapitest.Handler(rec, inner))
				} else {
					srv = httptest.NewServer(inner)
					client = &http.Client{Transport: openapitest.Transport(rec, nil)}
				}
				defer srv.Close()
				req, err := http.NewRequest(x.method, srv.URL+x.path, strings.NewReader(x.body))
				require.NoError(t, err)
				for i := 0; i+1 < len(x.header); i += 2 {
					req.Header.Set(x.header[i], x.header[i+1])
				}
				if x.responsesOnly {
					openapitest.ResponsesOnly(req)
				}
				resp, err := client.Do(req)
				require.NoError(t, err)
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())

				// The exchange itself is untouched.
				require.Equal(t, x.body, served)
				want := httptest.NewRecorder()
				x.handler.ServeHTTP(want, httptest.NewRequest(x.method, x.path, nil))
				require.Equal(t, want.Code, resp.StatusCode)
				require.Equal(t, want.Body.String(), string(body))

				got := rec.reported()
				if x.want == "" {
					require.Empty(t, got)
				} else {
					require.Contains(t, got, x.want)
				}
			})
		}
	}
}
